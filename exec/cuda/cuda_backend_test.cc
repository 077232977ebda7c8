// Every Backend method on CudaBackend against the CPU reference (CpuBackend)
// on the same seeded random inputs, as ggml's test-backend-ops. Each case
// uploads the same initial contents of every buffer (outputs and gradients
// included, so "backward ADDS" is checked), runs the method on both
// backends, downloads every buffer and expects
//   |cuda - cpu| <= atol + rtol * |cpu|
// per element (llm.c style), printing the first mismatches. Skips when no
// GPU is visible.
#include "exec/cuda/cuda_backend.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/kernels/cpu_backend.h"

namespace dtsim::exec {
namespace {

using Buffers = std::vector<std::vector<float>>;
// Runs one method on `b`; ptr[i] is buffer i on that backend.
using Op = std::function<void(Backend& b, const std::vector<float*>& ptr)>;

// Per-op tolerance: |cuda - cpu| <= atol + rtol * |cpu|.
struct Tolerance {
  float atol = 0.0f;
  float rtol = 0.0f;
};
// Bit-identical: copies, permutations, selections, the dropout mask.
constexpr Tolerance kExact{0.0f, 0.0f};
// One or two roundings apart (nvcc contracts a * b + c to an FMA).
constexpr Tolerance kRounding{1e-6f, 1e-6f};
// Transcendentals (expf, tanhf, powf differ by a few ulp) and short sums.
constexpr Tolerance kTranscendental{1e-5f, 1e-5f};
// Reductions whose order differs (block trees vs sequential loops).
constexpr Tolerance kReduction{1e-4f, 1e-4f};

// Reduction tolerance for GEMM-like sums over `k` terms of size ~1.
Tolerance SumOver(std::int64_t k) { return {1e-5f + 1e-6f * static_cast<float>(k), 1e-4f}; }

// Copies the initial contents onto `b`, runs `op`, returns every buffer.
Buffers RunOn(Backend& b, const Buffers& initial, const Op& op) {
  std::vector<float*> ptr;
  for (const auto& host : initial) {
    float* p = b.Allocate(static_cast<std::int64_t>(host.size()));
    b.Upload(p, host.data(), static_cast<std::int64_t>(host.size()));
    ptr.push_back(p);
  }
  op(b, ptr);
  Buffers out(initial.size());
  for (std::size_t i = 0; i < initial.size(); ++i) {
    out[i].resize(initial[i].size());
    b.Download(out[i].data(), ptr[i], static_cast<std::int64_t>(out[i].size()));
    b.Free(ptr[i]);
  }
  return out;
}

class CudaVsCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (CudaBackend::VisibleDevices(&why) == 0) GTEST_SKIP() << why;
    cuda_ = std::make_unique<CudaBackend>(0);
  }

  // `count` values uniform in [lo, hi) from the fixture's seeded generator.
  std::vector<float> Random(std::int64_t count, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> uniform(lo, hi);
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) x = uniform(rng_);
    return v;
  }
  // `count` integer-valued floats in [0, classes).
  std::vector<float> Labels(std::int64_t count, std::int64_t classes) {
    std::uniform_int_distribution<std::int64_t> uniform(0, classes - 1);
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) x = static_cast<float>(uniform(rng_));
    return v;
  }
  // Small integers in [-levels, levels] (divided by 4): many ties, for the
  // "first maximum" rule of max pooling.
  std::vector<float> Coarse(std::int64_t count, int levels) {
    std::uniform_int_distribution<int> uniform(-levels, levels);
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) x = static_cast<float>(uniform(rng_)) / 4.0f;
    return v;
  }

  // Runs `op` on both backends from `initial`; every buffer must agree.
  void Check(const std::string& what, const Buffers& initial, const Op& op, Tolerance tol) {
    const Buffers ref = RunOn(cpu_, initial, op);
    const Buffers got = RunOn(*cuda_, initial, op);
    for (std::size_t b = 0; b < ref.size(); ++b) {
      int mismatches = 0;
      for (std::size_t i = 0; i < ref[b].size(); ++i) {
        const float r = ref[b][i], g = got[b][i];
        if (std::isnan(r) && std::isnan(g)) continue;
        const bool ok = std::abs(g - r) <= tol.atol + tol.rtol * std::abs(r);
        if (!ok && ++mismatches <= 5)
          ADD_FAILURE() << what << ": buffer " << b << "[" << i << "]: cpu " << r << ", cuda "
                        << g << " (|diff| " << std::abs(g - r) << ")";
      }
      EXPECT_EQ(mismatches, 0) << what << ": buffer " << b << " of " << ref[b].size();
    }
  }

  CpuBackend cpu_;
  std::unique_ptr<CudaBackend> cuda_;
  std::mt19937 rng_{20240531};
};

