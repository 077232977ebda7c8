#include "exec/kernels/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"
#include "exec/kernels/cpu_threads.h"

namespace dtsim::exec::DTSIM_CPU_NS {
namespace {

constexpr std::size_t kAlignment = 64;  // bytes: one cache line

}  // namespace

#ifdef DTSIM_CPU_BACKEND_NAME
std::string CpuBackend::Name() const { return DTSIM_CPU_BACKEND_NAME; }
#else
std::string CpuBackend::Name() const { return "cpu"; }
#endif

// Gemm splits C's columns in blocks of this many: Eigen computes a
// row-major product as its transpose, whose rows it takes in panels of
// EIGEN_TEST_SPECIFIC_BLOCKING_SIZE_M (exec/kernels/CMakeLists.txt), so
// whole panels give each element the same operations as one thread does.
constexpr std::int64_t kColumnBlock = 192;

std::unique_ptr<Backend> NewCpuBackend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

CpuBackend::CpuBackend(int threads) {
  if (threads < 1) throw UserError("threads per rank must be at least 1");
  if (threads > 1) {
    pool_ = std::make_unique<WorkerPool>(threads);
    part_scratch_.resize(static_cast<std::size_t>(threads - 1));
    part_dw_.resize(static_cast<std::size_t>(threads - 1));
    part_db_.resize(static_cast<std::size_t>(threads - 1));
  }
}

float* CpuBackend::Allocate(std::int64_t count) {
  DTSIM_CHECK(count >= 0, "Allocate: negative count");
  // std::aligned_alloc wants a size that is a multiple of the alignment.
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  const std::size_t rounded = std::max<std::size_t>(
      kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<float*>(p);
}

void CpuBackend::Free(float* p) { std::free(p); }

void CpuBackend::Upload(float* dst, const float* host_src, std::int64_t count) {
  Copy(dst, host_src, count);
}

void CpuBackend::Download(float* host_dst, const float* src, std::int64_t count) {
  Copy(host_dst, src, count);
}

void CpuBackend::Fill(float* p, std::int64_t count, float value) {
  DTSIM_CHECK(count >= 0, "Fill: negative count");
  std::fill_n(p, count, value);
}

void CpuBackend::Copy(float* dst, const float* src, std::int64_t count) {
  DTSIM_CHECK(count >= 0, "Copy: negative count");
  std::copy_n(src, count, dst);
}

void CpuBackend::Gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
                      std::int64_t k, float alpha, const float* a, const float* b, float beta,
                      float* c) {
  const std::int64_t blocks = (n + kColumnBlock - 1) / kColumnBlock;
  const int parts = static_cast<int>(std::min<std::int64_t>(threads(), blocks));
  if (parts <= 1) {
    DTSIM_CPU_NS::Gemm(trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
    return;
  }
  pool_->Run(parts, [&](int p) {
    const std::int64_t j0 = PartBegin(blocks, parts, p) * kColumnBlock;
    const std::int64_t j1 = std::min(n, PartBegin(blocks, parts, p + 1) * kColumnBlock);
    GemmColumns(trans_a, trans_b, m, n, k, j0, j1, alpha, a, b, beta, c);
  });
}

void CpuBackend::GemmBatched(std::int64_t batch, bool trans_a, bool trans_b, std::int64_t m,
                             std::int64_t n, std::int64_t k, float alpha, const float* a,
                             std::int64_t stride_a, const float* b, std::int64_t stride_b,
                             float beta, float* c, std::int64_t stride_c) {
  const int parts = static_cast<int>(std::min<std::int64_t>(threads(), batch));
  if (parts <= 1) {
    DTSIM_CPU_NS::GemmBatched(batch, trans_a, trans_b, m, n, k, alpha, a, stride_a, b, stride_b,
                              beta, c, stride_c);
    return;
  }
  pool_->Run(parts, [&](int p) {
    const std::int64_t i0 = PartBegin(batch, parts, p), i1 = PartBegin(batch, parts, p + 1);
    DTSIM_CPU_NS::GemmBatched(i1 - i0, trans_a, trans_b, m, n, k, alpha, a + i0 * stride_a,
                              stride_a, b + i0 * stride_b, stride_b, beta, c + i0 * stride_c,
                              stride_c);
  });
}

void CpuBackend::ForParts(std::int64_t units, std::int64_t min_units, std::int64_t align,
                          const std::function<void(std::int64_t, std::int64_t)>& fn) {
  const std::int64_t blocks = (units + align - 1) / align;
  const std::int64_t most = std::max<std::int64_t>(1, units / std::max<std::int64_t>(1, min_units));
  const int parts = static_cast<int>(std::min<std::int64_t>({threads(), blocks, most}));
  if (parts <= 1) {
    if (units > 0) fn(0, units);
    return;
  }
  pool_->Run(parts, [&](int p) {
    const std::int64_t b = PartBegin(blocks, parts, p) * align;
    const std::int64_t e = std::min(units, PartBegin(blocks, parts, p + 1) * align);
    if (b < e) fn(b, e);
  });
}

void CpuBackend::AddBias(float* y, const float* bias, std::int64_t rows, std::int64_t cols) {
  ForItems(rows, cols, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::AddBias(y + b * cols, bias, e - b, cols);
  });
}

void CpuBackend::BiasGrad(const float* dy, std::int64_t rows, std::int64_t cols,
                          float* dbias) {
  DTSIM_CPU_NS::BiasGrad(dy, rows, cols, dbias);
}

void CpuBackend::Axpy(std::int64_t count, float alpha, const float* x, float* y) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::Axpy(e - b, alpha, x + b, y + b);
  });
}

