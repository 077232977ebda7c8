// CudaBackend: exec/backend.h on one NVIDIA GPU. GEMMs go to cuBLAS (FP32,
// no TF32, so results match the CPU backend to FP32 rounding); every other
// method is an own kernel (cuda_elementwise.cu, cuda_norm.cu, cuda_conv.cu).
// Convolution is im2col + one cuBLAS GEMM per group and chunk of samples;
// its backward uses col2im as a gather, so no method uses atomics and every
// result is deterministic (bit-identical from run to run on one GPU).
// EmbeddingBackward sorts (id, position) pairs stably by id on the GPU and
// sums each table row's positions in increasing order, the order of a
// sequential loop over positions.
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

  // The kernel ops of exec/backend_ops.inc, with the contracts written there.
#define DTSIM_BACKEND_OP(name, params) void name params override;
#include "exec/backend_ops.inc"

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
