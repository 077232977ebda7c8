// CudaBackend: exec/backend.h on one NVIDIA GPU. GEMMs go to cuBLAS (FP32,
// no TF32, so results match the CPU backend to FP32 rounding); every other
// method is an own kernel (cuda_elementwise.cu, cuda_norm.cu, cuda_conv.cu).
// Convolution is im2col + one cuBLAS GEMM per group and chunk of samples;
// its backward uses col2im as a gather, so no method uses atomics and every
// result is deterministic (bit-identical from run to run on one GPU).
//
// All work goes to one CUDA stream owned by the backend, in call order;
// Download and Synchronize wait for it. A backend may be used from one host
// thread at a time. Every method makes the backend's device current first,
// so several backends (one per GPU) can share a thread.
//
// This header has no CUDA types, so C++20 code includes it without nvcc;
// CUstream_st and cublasContext are the opaque structs behind cudaStream_t
// and cublasHandle_t.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/backend.h"

struct CUstream_st;
struct cublasContext;
struct CUevent_st;

namespace dtsim::exec {

class CudaBackend final : public Backend {
 public:
  // Number of GPUs visible to the CUDA runtime; 0 (never an exception) when
  // there is no driver or no device, with the reason in `why_none` if given.
  static int VisibleDevices(std::string* why_none = nullptr);

  // Uses GPU `device` (0-based, < VisibleDevices()): creates a stream and a
  // cuBLAS handle on it. Throws std::runtime_error on failure.
  explicit CudaBackend(int device = 0);
  // Waits for pending work, then frees the workspace, handle and stream.
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  int device() const { return device_; }
  // The stream every method runs on (a cudaStream_t), for NCCL and other
  // libraries that must be ordered with this backend's work.
  CUstream_st* stream() const { return stream_; }

  std::string Name() const override;

  // cudaMalloc; count 0 gives a valid, freeable pointer (as CpuBackend).
  float* Allocate(std::int64_t count) override;
  // Waits for the device (cudaFree synchronises), so pending work on p is
  // safe.
  void Free(float* p) override;
  // Ordered on the stream. From pageable host memory (std::vector, new) the
  // call returns once host_src has been staged, so it may be reused at once;
  // from pinned memory (cudaMallocHost) it must stay unchanged until the
  // next Synchronize.
  void Upload(float* dst, const float* host_src, std::int64_t count) override;
  // Waits for every launched method, then copies.
  void Download(float* host_dst, const float* src, std::int64_t count) override;
  void Fill(float* p, std::int64_t count, float value) override;
  void Copy(float* dst, const float* src, std::int64_t count) override;
  void Synchronize() override;
  // Timestamps are CUDA events recorded on the stream (a pool reused after
  // ClearMarks, so a steady state creates none).
  bool Asynchronous() const override { return true; }
  int Mark() override;
  double MarkSeconds(int a, int b) const override;
  void ClearMarks() override { marks_used_ = 0; }

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
  // Deterministic: (id, position) pairs are sorted stably by id on the GPU
  // and each table row sums its positions in increasing order, the same
  // order as a sequential loop over positions.
  void EmbeddingBackward(std::int64_t count, std::int64_t hidden, const float* ids,
                         const float* dy, float* dtable) override;

  void SgdStep(std::int64_t count, float lr, float weight_decay, const float* g,
               float* p) override;
  void MomentumStep(std::int64_t count, float lr, float momentum, const float* g, float* v,
                    float* p) override;
  void AdamStep(std::int64_t count, float lr, float beta1, float beta2, float eps,
                std::int64_t t, const float* g, float* m, float* v, float* p) override;

 private:
  // Makes device_ current on the calling thread.
  void UseDevice() const;
  // Scratch memory of at least `bytes`, valid until the next call of a
  // method (work on the stream is ordered, so consecutive methods may reuse
  // it). Grows by synchronising and reallocating; never shrinks.
  void* Workspace(std::size_t bytes);

  int device_;
  std::string device_name_;      // from cudaGetDeviceProperties
  CUstream_st* stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::vector<CUevent_st*> marks_;  // cudaEvent_t; the first marks_used_ are in use
  std::size_t marks_used_ = 0;
};

}  // namespace dtsim::exec