void CpuBackend::Scale(std::int64_t count, float alpha, float* x) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::Scale(e - b, alpha, x + b);
  });
}

void CpuBackend::Add(std::int64_t count, const float* a, const float* b, float* y) {
  ForElements(count, [&](std::int64_t i, std::int64_t e) {
    DTSIM_CPU_NS::Add(e - i, a + i, b + i, y + i);
  });
}

void CpuBackend::Copy2D(std::int64_t rows, std::int64_t cols, const float* src,
                        std::int64_t src_stride, float* dst, std::int64_t dst_stride,
                        bool accumulate) {
  DTSIM_CPU_NS::Copy2D(rows, cols, src, src_stride, dst, dst_stride, accumulate);
}

void CpuBackend::SplitHeads(std::int64_t n, std::int64_t s, std::int64_t heads,
                            std::int64_t d, const float* x, float* y, bool accumulate) {
  DTSIM_CPU_NS::SplitHeads(n, s, heads, d, x, y, accumulate);
}

void CpuBackend::MergeHeads(std::int64_t n, std::int64_t s, std::int64_t heads,
                            std::int64_t d, const float* x, float* y, bool accumulate) {
  DTSIM_CPU_NS::MergeHeads(n, s, heads, d, x, y, accumulate);
}

namespace {

// Samples [PartBegin(n, parts, p), PartBegin(n, parts, p + 1)) of `a`.
Conv2dArgs PartOf(const Conv2dArgs& a, int parts, int p, std::int64_t* first) {
  *first = PartBegin(a.n, parts, p);
  Conv2dArgs part = a;
  part.n = PartBegin(a.n, parts, p + 1) - *first;
  return part;
}

}  // namespace

void CpuBackend::Conv2dForward(const Conv2dArgs& a, const float* x, const float* w,
                               const float* bias, float* y) {
  const int parts = static_cast<int>(std::min<std::int64_t>(threads(), a.n));
  if (parts <= 1) {
    DTSIM_CPU_NS::Conv2dForward(a, x, w, bias, y, &scratch_);
    return;
  }
  pool_->Run(parts, [&](int p) {
    std::int64_t s0 = 0;
    const Conv2dArgs part = PartOf(a, parts, p, &s0);
    DTSIM_CPU_NS::Conv2dForward(part, x + s0 * a.c * a.h * a.w, w, bias,
                                y + s0 * a.k * a.oh * a.ow,
                                p == 0 ? &scratch_ : &part_scratch_[static_cast<std::size_t>(p - 1)]);
  });
}