// ---- memory

TEST_F(CudaVsCpu, NameNamesTheDevice) {
  EXPECT_EQ(cuda_->Name().rfind("cuda:0 (", 0), 0u) << cuda_->Name();
}

// Marks are events on the stream: a GEMM between two marks takes the
// device time the marks measure, and ClearMarks reuses the pool.
TEST_F(CudaVsCpu, MarksTimeTheDeviceWork) {
  EXPECT_TRUE(cuda_->Asynchronous());
  const std::int64_t n = 1024;
  float* a = cuda_->Allocate(n * n);
  float* c = cuda_->Allocate(n * n);
  cuda_->Fill(a, n * n, 0.5f);
  for (int round = 0; round < 2; ++round) {
    const int m0 = cuda_->Mark();
    for (int i = 0; i < 4; ++i) cuda_->Gemm(false, false, n, n, n, 1.0f, a, a, 0.0f, c);
    const int m1 = cuda_->Mark();
    cuda_->Synchronize();
    EXPECT_EQ(m0, 0) << "ClearMarks starts the indices again";
    const double seconds = cuda_->MarkSeconds(m0, m1);
    // 4 x 2 n^3 = 8.6 GFLOP: above 0, and below 1 s on any GPU of the last
    // decade (K80: 4 TFLOP/s fp32 peak per GPU, datasheet).
    EXPECT_GT(seconds, 0.0);
    EXPECT_LT(seconds, 1.0);
    EXPECT_NEAR(cuda_->MarkSeconds(m1, m0), -seconds, 1e-5);
    cuda_->ClearMarks();
  }
  EXPECT_THROW(cuda_->MarkSeconds(0, 1), std::out_of_range);
  cuda_->Free(a);
  cuda_->Free(c);
}

TEST_F(CudaVsCpu, FillCopyRoundTrip) {
  Check("Fill", {Random(1000)}, [](Backend& b, auto& p) { b.Fill(p[0], 777, 2.5f); }, kExact);
  Check("Copy", {Random(1000), Random(1000)},
        [](Backend& b, auto& p) { b.Copy(p[1], p[0], 999); }, kExact);
}

// ---- linear algebra

TEST_F(CudaVsCpu, Gemm) {
  struct Shape { std::int64_t m, n, k; };
  for (Shape s : {Shape{7, 5, 3}, Shape{64, 33, 129}, Shape{1, 1000, 17}, Shape{130, 1, 300}}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      Check("Gemm m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" +
                std::to_string(s.k) + " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb),
            {Random(s.m * s.k), Random(s.k * s.n), Random(s.m * s.n)},
            [&](Backend& b, auto& p) { b.Gemm(ta, tb, s.m, s.n, s.k, 0.7f, p[0], p[1], 0.3f, p[2]); },
            SumOver(s.k));
    }
  }
}

TEST_F(CudaVsCpu, GemmBatched) {
  const std::int64_t batch = 3, m = 9, n = 14, k = 20;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    // Strides larger than a matrix (gaps stay untouched) ...
    Check("GemmBatched ta=" + std::to_string(ta) + " tb=" + std::to_string(tb),
          {Random(batch * (m * k + 5)), Random(batch * (k * n + 3)), Random(batch * (m * n + 7))},
          [&](Backend& b, auto& p) {
            b.GemmBatched(batch, ta, tb, m, n, k, 1.3f, p[0], m * k + 5, p[1], k * n + 3, 0.0f,
                          p[2], m * n + 7);
          },
          SumOver(k));
  }
  // ... and stride 0 broadcasts one A to every batch.
  Check("GemmBatched stride_a=0", {Random(m * k), Random(batch * k * n), Random(batch * m * n)},
        [&](Backend& b, auto& p) {
          b.GemmBatched(batch, false, false, m, n, k, 1.0f, p[0], 0, p[1], k * n, 1.0f, p[2],
                        m * n);
        },
        SumOver(k));
}

