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

void CpuBackend::AddBias(float* y, const float* bias, std::int64_t rows, std::int64_t cols) {
  DTSIM_CPU_NS::AddBias(y, bias, rows, cols);
}

void CpuBackend::BiasGrad(const float* dy, std::int64_t rows, std::int64_t cols,
                          float* dbias) {
  DTSIM_CPU_NS::BiasGrad(dy, rows, cols, dbias);
}

void CpuBackend::Axpy(std::int64_t count, float alpha, const float* x, float* y) {
  DTSIM_CPU_NS::Axpy(count, alpha, x, y);
}

void CpuBackend::Scale(std::int64_t count, float alpha, float* x) {
  DTSIM_CPU_NS::Scale(count, alpha, x);
}

void CpuBackend::Add(std::int64_t count, const float* a, const float* b, float* y) {
  DTSIM_CPU_NS::Add(count, a, b, y);
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

void CpuBackend::MaxPoolForward(const Pool2dArgs& a, const float* x, float* y) {
  DTSIM_CPU_NS::MaxPoolForward(a, x, y);
}

void CpuBackend::MaxPoolBackward(const Pool2dArgs& a, const float* x, const float* dy,
                                 float* dx) {
  DTSIM_CPU_NS::MaxPoolBackward(a, x, dy, dx);
}

void CpuBackend::AvgPoolForward(const Pool2dArgs& a, const float* x, float* y) {
  DTSIM_CPU_NS::AvgPoolForward(a, x, y);
}

void CpuBackend::AvgPoolBackward(const Pool2dArgs& a, const float* dy, float* dx) {
  DTSIM_CPU_NS::AvgPoolBackward(a, dy, dx);
}

void CpuBackend::ReluForward(std::int64_t count, const float* x, float* y) {
  DTSIM_CPU_NS::ReluForward(count, x, y);
}

void CpuBackend::ReluBackward(std::int64_t count, const float* y, const float* dy,
                              float* dx) {
  DTSIM_CPU_NS::ReluBackward(count, y, dy, dx);
}

void CpuBackend::GeluForward(std::int64_t count, const float* x, float* y) {
  DTSIM_CPU_NS::GeluForward(count, x, y);
}

void CpuBackend::GeluBackward(std::int64_t count, const float* x, const float* dy,
                              float* dx) {
  DTSIM_CPU_NS::GeluBackward(count, x, dy, dx);
}

void CpuBackend::TanhForward(std::int64_t count, const float* x, float* y) {
  DTSIM_CPU_NS::TanhForward(count, x, y);
}

void CpuBackend::TanhBackward(std::int64_t count, const float* y, const float* dy,
                              float* dx) {
  DTSIM_CPU_NS::TanhBackward(count, y, dy, dx);
}

void CpuBackend::DropoutForward(std::int64_t count, float rate, std::uint64_t seed,
                                std::uint64_t offset, const float* x, float* mask, float* y) {
  DTSIM_CPU_NS::DropoutForward(count, rate, seed, offset, x, mask, y);
}

void CpuBackend::DropoutBackward(std::int64_t count, const float* mask, const float* dy,
                                 float* dx) {
  DTSIM_CPU_NS::DropoutBackward(count, mask, dy, dx);
}

void CpuBackend::SoftmaxForward(std::int64_t rows, std::int64_t cols, bool causal,
                                const float* x, float* y) {
  DTSIM_CPU_NS::SoftmaxForward(rows, cols, causal, x, y);
}

void CpuBackend::SoftmaxBackward(std::int64_t rows, std::int64_t cols, const float* y,
                                 const float* dy, float* dx) {
  DTSIM_CPU_NS::SoftmaxBackward(rows, cols, y, dy, dx);
}

void CpuBackend::LayerNormForward(std::int64_t rows, std::int64_t cols, float eps,
                                  const float* x, const float* gamma, const float* beta,
                                  float* y, float* mean, float* rstd) {
  DTSIM_CPU_NS::LayerNormForward(rows, cols, eps, x, gamma, beta, y, mean, rstd);
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
  DTSIM_CPU_NS::LrnForward(a, x, y);
}

void CpuBackend::LrnBackward(const LrnArgs& a, const float* x, const float* y,
                             const float* dy, float* dx) {
  DTSIM_CPU_NS::LrnBackward(a, x, y, dy, dx);
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
  DTSIM_CPU_NS::SgdStep(count, lr, weight_decay, g, p);
}

void CpuBackend::MomentumStep(std::int64_t count, float lr, float momentum, const float* g,
                              float* v, float* p) {
  DTSIM_CPU_NS::MomentumStep(count, lr, momentum, g, v, p);
}

void CpuBackend::AdamStep(std::int64_t count, float lr, float beta1, float beta2, float eps,
                          std::int64_t t, const float* g, float* m, float* v, float* p) {
  DTSIM_CPU_NS::AdamStep(count, lr, beta1, beta2, eps, t, g, m, v, p);
}

}  // namespace dtsim::exec::DTSIM_CPU_NS