void CpuBackend::Conv2dBackward(const Conv2dArgs& a, const float* x, const float* w,
                                const float* dy, float* dx, float* dw, float* dbias) {
  const int parts = static_cast<int>(std::min<std::int64_t>(threads(), a.n));
  if (parts <= 1) {
    DTSIM_CPU_NS::Conv2dBackward(a, x, w, dy, dx, dw, dbias, &scratch_);
    return;
  }
  // Thread 0 adds into dw and dbias; the others into zeroed partial sums,
  // added afterwards in thread order.
  const std::int64_t w_count = a.k * (a.c / a.groups) * a.r * a.s;
  for (int p = 1; p < parts; ++p) {
    if (dw) part_dw_[static_cast<std::size_t>(p - 1)].assign(static_cast<std::size_t>(w_count), 0);
    if (dbias) part_db_[static_cast<std::size_t>(p - 1)].assign(static_cast<std::size_t>(a.k), 0);
  }
  pool_->Run(parts, [&](int p) {
    std::int64_t s0 = 0;
    const Conv2dArgs part = PartOf(a, parts, p, &s0);
    const auto q = static_cast<std::size_t>(p - 1);
    DTSIM_CPU_NS::Conv2dBackward(
        part, x + s0 * a.c * a.h * a.w, w, dy + s0 * a.k * a.oh * a.ow,
        dx ? dx + s0 * a.c * a.h * a.w : nullptr,
        dw ? (p == 0 ? dw : part_dw_[q].data()) : nullptr,
        dbias ? (p == 0 ? dbias : part_db_[q].data()) : nullptr,
        p == 0 ? &scratch_ : &part_scratch_[q]);
  });
  for (int p = 1; p < parts; ++p) {
    const auto q = static_cast<std::size_t>(p - 1);
    if (dw) DTSIM_CPU_NS::Axpy<float>(w_count, 1.0f, part_dw_[q].data(), dw);
    if (dbias) DTSIM_CPU_NS::Axpy<float>(a.k, 1.0f, part_db_[q].data(), dbias);
  }
}

// Pooling and LRN split over samples: each sample's outputs are its own.
namespace {
Pool2dArgs Samples(Pool2dArgs a, std::int64_t count) {
  a.n = count;
  return a;
}
}  // namespace

void CpuBackend::MaxPoolForward(const Pool2dArgs& a, const float* x, float* y) {
  const std::int64_t in = a.c * a.h * a.w, out = a.c * a.oh * a.ow;
  ForItems(a.n, in, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::MaxPoolForward(Samples(a, e - b), x + b * in, y + b * out);
  });
}

void CpuBackend::MaxPoolBackward(const Pool2dArgs& a, const float* x, const float* dy,
                                 float* dx) {
  const std::int64_t in = a.c * a.h * a.w, out = a.c * a.oh * a.ow;
  ForItems(a.n, in, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::MaxPoolBackward(Samples(a, e - b), x + b * in, dy + b * out, dx + b * in);
  });
}

void CpuBackend::AvgPoolForward(const Pool2dArgs& a, const float* x, float* y) {
  const std::int64_t in = a.c * a.h * a.w, out = a.c * a.oh * a.ow;
  ForItems(a.n, in, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::AvgPoolForward(Samples(a, e - b), x + b * in, y + b * out);
  });
}

void CpuBackend::AvgPoolBackward(const Pool2dArgs& a, const float* dy, float* dx) {
  const std::int64_t in = a.c * a.h * a.w, out = a.c * a.oh * a.ow;
  ForItems(a.n, in, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::AvgPoolBackward(Samples(a, e - b), dy + b * out, dx + b * in);
  });
}

void CpuBackend::ReluForward(std::int64_t count, const float* x, float* y) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) { DTSIM_CPU_NS::ReluForward(e - b, x + b, y + b); });
}

void CpuBackend::ReluBackward(std::int64_t count, const float* y, const float* dy,
                              float* dx) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::ReluBackward(e - b, y + b, dy + b, dx + b);
  });
}

void CpuBackend::GeluForward(std::int64_t count, const float* x, float* y) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) { DTSIM_CPU_NS::GeluForward(e - b, x + b, y + b); });
}

void CpuBackend::GeluBackward(std::int64_t count, const float* x, const float* dy,
                              float* dx) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::GeluBackward(e - b, x + b, dy + b, dx + b);
  });
}

void CpuBackend::TanhForward(std::int64_t count, const float* x, float* y) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) { DTSIM_CPU_NS::TanhForward(e - b, x + b, y + b); });
}

void CpuBackend::TanhBackward(std::int64_t count, const float* y, const float* dy,
                              float* dx) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::TanhBackward(e - b, y + b, dy + b, dx + b);
  });
}

void CpuBackend::SigmoidForward(std::int64_t count, const float* x, float* y) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) { DTSIM_CPU_NS::SigmoidForward(e - b, x + b, y + b); });
}

void CpuBackend::SigmoidBackward(std::int64_t count, const float* y, const float* dy,
                                 float* dx) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::SigmoidBackward(e - b, y + b, dy + b, dx + b);
  });
}

void CpuBackend::SiluForward(std::int64_t count, const float* x, float* y) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) { DTSIM_CPU_NS::SiluForward(e - b, x + b, y + b); });
}