TEST_F(CudaVsCpu, BiasAndBlasOne) {
  const std::int64_t rows = 1000, cols = 37;
  Check("AddBias", {Random(rows * cols), Random(cols)},
        [&](Backend& b, auto& p) { b.AddBias(p[0], p[1], rows, cols); }, kRounding);
  Check("BiasGrad", {Random(rows * cols), Random(cols)},
        [&](Backend& b, auto& p) { b.BiasGrad(p[0], rows, cols, p[1]); }, SumOver(rows));
  Check("Axpy", {Random(5000), Random(5000)},
        [](Backend& b, auto& p) { b.Axpy(4999, -0.37f, p[0], p[1]); }, kRounding);
  Check("Scale", {Random(5000)}, [](Backend& b, auto& p) { b.Scale(4999, 1.7f, p[0]); },
        kExact);
  Check("Add", {Random(5000), Random(5000), Random(5000)},
        [](Backend& b, auto& p) { b.Add(4999, p[0], p[1], p[2]); }, kExact);
}

TEST_F(CudaVsCpu, Copy2DAndHeads) {
  for (bool acc : {false, true}) {
    const std::string tag = acc ? " accumulate" : "";
    Check("Copy2D" + tag, {Random(20 * 30), Random(20 * 25)},
          [&](Backend& b, auto& p) { b.Copy2D(20, 11, p[0] + 3, 30, p[1] + 7, 25, acc); },
          acc ? kRounding : kExact);
    const std::int64_t n = 2, s = 7, heads = 3, d = 5;
    Check("SplitHeads" + tag, {Random(n * s * heads * d), Random(n * s * heads * d)},
          [&](Backend& b, auto& p) { b.SplitHeads(n, s, heads, d, p[0], p[1], acc); },
          acc ? kRounding : kExact);
    Check("MergeHeads" + tag, {Random(n * s * heads * d), Random(n * s * heads * d)},
          [&](Backend& b, auto& p) { b.MergeHeads(n, s, heads, d, p[0], p[1], acc); },
          acc ? kRounding : kExact);
  }
}

// ---- convolution and pooling

Conv2dArgs MakeConv(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                    std::int64_t k, int r, int s, int stride_h, int stride_w, int pad_h,
                    int pad_w, int groups) {
  Conv2dArgs a;
  a.n = n, a.c = c, a.h = h, a.w = w, a.k = k, a.r = r, a.s = s;
  a.stride_h = stride_h, a.stride_w = stride_w, a.pad_h = pad_h, a.pad_w = pad_w;
  a.groups = groups;
  a.oh = (h + 2 * pad_h - r) / stride_h + 1;
  a.ow = (w + 2 * pad_w - s) / stride_w + 1;
  return a;
}

TEST_F(CudaVsCpu, Conv2d) {
  const std::vector<Conv2dArgs> cases = {
      MakeConv(2, 3, 9, 11, 4, 3, 3, 1, 1, 1, 1, 1),    // 3x3 same padding
      MakeConv(3, 4, 8, 10, 6, 3, 2, 2, 1, 1, 0, 2),    // strided, 2 groups
      MakeConv(2, 8, 5, 5, 16, 1, 1, 1, 1, 0, 0, 1),    // pointwise (batched GEMMs)
      MakeConv(3, 8, 6, 7, 12, 1, 1, 1, 1, 0, 0, 2),    // pointwise, 2 groups
      MakeConv(2, 8, 7, 7, 16, 1, 1, 2, 2, 0, 0, 1),    // 1x1 stride 2 (ResNet downsample)
      MakeConv(1, 8192, 3, 3, 2, 3, 3, 1, 1, 1, 1, 1),  // 73,728 patch rows > gridDim.y
      MakeConv(66000, 1, 2, 2, 2, 2, 2, 1, 1, 0, 0, 1),  // 66,000 samples > gridDim.z
      MakeConv(66000, 2, 1, 1, 3, 1, 1, 1, 1, 0, 0, 1),  // same, pointwise
      MakeConv(2, 6, 7, 7, 6, 3, 3, 2, 2, 1, 1, 6),     // depthwise
      MakeConv(1, 3, 20, 20, 8, 5, 5, 2, 2, 2, 2, 1)};  // AlexNet-like 5x5
  for (const Conv2dArgs& a : cases) {
    const std::int64_t xs = a.n * a.c * a.h * a.w, ws = a.k * (a.c / a.groups) * a.r * a.s;
    const std::int64_t ys = a.n * a.k * a.oh * a.ow;
    const std::int64_t patch = (a.c / a.groups) * a.r * a.s;
    const std::string tag = " c=" + std::to_string(a.c) + " k=" + std::to_string(a.k) +
                            " r=" + std::to_string(a.r) + " groups=" + std::to_string(a.groups);
    Check("Conv2dForward" + tag, {Random(xs), Random(ws), Random(a.k), Random(ys)},
          [&](Backend& b, auto& p) { b.Conv2dForward(a, p[0], p[1], p[2], p[3]); },
          SumOver(patch));
    Check("Conv2dForward no bias" + tag, {Random(xs), Random(ws), Random(ys)},
          [&](Backend& b, auto& p) { b.Conv2dForward(a, p[0], p[1], nullptr, p[2]); },
          SumOver(patch));
    // Buffers: x, w, dy, dx, dw, dbias.
    const std::int64_t longest = std::max<std::int64_t>(a.n * a.oh * a.ow, a.k * a.r * a.s);
    Check("Conv2dBackward" + tag,
          {Random(xs), Random(ws), Random(ys), Random(xs), Random(ws), Random(a.k)},
          [&](Backend& b, auto& p) { b.Conv2dBackward(a, p[0], p[1], p[2], p[3], p[4], p[5]); },
          SumOver(longest));
    Check("Conv2dBackward dw only" + tag, {Random(xs), Random(ws), Random(ys), Random(ws)},
          [&](Backend& b, auto& p) {
            b.Conv2dBackward(a, p[0], p[1], p[2], nullptr, p[3], nullptr);
          },
          SumOver(longest));
  }
}

