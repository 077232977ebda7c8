// WorkerPool, and CpuBackend on several threads: GEMMs give the bits of one
// thread (their split follows Eigen's fixed panels), convolutions give the
// same bits run after run for a thread count and stay within rounding of
// one thread.
#include "exec/kernels/cpu_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "exec/kernels/cpu_isa.h"

namespace dtsim::exec {
namespace {

TEST(WorkerPool, RunsEveryPartOnceAndRethrows) {
  WorkerPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  for (int parts : {1, 2, 3, 7}) {
    std::vector<std::atomic<int>> runs(static_cast<std::size_t>(parts));
    pool.Run(parts, [&](int p) { ++runs[static_cast<std::size_t>(p)]; });
    for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
  }
  EXPECT_THROW(pool.Run(4, [](int p) {
    if (p == 2) throw std::runtime_error("part 2");
  }), std::runtime_error);
  int after = 0;
  pool.Run(1, [&](int) { ++after; });  // still usable
  EXPECT_EQ(after, 1);
  EXPECT_EQ(PartBegin(10, 3, 0), 0);
  EXPECT_EQ(PartBegin(10, 3, 3), 10);
}

std::vector<float> Random(std::int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// Runs `op` on a backend with `threads` threads over copies of `inputs`;
// returns every buffer afterwards.
template <class Op>
std::vector<std::vector<float>> RunWith(int threads, const std::vector<std::vector<float>>& inputs,
                                        Op op, CpuIsa isa = BestCpuIsa()) {
  const std::unique_ptr<Backend> b = MakeCpuBackend(isa, threads);
  std::vector<float*> p;
  for (const auto& v : inputs) {
    p.push_back(b->Allocate(static_cast<std::int64_t>(v.size())));
    b->Upload(p.back(), v.data(), static_cast<std::int64_t>(v.size()));
  }
  op(*b, p);
  std::vector<std::vector<float>> out;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    out.emplace_back(inputs[i].size());
    b->Download(out.back().data(), p[i], static_cast<std::int64_t>(inputs[i].size()));
    b->Free(p[i]);
  }
  return out;
}

TEST(CpuBackendThreads, GemmsGiveTheBitsOfOneThread) {
  std::mt19937 rng(5);
  // n = 1000: 6 panels of 192 columns over 3 threads; n = 100: one panel.
  for (std::int64_t n : {1000, 100}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const std::int64_t m = 37, k = 300;
      const std::vector<std::vector<float>> in = {Random(m * k, rng), Random(k * n, rng),
                                                  Random(m * n, rng)};
      for (float beta : {0.0f, 0.5f}) {
        auto gemm = [&](Backend& b, std::vector<float*>& p) {
          b.Gemm(ta, tb, m, n, k, 1.5f, p[0], p[1], beta, p[2]);
        };
        for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2Fma, CpuIsa::kAvx512}) {
          if (!CpuIsaAvailable(isa)) continue;
          EXPECT_EQ(RunWith(3, in, gemm, isa)[2], RunWith(1, in, gemm, isa)[2])
              << CpuIsaName(isa) << " n " << n << " trans " << ta << tb << " beta " << beta;
        }
      }
    }
  }
  const std::int64_t batch = 5, m = 8, n = 16, k = 24;
  const std::vector<std::vector<float>> in = {Random(batch * m * k, rng),
                                              Random(batch * k * n, rng), Random(batch * m * n, rng)};
  auto batched = [&](Backend& b, std::vector<float*>& p) {
    b.GemmBatched(batch, false, true, m, n, k, 1.0f, p[0], m * k, p[1], k * n, 0.0f, p[2], m * n);
  };
  EXPECT_EQ(RunWith(2, in, batched)[2], RunWith(1, in, batched)[2]);
}