void CpuBackend::SiluBackward(std::int64_t count, const float* x, const float* dy, float* dx) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::SiluBackward(e - b, x + b, dy + b, dx + b);
  });
}

void CpuBackend::MulForward(MulBroadcast broadcast, std::int64_t rows, std::int64_t cols,
                            const float* a, const float* b, float* y) {
  DTSIM_CPU_NS::MulForward(broadcast, rows, cols, a, b, y);
}

void CpuBackend::MulBackward(MulBroadcast broadcast, std::int64_t rows, std::int64_t cols,
                             const float* a, const float* b, const float* dy, float* da,
                             float* db) {
  DTSIM_CPU_NS::MulBackward(broadcast, rows, cols, a, b, dy, da, db);
}

void CpuBackend::RotaryForward(std::int64_t n, std::int64_t s, std::int64_t d, const float* x,
                               float* y) {
  DTSIM_CPU_NS::RotaryForward(n, s, d, x, y);
}

void CpuBackend::RotaryBackward(std::int64_t n, std::int64_t s, std::int64_t d, const float* dy,
                                float* dx) {
  DTSIM_CPU_NS::RotaryBackward(n, s, d, dy, dx);
}

void CpuBackend::AttentionForward(const AttentionArgs& a, const float* q, const float* k,
                                  const float* v, float* o, float* lse) {
  DTSIM_CPU_NS::AttentionForward(a, q, k, v, o, lse);
}

void CpuBackend::AttentionBackward(const AttentionArgs& a, const float* q, const float* k,
                                   const float* v, const float* o, const float* lse,
                                   const float* dout, float* dq, float* dk, float* dv) {
  DTSIM_CPU_NS::AttentionBackward(a, q, k, v, o, lse, dout, dq, dk, dv);
}

void CpuBackend::RnnCellForward(models::RnnCell cell, std::int64_t batch, std::int64_t hidden,
                                const float* gx, const float* gh, const float* h_prev,
                                const float* c_prev, float* h, float* c, float* act) {
  DTSIM_CPU_NS::RnnCellForward(cell, batch, hidden, gx, gh, h_prev, c_prev, h, c, act);
}

void CpuBackend::RnnCellBackward(models::RnnCell cell, std::int64_t batch, std::int64_t hidden,
                                 const float* gh, const float* h_prev, const float* c_prev,
                                 const float* c, const float* act, const float* dh, float* dc,
                                 float* dgx, float* dgh, float* dh_prev) {
  DTSIM_CPU_NS::RnnCellBackward(cell, batch, hidden, gh, h_prev, c_prev, c, act, dh, dc, dgx, dgh,
                                dh_prev);
}

void CpuBackend::DropoutForward(std::int64_t count, float rate, std::uint64_t seed,
                                std::uint64_t offset, const float* x, float* mask, float* y) {
  DTSIM_CPU_NS::DropoutForward(count, rate, seed, offset, x, mask, y);
}

void CpuBackend::DropoutBackward(std::int64_t count, const float* mask, const float* dy,
                                 float* dx) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::DropoutBackward(e - b, mask + b, dy + b, dx + b);
  });
}

void CpuBackend::SoftmaxForward(std::int64_t rows, std::int64_t cols, bool causal,
                                const float* x, float* y) {
  // A causal mask depends on the row's index: those stay on one thread.
  if (causal) {
    DTSIM_CPU_NS::SoftmaxForward(rows, cols, causal, x, y);
    return;
  }
  ForItems(rows, cols, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::SoftmaxForward(e - b, cols, false, x + b * cols, y + b * cols);
  });
}

void CpuBackend::SoftmaxBackward(std::int64_t rows, std::int64_t cols, const float* y,
                                 const float* dy, float* dx) {
  ForItems(rows, cols, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::SoftmaxBackward(e - b, cols, y + b * cols, dy + b * cols, dx + b * cols);
  });
}

void CpuBackend::LayerNormForward(std::int64_t rows, std::int64_t cols, float eps,
                                  const float* x, const float* gamma, const float* beta,
                                  float* y, float* mean, float* rstd) {
  ForItems(rows, cols, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::LayerNormForward(e - b, cols, eps, x + b * cols, gamma, beta, y + b * cols,
                                   mean + b, rstd + b);
  });
}