Pool2dArgs MakePool(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, int r,
                    int stride, int pad, bool ceil_mode) {
  Pool2dArgs a;
  a.n = n, a.c = c, a.h = h, a.w = w, a.r = r, a.s = r;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  auto out = [&](std::int64_t in) {
    const std::int64_t span = in + 2 * pad - r;
    std::int64_t o = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (ceil_mode && (o - 1) * stride >= in + pad) --o;  // PyTorch drops a window in padding
    return o;
  };
  a.oh = out(h);
  a.ow = out(w);
  return a;
}

TEST_F(CudaVsCpu, Pooling) {
  const std::vector<Pool2dArgs> cases = {
      MakePool(2, 3, 8, 8, 2, 2, 0, false),   // LeNet/VGG 2x2
      MakePool(2, 3, 7, 9, 3, 2, 1, false),   // ResNet stem 3x3/2 pad 1
      MakePool(1, 4, 6, 6, 3, 2, 0, true),    // AlexNet/GoogLeNet ceil mode
      MakePool(2, 2, 13, 13, 3, 2, 1, true),   // ceil mode with padding
      MakePool(1, 66000, 2, 2, 2, 2, 0, false)};  // 66,000 planes > gridDim.y
  for (const Pool2dArgs& a : cases) {
    const std::int64_t xs = a.n * a.c * a.h * a.w, ys = a.n * a.c * a.oh * a.ow;
    const std::string tag = " h=" + std::to_string(a.h) + " r=" + std::to_string(a.r) +
                            " oh=" + std::to_string(a.oh);
    for (int levels : {2, 1000}) {  // many ties, then (almost) none
      Check("MaxPoolForward" + tag, {Coarse(xs, levels), Random(ys)},
            [&](Backend& b, auto& p) { b.MaxPoolForward(a, p[0], p[1]); }, kExact);
      Check("MaxPoolBackward" + tag, {Coarse(xs, levels), Random(ys), Random(xs)},
            [&](Backend& b, auto& p) { b.MaxPoolBackward(a, p[0], p[1], p[2]); }, kRounding);
    }
    Check("AvgPoolForward" + tag, {Random(xs), Random(ys)},
          [&](Backend& b, auto& p) { b.AvgPoolForward(a, p[0], p[1]); }, kTranscendental);
    Check("AvgPoolBackward" + tag, {Random(ys), Random(xs)},
          [&](Backend& b, auto& p) { b.AvgPoolBackward(a, p[0], p[1]); }, kTranscendental);
  }
}

// ---- activations and dropout

TEST_F(CudaVsCpu, Activations) {
  const std::int64_t n = 4099;
  Check("ReluForward", {Random(n), Random(n)},
        [&](Backend& b, auto& p) { b.ReluForward(n, p[0], p[1]); }, kExact);
  Check("ReluBackward", {Random(n), Random(n), Random(n)},
        [&](Backend& b, auto& p) { b.ReluBackward(n, p[0], p[1], p[2]); }, kRounding);
  Check("GeluForward", {Random(n, -5, 5), Random(n)},
        [&](Backend& b, auto& p) { b.GeluForward(n, p[0], p[1]); }, kTranscendental);
  Check("GeluBackward", {Random(n, -5, 5), Random(n), Random(n)},
        [&](Backend& b, auto& p) { b.GeluBackward(n, p[0], p[1], p[2]); }, kTranscendental);
  Check("TanhForward", {Random(n, -4, 4), Random(n)},
        [&](Backend& b, auto& p) { b.TanhForward(n, p[0], p[1]); }, kTranscendental);
  Check("TanhBackward", {Random(n), Random(n), Random(n)},
        [&](Backend& b, auto& p) { b.TanhBackward(n, p[0], p[1], p[2]); }, kRounding);
}