// Issue 14 item 2: element-wise kernels, optimizer steps, pooling, LRN,
// softmax, layer norm and bias additions split over threads give the bits
// of one thread, on every ISA build (parts are whole 64-element blocks, or
// whole samples and rows). Sizes are not multiples of the blocks, and large
// enough to be split (32,768 elements at least per part).
TEST(CpuBackendThreads, ElementWisePoolingAndNormsGiveTheBitsOfOneThread) {
  std::mt19937 rng(11);
  const std::int64_t count = 3 * 32768 + 77;
  const std::vector<std::vector<float>> flat = {Random(count, rng), Random(count, rng),
                                                Random(count, rng), Random(count, rng)};
  using Run = std::function<void(Backend&, std::vector<float*>&)>;
  const std::vector<std::pair<const char*, Run>> elementwise = {
      {"relu", [&](Backend& b, std::vector<float*>& p) { b.ReluForward(count, p[0], p[1]); }},
      {"relu'", [&](Backend& b, std::vector<float*>& p) { b.ReluBackward(count, p[0], p[1], p[2]); }},
      {"gelu", [&](Backend& b, std::vector<float*>& p) { b.GeluForward(count, p[0], p[1]); }},
      {"gelu'", [&](Backend& b, std::vector<float*>& p) { b.GeluBackward(count, p[0], p[1], p[2]); }},
      {"tanh", [&](Backend& b, std::vector<float*>& p) { b.TanhForward(count, p[0], p[1]); }},
      {"tanh'", [&](Backend& b, std::vector<float*>& p) { b.TanhBackward(count, p[0], p[1], p[2]); }},
      {"axpy", [&](Backend& b, std::vector<float*>& p) { b.Axpy(count, 0.3f, p[0], p[1]); }},
      {"scale", [&](Backend& b, std::vector<float*>& p) { b.Scale(count, 0.7f, p[0]); }},
      {"add", [&](Backend& b, std::vector<float*>& p) { b.Add(count, p[0], p[1], p[2]); }},
      {"sgd", [&](Backend& b, std::vector<float*>& p) { b.SgdStep(count, 0.1f, 1e-4f, p[0], p[1]); }},
      {"momentum",
       [&](Backend& b, std::vector<float*>& p) { b.MomentumStep(count, 0.1f, 0.9f, p[0], p[1], p[2]); }},
      {"adam", [&](Backend& b, std::vector<float*>& p) {
         b.AdamStep(count, 1e-3f, 0.9f, 0.999f, 1e-8f, 3, p[0], p[1], p[2], p[3]);
       }}};
  // Pooling and LRN over 9 samples of 8 x 33 x 33; 150 rows of 515 columns
  // (all within the buffers' `count` elements).
  Pool2dArgs pool;
  pool.n = 9;
  pool.c = 8;
  pool.h = pool.w = 33;
  pool.r = pool.s = 3;
  pool.stride_h = pool.stride_w = 2;
  pool.oh = pool.ow = 16;
  LrnArgs lrn;
  lrn.n = 9;
  lrn.c = 8;
  lrn.h = lrn.w = 33;
  const std::int64_t rows = 150, cols = 515;
  const std::vector<std::pair<const char*, Run>> per_item = {
      {"max pool", [&](Backend& b, std::vector<float*>& p) { b.MaxPoolForward(pool, p[0], p[1]); }},
      {"max pool'",
       [&](Backend& b, std::vector<float*>& p) { b.MaxPoolBackward(pool, p[0], p[1], p[2]); }},
      {"avg pool", [&](Backend& b, std::vector<float*>& p) { b.AvgPoolForward(pool, p[0], p[1]); }},
      {"avg pool'", [&](Backend& b, std::vector<float*>& p) { b.AvgPoolBackward(pool, p[0], p[1]); }},
      {"lrn", [&](Backend& b, std::vector<float*>& p) { b.LrnForward(lrn, p[0], p[1]); }},
      {"lrn'", [&](Backend& b, std::vector<float*>& p) { b.LrnBackward(lrn, p[0], p[1], p[2], p[3]); }},
      {"softmax",
       [&](Backend& b, std::vector<float*>& p) { b.SoftmaxForward(rows, cols, false, p[0], p[1]); }},
      {"softmax'",
       [&](Backend& b, std::vector<float*>& p) { b.SoftmaxBackward(rows, cols, p[0], p[1], p[2]); }},
      {"layer norm", [&](Backend& b, std::vector<float*>& p) {
         b.LayerNormForward(rows, cols, 1e-5f, p[0], p[1], p[2], p[3], p[1] + cols, p[2] + cols);
       }},
      {"bias", [&](Backend& b, std::vector<float*>& p) { b.AddBias(p[0], p[1], rows, cols); }}};
  // LRN's backward reads y = LRN(x): positive inputs keep its power defined.
  std::vector<std::vector<float>> positive = flat;
  for (auto& v : positive)
    for (float& x : v) x = std::abs(x) + 0.1f;
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2Fma, CpuIsa::kAvx512}) {
    if (!CpuIsaAvailable(isa)) continue;
    for (const auto& [name, run] : elementwise)
      EXPECT_EQ(RunWith(3, positive, run, isa), RunWith(1, positive, run, isa))
          << name << " " << CpuIsaName(isa);
    for (const auto& [name, run] : per_item)
      EXPECT_EQ(RunWith(2, positive, run, isa), RunWith(1, positive, run, isa))
          << name << " " << CpuIsaName(isa);
  }
}

TEST(CpuBackendThreads, ConvolutionsAreDeterministicAndCloseToOneThread) {
  std::mt19937 rng(7);
  Conv2dArgs a;
  a.n = 5, a.c = 6, a.h = a.w = 12, a.k = 8, a.r = a.s = 3, a.pad_h = a.pad_w = 1;
  a.oh = a.ow = 12;
  const std::int64_t xs = a.n * a.c * a.h * a.w, ws = a.k * a.c * 9, ys = a.n * a.k * 144;
  // x, w, bias, y, dx, dw, dbias (the gradients start non-zero: they add).
  const std::vector<std::vector<float>> in = {Random(xs, rng), Random(ws, rng), Random(a.k, rng),
                                              Random(ys, rng), Random(xs, rng), Random(ws, rng),
                                              Random(a.k, rng)};
  auto conv = [&](Backend& b, std::vector<float*>& p) {
    b.Conv2dForward(a, p[0], p[1], p[2], p[3]);
    b.Conv2dBackward(a, p[0], p[1], p[3], p[4], p[5], p[6]);
  };
  const auto one = RunWith(1, in, conv);
  const auto three = RunWith(3, in, conv);
  EXPECT_EQ(RunWith(3, in, conv), three) << "not deterministic on 3 threads";
  for (std::size_t b = 3; b < in.size(); ++b) {
    for (std::size_t i = 0; i < in[b].size(); ++i) {
      // Sums of up to 5 x 144 products of terms below ~30: float rounding.
      ASSERT_NEAR(three[b][i], one[b][i], 1e-3f * (1.0f + std::abs(one[b][i])))
          << "buffer " << b << "[" << i << "]";
    }
  }
  EXPECT_THROW(MakeCpuBackend(BestCpuIsa(), 0), std::exception);
}

}  // namespace
}  // namespace dtsim::exec
