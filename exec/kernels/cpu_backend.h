// CpuBackend: the Backend on the host CPU, float32, calling the reference
// kernels of cpu_kernels.h. One thread by default (ranks are processes, one
// core each; `threads` for more) and deterministic: every method runs synchronously, and the same
// inputs give the same bits run after run. The portable build
// (exec::CpuBackend) gives the same bits on every x86-64 machine; the
// instruction-set builds (cpu_isa.h) on every machine that runs them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exec/backend.h"
#include "exec/kernels/cpu_namespace.h"
#include "exec/kernels/cpu_threads.h"

// One class per instruction-set build of the kernels (cpu_kernels.h,
// cpu_isa.h); exec::CpuBackend is the portable build's.
namespace dtsim::exec::DTSIM_CPU_NS {

class CpuBackend final : public Backend {
 public:
  // `threads` >= 1 run the GEMMs (split over column blocks of C, whole
  // blocks of Eigen's fixed 192-row panels, so the bits are those of one
  // thread), batched GEMMs (over the batch) and convolutions (over samples;
  // weight gradients summed per thread, then over threads in order),
  // element-wise kernels and optimizer steps (over blocks of 64 elements,
  // so each element takes the path it takes on one thread), pooling and LRN
  // (over samples), softmax, layer norm's forward and bias additions (over
  // rows). Reductions across samples or rows (batch norm, bias and
  // layer-norm parameter gradients, the loss) run on the calling thread.
  // Results are deterministic for a given thread count; only convolutions'
  // gradients differ between thread counts, in rounding.
  explicit CpuBackend(int threads = 1);
  int threads() const { return pool_ ? pool_->size() : 1; }

  // "cpu" for the portable build, "cpu-<isa>" for the others.
  std::string Name() const override;
  bool HostMemory() const override { return true; }

  // Buffers are 64-byte aligned (one cache line, an AVX-512 vector); count 0
  // gives a valid, freeable pointer. Throws std::bad_alloc on failure.
  float* Allocate(std::int64_t count) override;
  // p from Allocate, or null.
  void Free(float* p) override;
  void Upload(float* dst, const float* host_src, std::int64_t count) override;
  void Download(float* host_dst, const float* src, std::int64_t count) override;
  void Fill(float* p, std::int64_t count, float value) override;
  void Copy(float* dst, const float* src, std::int64_t count) override;
  // Nothing to wait for: every method has finished when it returns.
  void Synchronize() override {}

  void Gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
            float alpha, const float* a, const float* b, float beta, float* c) override;
  void GemmBatched(std::int64_t batch, bool trans_a, bool trans_b, std::int64_t m,
                   std::int64_t n, std::int64_t k, float alpha, const float* a,
                   std::int64_t stride_a, const float* b, std::int64_t stride_b, float beta,
                   float* c, std::int64_t stride_c) override;
  void AddBias(float* y, const float* bias, std::int64_t rows, std::int64_t cols) override;
  void BiasGrad(const float* dy, std::int64_t rows, std::int64_t cols, float* dbias) override;
  void Axpy(std::int64_t count, float alpha, const float* x, float* y) override;
  void Scale(std::int64_t count, float alpha, float* x) override;
  void Add(std::int64_t count, const float* a, const float* b, float* y) override;
  void Copy2D(std::int64_t rows, std::int64_t cols, const float* src, std::int64_t src_stride,
              float* dst, std::int64_t dst_stride, bool accumulate) override;
  void SplitHeads(std::int64_t n, std::int64_t s, std::int64_t heads, std::int64_t d,
                  const float* x, float* y, bool accumulate) override;
  void MergeHeads(std::int64_t n, std::int64_t s, std::int64_t heads, std::int64_t d,
                  const float* x, float* y, bool accumulate) override;

  void Conv2dForward(const Conv2dArgs& a, const float* x, const float* w, const float* bias,
                     float* y) override;
  void Conv2dBackward(const Conv2dArgs& a, const float* x, const float* w, const float* dy,
                      float* dx, float* dw, float* dbias) override;
  void MaxPoolForward(const Pool2dArgs& a, const float* x, float* y) override;
  void MaxPoolBackward(const Pool2dArgs& a, const float* x, const float* dy,
                       float* dx) override;
  void AvgPoolForward(const Pool2dArgs& a, const float* x, float* y) override;
  void AvgPoolBackward(const Pool2dArgs& a, const float* dy, float* dx) override;

