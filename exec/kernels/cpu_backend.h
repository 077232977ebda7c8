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

  // The kernel ops of exec/backend_ops.inc, with the contracts written there.
#define DTSIM_BACKEND_OP(name, params) void name params override;
#include "exec/backend_ops.inc"

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