TEST_F(CudaVsCpu, TransformerGatesAndPositions) {
  const std::int64_t n = 4099;
  Check("SigmoidForward", {Random(n, -6, 6), Random(n)},
        [&](Backend& b, auto& p) { b.SigmoidForward(n, p[0], p[1]); }, kTranscendental);
  Check("SigmoidBackward", {Random(n, 0, 1), Random(n), Random(n)},
        [&](Backend& b, auto& p) { b.SigmoidBackward(n, p[0], p[1], p[2]); }, kRounding);
  Check("SiluForward", {Random(n, -6, 6), Random(n)},
        [&](Backend& b, auto& p) { b.SiluForward(n, p[0], p[1]); }, kTranscendental);
  Check("SiluBackward", {Random(n, -6, 6), Random(n), Random(n)},
        [&](Backend& b, auto& p) { b.SiluBackward(n, p[0], p[1], p[2]); }, kTranscendental);
  // Buffers: a, b, y; then a, b, dy, da, db.
  const std::int64_t rows = 37, cols = 129;
  for (MulBroadcast mode : {MulBroadcast::kNone, MulBroadcast::kPerRow, MulBroadcast::kPerColumn}) {
    const std::int64_t bn = mode == MulBroadcast::kNone ? rows * cols
                            : mode == MulBroadcast::kPerRow ? rows : cols;
    const std::string tag = " mode=" + std::to_string(static_cast<int>(mode));
    Check("MulForward" + tag, {Random(rows * cols), Random(bn), Random(rows * cols)},
          [&](Backend& b, auto& p) { b.MulForward(mode, rows, cols, p[0], p[1], p[2]); }, kRounding);
    Check("MulBackward" + tag,
          {Random(rows * cols), Random(bn), Random(rows * cols), Random(rows * cols), Random(bn)},
          [&](Backend& b, auto& p) { b.MulBackward(mode, rows, cols, p[0], p[1], p[2], p[3], p[4]); },
          kReduction);
  }
  // (n, s, d) = (6, 33, 64): positions up to 32, angles in double on both.
  const std::int64_t rn = 6, rs = 33, rd = 64, rx = rn * rs * rd;
  Check("RotaryForward", {Random(rx), Random(rx)},
        [&](Backend& b, auto& p) { b.RotaryForward(rn, rs, rd, p[0], p[1]); }, kTranscendental);
  Check("RotaryBackward", {Random(rx), Random(rx)},
        [&](Backend& b, auto& p) { b.RotaryBackward(rn, rs, rd, p[0], p[1]); }, kTranscendental);
}

TEST_F(CudaVsCpu, FusedAttention) {
  for (bool causal : {true, false}) {
    AttentionArgs a;
    a.n = 2, a.heads = 8, a.kv_heads = 2, a.s = 70, a.d = 32, a.dv = 32;
    a.causal = causal;
    a.scale = 0.17677669f;
    const std::int64_t qn = a.n * a.heads * a.s * a.d, kn = a.n * a.kv_heads * a.s * a.d,
                       rows = a.n * a.heads * a.s;
    const std::string tag = causal ? " causal" : "";
    // Buffers: q, k, v, o, lse; then q, k, v, o, lse, dO, dq, dk, dv.
    Check("AttentionForward" + tag, {Random(qn), Random(kn), Random(kn), Random(qn), Random(rows)},
          [&](Backend& b, auto& p) { b.AttentionForward(a, p[0], p[1], p[2], p[3], p[4]); },
          kReduction);
    const std::vector<float> q = Random(qn), k = Random(kn), v = Random(kn);
    const Buffers fwd = RunOn(cpu_, {q, k, v, Random(qn), Random(rows)}, [&](Backend& b, auto& p) {
      b.AttentionForward(a, p[0], p[1], p[2], p[3], p[4]);
    });
    Check("AttentionBackward" + tag,
          {q, k, v, fwd[3], fwd[4], Random(qn), Random(qn), Random(kn), Random(kn)},
          [&](Backend& b, auto& p) {
            b.AttentionBackward(a, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]);
          },
          kReduction);
  }
}