  void ReluForward(std::int64_t count, const float* x, float* y) override;
  void ReluBackward(std::int64_t count, const float* y, const float* dy, float* dx) override;
  void GeluForward(std::int64_t count, const float* x, float* y) override;
  void GeluBackward(std::int64_t count, const float* x, const float* dy, float* dx) override;
  void TanhForward(std::int64_t count, const float* x, float* y) override;
  void TanhBackward(std::int64_t count, const float* y, const float* dy, float* dx) override;
  void DropoutForward(std::int64_t count, float rate, std::uint64_t seed, std::uint64_t offset,
                      const float* x, float* mask, float* y) override;
  void DropoutBackward(std::int64_t count, const float* mask, const float* dy,
                       float* dx) override;

  void SoftmaxForward(std::int64_t rows, std::int64_t cols, bool causal, const float* x,
                      float* y) override;
  void SoftmaxBackward(std::int64_t rows, std::int64_t cols, const float* y, const float* dy,
                       float* dx) override;
  void LayerNormForward(std::int64_t rows, std::int64_t cols, float eps, const float* x,
                        const float* gamma, const float* beta, float* y, float* mean,
                        float* rstd) override;
  void LayerNormBackward(std::int64_t rows, std::int64_t cols, const float* x,
                         const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, float* dgamma, float* dbeta) override;
  void BatchNormForward(std::int64_t n, std::int64_t c, std::int64_t spatial, float eps,
                        const float* x, const float* gamma, const float* beta, float* y,
                        float* mean, float* rstd) override;
  void BatchNormBackward(std::int64_t n, std::int64_t c, std::int64_t spatial, const float* x,
                         const float* gamma, const float* mean, const float* rstd,
                         const float* dy, float* dx, float* dgamma, float* dbeta) override;
  void LrnForward(const LrnArgs& a, const float* x, float* y) override;
  void LrnBackward(const LrnArgs& a, const float* x, const float* y, const float* dy,
                   float* dx) override;

  void SoftmaxCrossEntropyForward(std::int64_t rows, std::int64_t classes, const float* logits,
                                  const float* labels, float* probs, float* loss) override;
  void SoftmaxCrossEntropyBackward(std::int64_t rows, std::int64_t classes, const float* probs,
                                   const float* labels, float scale, float* dlogits) override;
  void EmbeddingForward(std::int64_t count, std::int64_t hidden, const float* ids,
                        const float* table, float* y) override;
  void EmbeddingBackward(std::int64_t count, std::int64_t hidden, const float* ids,
                         const float* dy, float* dtable) override;

  void SgdStep(std::int64_t count, float lr, float weight_decay, const float* g,
               float* p) override;
  void MomentumStep(std::int64_t count, float lr, float momentum, const float* g, float* v,
                    float* p) override;
  void AdamStep(std::int64_t count, float lr, float beta1, float beta2, float eps,
                std::int64_t t, const float* g, float* m, float* v, float* p) override;

 private:
  std::vector<float> scratch_;  // convolutions' im2col columns, reused
  std::unique_ptr<WorkerPool> pool_;  // null with one thread
  // Per thread beyond the first: im2col columns, and weight and bias
  // gradient partial sums of a convolution.
  std::vector<std::vector<float>> part_scratch_, part_dw_, part_db_;

  // Runs fn(begin, end) over [0, units) on the pool, in parts of whole
  // `align`-unit blocks holding at least `min_units` units each (one part,
  // on this thread, when the work is too small to share).
  void ForParts(std::int64_t units, std::int64_t min_units, std::int64_t align,
                const std::function<void(std::int64_t, std::int64_t)>& fn);
  // Element-wise kernels: blocks of 64 elements, 32,768 at least per part.
  void ForElements(std::int64_t count, const std::function<void(std::int64_t, std::int64_t)>& fn) {
    ForParts(count, 32768, 64, fn);
  }
  // Kernels per sample or row of `elements_each` elements.
  void ForItems(std::int64_t items, std::int64_t elements_each,
                const std::function<void(std::int64_t, std::int64_t)>& fn) {
    ForParts(items, std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(1, elements_each)), 1,
             fn);
  }
};

// A CpuBackend of this build on `threads` threads (what cpu_isa.cc calls
// for each build).
std::unique_ptr<Backend> NewCpuBackend(int threads);

}  // namespace dtsim::exec::DTSIM_CPU_NS

#ifndef DTSIM_CPU_ISA_VARIANT
namespace dtsim::exec {
using cpu::CpuBackend;
}  // namespace dtsim::exec
#endif