void CpuBackend::RmsNormForward(std::int64_t rows, std::int64_t cols, float eps, const float* x,
                                const float* gamma, float* y, float* rstd) {
  ForItems(rows, cols, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::RmsNormForward(e - b, cols, eps, x + b * cols, gamma, y + b * cols, rstd + b);
  });
}

void CpuBackend::RmsNormBackward(std::int64_t rows, std::int64_t cols, const float* x,
                                 const float* gamma, const float* rstd, const float* dy,
                                 float* dx, float* dgamma) {
  DTSIM_CPU_NS::RmsNormBackward(rows, cols, x, gamma, rstd, dy, dx, dgamma);
}

void CpuBackend::LayerNormBackward(std::int64_t rows, std::int64_t cols, const float* x,
                                   const float* gamma, const float* mean, const float* rstd,
                                   const float* dy, float* dx, float* dgamma, float* dbeta) {
  DTSIM_CPU_NS::LayerNormBackward(rows, cols, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
}

void CpuBackend::BatchNormForward(std::int64_t n, std::int64_t c, std::int64_t spatial,
                                  float eps, const float* x, const float* gamma,
                                  const float* beta, float* y, float* mean, float* rstd) {
  DTSIM_CPU_NS::BatchNormForward(n, c, spatial, eps, x, gamma, beta, y, mean, rstd);
}

void CpuBackend::BatchNormBackward(std::int64_t n, std::int64_t c, std::int64_t spatial,
                                   const float* x, const float* gamma, const float* mean,
                                   const float* rstd, const float* dy, float* dx,
                                   float* dgamma, float* dbeta) {
  DTSIM_CPU_NS::BatchNormBackward(n, c, spatial, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
}

void CpuBackend::LrnForward(const LrnArgs& a, const float* x, float* y) {
  const std::int64_t each = a.c * a.h * a.w;
  ForItems(a.n, each, [&](std::int64_t b, std::int64_t e) {
    LrnArgs part = a;
    part.n = e - b;
    DTSIM_CPU_NS::LrnForward(part, x + b * each, y + b * each);
  });
}

void CpuBackend::LrnBackward(const LrnArgs& a, const float* x, const float* y,
                             const float* dy, float* dx) {
  const std::int64_t each = a.c * a.h * a.w;
  ForItems(a.n, each, [&](std::int64_t b, std::int64_t e) {
    LrnArgs part = a;
    part.n = e - b;
    DTSIM_CPU_NS::LrnBackward(part, x + b * each, y + b * each, dy + b * each, dx + b * each);
  });
}

void CpuBackend::SoftmaxCrossEntropyForward(std::int64_t rows, std::int64_t classes,
                                            const float* logits, const float* labels,
                                            float* probs, float* loss) {
  DTSIM_CPU_NS::SoftmaxCrossEntropyForward(rows, classes, logits, labels, probs, loss);
}

void CpuBackend::SoftmaxCrossEntropyBackward(std::int64_t rows, std::int64_t classes,
                                             const float* probs, const float* labels,
                                             float scale, float* dlogits) {
  DTSIM_CPU_NS::SoftmaxCrossEntropyBackward(rows, classes, probs, labels, scale, dlogits);
}

void CpuBackend::EmbeddingForward(std::int64_t count, std::int64_t hidden, const float* ids,
                                  const float* table, float* y) {
  DTSIM_CPU_NS::EmbeddingForward(count, hidden, ids, table, y);
}

void CpuBackend::EmbeddingBackward(std::int64_t count, std::int64_t hidden, const float* ids,
                                   const float* dy, float* dtable) {
  DTSIM_CPU_NS::EmbeddingBackward(count, hidden, ids, dy, dtable);
}

void CpuBackend::SgdStep(std::int64_t count, float lr, float weight_decay, const float* g,
                         float* p) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::SgdStep(e - b, lr, weight_decay, g + b, p + b);
  });
}

void CpuBackend::MomentumStep(std::int64_t count, float lr, float momentum, const float* g,
                              float* v, float* p) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::MomentumStep(e - b, lr, momentum, g + b, v + b, p + b);
  });
}

void CpuBackend::AdamStep(std::int64_t count, float lr, float beta1, float beta2, float eps,
                          std::int64_t t, const float* g, float* m, float* v, float* p) {
  ForElements(count, [&](std::int64_t b, std::int64_t e) {
    DTSIM_CPU_NS::AdamStep(e - b, lr, beta1, beta2, eps, t, g + b, m + b, v + b, p + b);
  });
}

}  // namespace dtsim::exec::DTSIM_CPU_NS