TEST_F(CudaVsCpu, RecurrentCells) {
  const std::int64_t batch = 33, hidden = 65, n = batch * hidden;
  for (models::RnnCell cell : {models::RnnCell::kTanh, models::RnnCell::kLstm, models::RnnCell::kGru}) {
    const std::int64_t gates = models::RnnGates(cell);
    const std::int64_t w = gates * n;
    const std::string tag = " cell " + std::to_string(gates);
    // Buffers: gx, gh, h_prev, c_prev, h, c, act; then gh, h_prev, c_prev,
    // c, act, dh, dc, dgx, dgh, dh_prev.
    Check("RnnCellForward" + tag,
          {Random(w), Random(w), Random(n), Random(n), Random(n), Random(n), Random(w)},
          [&](Backend& b, auto& p) {
            b.RnnCellForward(cell, batch, hidden, p[0], p[1], p[2], p[3], p[4], p[5], p[6]);
          },
          kTranscendental);
    const std::vector<float> gh = Random(w), h_prev = Random(n), c_prev = Random(n);
    const Buffers fwd = RunOn(cpu_, {Random(w), gh, h_prev, c_prev, Random(n), Random(n), Random(w)},
                              [&](Backend& b, auto& p) {
                                b.RnnCellForward(cell, batch, hidden, p[0], p[1], p[2], p[3], p[4],
                                                 p[5], p[6]);
                              });
    Check("RnnCellBackward" + tag,
          {gh, h_prev, c_prev, fwd[5], fwd[6], Random(n), Random(n), Random(w), Random(w), Random(n)},
          [&](Backend& b, auto& p) {
            b.RnnCellBackward(cell, batch, hidden, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7],
                              p[8], p[9]);
          },
          kTranscendental);
  }
}

TEST_F(CudaVsCpu, DropoutDrawsTheCpuMask) {
  const std::int64_t n = 10007;
  for (float rate : {0.0f, 0.1f, 0.5f}) {
    const std::string tag = " rate=" + std::to_string(rate);
    // Buffers: x, mask, y. The mask and y = x * mask are bit-identical.
    Check("DropoutForward" + tag, {Random(n), Random(n), Random(n)},
          [&](Backend& b, auto& p) { b.DropoutForward(n, rate, 42, 123456789, p[0], p[1], p[2]); },
          kExact);
  }
  Check("DropoutBackward", {Random(n), Random(n), Random(n)},
        [&](Backend& b, auto& p) { b.DropoutBackward(n, p[0], p[1], p[2]); }, kRounding);
}

// ---- normalisation

TEST_F(CudaVsCpu, Softmax) {
  // Attention scores (2 samples x 3 heads, S = 17), causal and not; and
  // vocabulary-wide rows with large logits.
  const std::int64_t s = 17, rows = 2 * 3 * s;
  for (bool causal : {false, true}) {
    Check(std::string("SoftmaxForward causal=") + (causal ? "1" : "0"),
          {Random(rows * s, -8, 8), Random(rows * s)},
          [&](Backend& b, auto& p) { b.SoftmaxForward(rows, s, causal, p[0], p[1]); },
          kTranscendental);
  }
  Check("SoftmaxForward wide", {Random(5 * 3001, -30, 30), Random(5 * 3001)},
        [&](Backend& b, auto& p) { b.SoftmaxForward(5, 3001, false, p[0], p[1]); },
        kTranscendental);
  // y from a real softmax so that rows sum to 1.
  std::vector<float> y(static_cast<std::size_t>(rows * s));
  {
    const Buffers fwd = RunOn(cpu_, {Random(rows * s, -3, 3), y},
                              [&](Backend& b, auto& p) { b.SoftmaxForward(rows, s, true, p[0], p[1]); });
    y = fwd[1];
  }
  Check("SoftmaxBackward", {y, Random(rows * s), Random(rows * s)},
        [&](Backend& b, auto& p) { b.SoftmaxBackward(rows, s, p[0], p[1], p[2]); }, kReduction);
}

