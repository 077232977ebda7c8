// Backend: the one interface exec's kernels are called through. The CPU
// backend (exec/kernels/cpu_backend.h, Eigen) and the CUDA backend
// (exec/cuda/cuda_backend.h, cuBLAS plus own kernels) implement it; the model
// runtime (exec/runtime/) only ever sees this class, like ggml's backends.
// Its kernel ops are listed once, with their contracts, in
// exec/backend_ops.inc and expanded here and in each backend's header.
//
// Conventions, for every method:
//   - Tensors are dense, row-major float32 buffers allocated by the same
//     backend (device pointers for CUDA). Images are NCHW.
//   - Integer data (class labels, token ids) is stored as float holding an
//     exact integer (exact below 2^24, far above any vocabulary we use).
//   - Forward methods WRITE their outputs (y = f(x)).
//   - Backward methods ADD into every gradient they produce (dx += ...,
//     dw += ..., db += ...), so micro-batches accumulate weight gradients and
//     a tensor read by several ops sums its gradients; the caller zeroes
//     gradient buffers when a sum should start. A null gradient pointer means
//     "not needed" (first layer's dx, a conv without bias).
//   - Methods may run asynchronously (CUDA stream); Download and Synchronize
//     wait.
//   - Shapes: N = batch, C = channels, H/W = height/width, K = output
//     channels, R/S = kernel height/width.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "models/op.h"

namespace dtsim::exec {

// 2-D convolution, PyTorch Conv2d semantics (zero padding, dilation 1).
// x: (N, C, H, W), w: (K, C/groups, R, S), bias: (K) or null,
// y: (N, K, OH, OW) with OH = (H + 2*pad_h - R) / stride_h + 1.
struct Conv2dArgs {
  std::int64_t n = 1, c = 1, h = 1, w = 1;
  std::int64_t k = 1;
  int r = 1, s = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int groups = 1;
  std::int64_t oh = 1, ow = 1;
};

// Max or average pooling over windows; PyTorch MaxPool2d/AvgPool2d with
// padding and ceil_mode. Padded positions never win a max; averages divide
// by the number of in-bounds elements of the window (TensorFlow 'SAME').
// x: (N, C, H, W), y: (N, C, OH, OW); the caller computes OH/OW.
struct Pool2dArgs {
  std::int64_t n = 1, c = 1, h = 1, w = 1;
  int r = 1, s = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  std::int64_t oh = 1, ow = 1;
};

// Local response normalisation across channels (TensorFlow
// tf.nn.local_response_normalization): for channel c,
//   y = x / (bias + alpha * sum_{c' in [c-radius, c+radius]} x_c'^2)^beta.
// Defaults are the CIFAR-10 tutorial's (cifar10.py: bias 1, alpha 0.001/9,
// beta 0.75). x, y: (N, C, H, W).
struct LrnArgs {
  std::int64_t n = 1, c = 1, h = 1, w = 1;
  int radius = 4;
  float bias = 1.0f;
  float alpha = 0.001f / 9.0f;
  float beta = 0.75f;
};

// Fused scaled-dot-product attention (FlashAttention's contract): queries
// q (n, heads, s, d), keys k (n, kv_heads, s, d), values v (n, kv_heads, s,
// dv), output o (n, heads, s, dv); query head h reads key/value head
// h / (heads / kv_heads) (grouped-query attention). Scores are scale x q.k;
// causal masks key j > query i.
struct AttentionArgs {
  std::int64_t n = 1, heads = 1, kv_heads = 1, s = 1, d = 1, dv = 1;
  bool causal = false;
  float scale = 1.0f;
};

// How MulForward's b is broadcast over a (rows x cols): b of the same
// shape, one value per row (gates over spatial positions, squeeze-and-
// excitation), or one per column (a per-channel scale over positions).
enum class MulBroadcast : std::uint8_t { kNone, kPerRow, kPerColumn };

class Backend {
 public:
  virtual ~Backend() = default;

  // "cpu" or "cuda:0 (NVIDIA H100 ...)".
  virtual std::string Name() const = 0;

  // ---- memory
  // A buffer of `count` floats, uninitialised. Throws on failure.
  virtual float* Allocate(std::int64_t count) = 0;
  virtual void Free(float* p) = 0;
  virtual void Upload(float* dst, const float* host_src, std::int64_t count) = 0;
  virtual void Download(float* host_dst, const float* src, std::int64_t count) = 0;
  virtual void Fill(float* p, std::int64_t count, float value) = 0;
  // dst[i] = src[i] (same backend).
  virtual void Copy(float* dst, const float* src, std::int64_t count) = 0;
  // Waits until every launched method has finished.
  virtual void Synchronize() = 0;
  // True when the backend's buffers are host memory that the host (and MPI)
  // may read and write directly (the CPU backend, whichever ISA build).
  virtual bool HostMemory() const { return false; }

  // ---- device timestamps. An asynchronous backend (CUDA) returns from its
  // methods before the device has run them; the executor then times its
  // tasks by timestamps in the device's own order instead of waiting after
  // each task, which would leave the device idle while the host queues the
  // next one. Mark() queues a timestamp behind the work queued so far and
  // returns its index; once Synchronize() has returned, MarkSeconds(a, b) is
  // the time from mark a to mark b. ClearMarks() forgets every mark. The
  // defaults, for synchronous backends, read the host clock at Mark().
  virtual bool Asynchronous() const { return false; }
  virtual int Mark() {
    host_marks_.push_back(std::chrono::steady_clock::now());
    return static_cast<int>(host_marks_.size()) - 1;
  }
  virtual double MarkSeconds(int a, int b) const {
    return std::chrono::duration<double>(host_marks_.at(static_cast<std::size_t>(b)) -
                                         host_marks_.at(static_cast<std::size_t>(a)))
        .count();
  }
  virtual void ClearMarks() { host_marks_.clear(); }

  // ---- the kernel ops: `virtual void Name(parameters) = 0;` for every entry
  // of exec/backend_ops.inc, where each op's contract is written.
#define DTSIM_BACKEND_OP(name, params) virtual void name params = 0;
#include "exec/backend_ops.inc"

 private:
  std::vector<std::chrono::steady_clock::time_point> host_marks_;  // the default Mark()'s
};

}  // namespace dtsim::exec