TEST_F(CudaVsCpu, LayerNorm) {
  const std::int64_t rows = 37, cols = 768;
  // Buffers: x, gamma, beta, y, mean, rstd. A large mean tests the two-pass
  // variance.
  Check("LayerNormForward", {Random(rows * cols, 2, 4), Random(cols), Random(cols),
                             Random(rows * cols), Random(rows), Random(rows)},
        [&](Backend& b, auto& p) {
          b.LayerNormForward(rows, cols, 1e-5f, p[0], p[1], p[2], p[3], p[4], p[5]);
        },
        kReduction);
  // Statistics from the CPU forward, then x, gamma, mean, rstd, dy, dx,
  // dgamma, dbeta.
  const std::vector<float> x = Random(rows * cols), gamma = Random(cols);
  const Buffers fwd = RunOn(cpu_, {x, gamma, Random(cols), Random(rows * cols), Random(rows),
                                   Random(rows)},
                            [&](Backend& b, auto& p) {
                              b.LayerNormForward(rows, cols, 1e-5f, p[0], p[1], p[2], p[3],
                                                 p[4], p[5]);
                            });
  Check("LayerNormBackward", {x, gamma, fwd[4], fwd[5], Random(rows * cols),
                              Random(rows * cols), Random(cols), Random(cols)},
        [&](Backend& b, auto& p) {
          b.LayerNormBackward(rows, cols, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
        },
        kReduction);
  // RMS norm: x, gamma, y, rstd; then x, gamma, rstd, dy, dx, dgamma.
  Check("RmsNormForward", {Random(rows * cols, 2, 4), Random(cols), Random(rows * cols),
                           Random(rows)},
        [&](Backend& b, auto& p) { b.RmsNormForward(rows, cols, 1e-5f, p[0], p[1], p[2], p[3]); },
        kReduction);
  const Buffers rms = RunOn(cpu_, {x, gamma, Random(rows * cols), Random(rows)},
                            [&](Backend& b, auto& p) {
                              b.RmsNormForward(rows, cols, 1e-5f, p[0], p[1], p[2], p[3]);
                            });
  Check("RmsNormBackward", {x, gamma, rms[3], Random(rows * cols), Random(rows * cols), Random(cols)},
        [&](Backend& b, auto& p) { b.RmsNormBackward(rows, cols, p[0], p[1], p[2], p[3], p[4], p[5]); },
        kReduction);
  Check("LayerNormBackward dx only", {x, gamma, fwd[4], fwd[5], Random(rows * cols),
                                      Random(rows * cols)},
        [&](Backend& b, auto& p) {
          b.LayerNormBackward(rows, cols, p[0], p[1], p[2], p[3], p[4], p[5], nullptr, nullptr);
        },
        kReduction);
}

TEST_F(CudaVsCpu, BatchNorm) {
  // Channels are cut into slices of samples, one block each: 8 x 5 gives
  // 8 slices of one sample, 3 x 130 three slices, 64 x 4 the most (64), and
  // 2 x 600 one slice per channel.
  for (const auto& [n, c, spatial] : std::vector<std::array<std::int64_t, 3>>{
           {8, 5, 49}, {3, 130, 7}, {64, 4, 9}, {2, 600, 3}}) {
    SCOPED_TRACE("n " + std::to_string(n) + " c " + std::to_string(c));
    const std::int64_t count = n * c * spatial;
    Check("BatchNormForward", {Random(count, -1, 3), Random(c), Random(c), Random(count),
                               Random(c), Random(c)},
          [&](Backend& b, auto& p) {
            b.BatchNormForward(n, c, spatial, 1e-5f, p[0], p[1], p[2], p[3], p[4], p[5]);
          },
          kReduction);
    const std::vector<float> x = Random(count), gamma = Random(c);
    const Buffers fwd = RunOn(cpu_, {x, gamma, Random(c), Random(count), Random(c), Random(c)},
                              [&](Backend& b, auto& p) {
                                b.BatchNormForward(n, c, spatial, 1e-5f, p[0], p[1], p[2], p[3],
                                                   p[4], p[5]);
                              });
    Check("BatchNormBackward", {x, gamma, fwd[4], fwd[5], Random(count), Random(count),
                                Random(c), Random(c)},
          [&](Backend& b, auto& p) {
            b.BatchNormBackward(n, c, spatial, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
          },
          kReduction);
    Check("BatchNormBackward params only", {x, gamma, fwd[4], fwd[5], Random(count), Random(c),
                                            Random(c)},
          [&](Backend& b, auto& p) {
            b.BatchNormBackward(n, c, spatial, p[0], p[1], p[2], p[3], p[4], nullptr, p[5], p[6]);
          },
          kReduction);
  }
}

TEST_F(CudaVsCpu, Lrn) {
  for (int radius : {2, 4}) {
    LrnArgs a;
    a.n = 2, a.c = 16, a.h = 5, a.w = 6, a.radius = radius;
    a.alpha = 0.1f;  // larger than the default so the normaliser matters
    const std::int64_t count = a.n * a.c * a.h * a.w;
    const std::string tag = " radius=" + std::to_string(radius);
    const std::vector<float> x = Random(count, -2, 2);
    Check("LrnForward" + tag, {x, Random(count)},
          [&](Backend& b, auto& p) { b.LrnForward(a, p[0], p[1]); }, kTranscendental);
    const Buffers fwd = RunOn(cpu_, {x, Random(count)},
                              [&](Backend& b, auto& p) { b.LrnForward(a, p[0], p[1]); });
    Check("LrnBackward" + tag, {x, fwd[1], Random(count), Random(count)},
          [&](Backend& b, auto& p) { b.LrnBackward(a, p[0], p[1], p[2], p[3]); },
          kTranscendental);
  }
}

// ---- loss and embedding

TEST_F(CudaVsCpu, SoftmaxCrossEntropy) {
  for (std::int64_t classes : {10, 1000}) {
    const std::int64_t rows = 33;
    const std::string tag = " classes=" + std::to_string(classes);
    const std::vector<float> logits = Random(rows * classes, -10, 10);
    const std::vector<float> labels = Labels(rows, classes);
    // Buffers: logits, labels, probs, loss.
    Check("SoftmaxCrossEntropyForward" + tag,
          {logits, labels, Random(rows * classes), Random(rows)},
          [&](Backend& b, auto& p) {
            b.SoftmaxCrossEntropyForward(rows, classes, p[0], p[1], p[2], p[3]);
          },
          kTranscendental);
    const Buffers fwd = RunOn(cpu_, {logits, labels, Random(rows * classes), Random(rows)},
                              [&](Backend& b, auto& p) {
                                b.SoftmaxCrossEntropyForward(rows, classes, p[0], p[1], p[2],
                                                             p[3]);
                              });
    Check("SoftmaxCrossEntropyBackward" + tag, {fwd[2], labels, Random(rows * classes)},
          [&](Backend& b, auto& p) {
            b.SoftmaxCrossEntropyBackward(rows, classes, p[0], p[1], 1.0f / rows, p[2]);
          },
          kRounding);
  }
}

TEST_F(CudaVsCpu, Embedding) {
  const std::int64_t vocab = 50, count = 300, hidden = 33;  // many repeated ids
  const std::vector<float> ids = Labels(count, vocab);
  Check("EmbeddingForward", {ids, Random(vocab * hidden), Random(count * hidden)},
        [&](Backend& b, auto& p) { b.EmbeddingForward(count, hidden, p[0], p[1], p[2]); },
        kExact);
  // Each row sums its positions in increasing order, as the CPU loop does.
  Check("EmbeddingBackward", {ids, Random(count * hidden), Random(vocab * hidden)},
        [&](Backend& b, auto& p) { b.EmbeddingBackward(count, hidden, p[0], p[1], p[2]); },
        kRounding);
}

// ---- optimizers

TEST_F(CudaVsCpu, Optimizers) {
  const std::int64_t n = 3001;
  Check("SgdStep", {Random(n), Random(n)},
        [&](Backend& b, auto& p) { b.SgdStep(n, 0.1f, 1e-4f, p[0], p[1]); }, kRounding);
  Check("MomentumStep", {Random(n), Random(n), Random(n)},
        [&](Backend& b, auto& p) { b.MomentumStep(n, 0.1f, 0.9f, p[0], p[1], p[2]); },
        kRounding);
  for (std::int64_t t : {1, 10, 1000}) {
    // Buffers: g, m, v (non-negative), p.
    Check("AdamStep t=" + std::to_string(t), {Random(n), Random(n), Random(n, 0, 1), Random(n)},
          [&](Backend& b, auto& p) {
            b.AdamStep(n, 1e-3f, 0.9f, 0.999f, 1e-8f, t, p[0], p[1], p[2], p[3]);
          },
          kTranscendental);
  }
}

// ---- determinism: backward passes use no atomics, so repeats are identical.

TEST_F(CudaVsCpu, BackwardIsBitIdenticalAcrossRuns) {
  const Conv2dArgs a = MakeConv(4, 8, 12, 12, 8, 3, 3, 1, 1, 1, 1, 1);
  const std::int64_t xs = a.n * a.c * a.h * a.w, ws = a.k * a.c * a.r * a.s;
  const std::int64_t ys = a.n * a.k * a.oh * a.ow;
  const Buffers initial = {Random(xs), Random(ws), Random(ys), Random(xs), Random(ws),
                           Random(a.k), Labels(1000, 20), Random(1000 * 64),
                           Random(20 * 64)};
  const Op op = [&](Backend& b, const std::vector<float*>& p) {
    b.Conv2dBackward(a, p[0], p[1], p[2], p[3], p[4], p[5]);
    b.EmbeddingBackward(1000, 64, p[6], p[7], p[8]);
  };
  const Buffers first = RunOn(*cuda_, initial, op);
  const Buffers second = RunOn(*cuda_, initial, op);
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i], second[i]) << "buffer " << i;
}

}  // namespace
}  // namespace dtsim::exec
