// Backend: the one interface exec's kernels are called through. The CPU
// backend (exec/kernels/cpu_backend.h, Eigen) and the CUDA backend
// (exec/cuda/cuda_backend.h, cuBLAS plus own kernels) implement it; the model
// runtime (exec/runtime/) only ever sees this class, like ggml's backends.
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

// False for the model op kinds no backend has kernels for yet (the
// simulator prices them; ModelRuntime refuses them, calibration skips them).
inline bool HasKernels(models::OpKind kind) {
  switch (kind) {
    case models::OpKind::kSigmoid:
    case models::OpKind::kSilu:
    case models::OpKind::kMul:
    case models::OpKind::kRmsNorm:
    case models::OpKind::kRotary:
    case models::OpKind::kAttention:
    case models::OpKind::kRecurrent:
      return false;
    default:
      return true;
  }
}

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

  // ---- linear algebra (row-major)
  // C (M x N) = alpha * op(A) * op(B) + beta * C, where op(A) is M x K
  // (A stored K x M when trans_a) and op(B) is K x N (B stored N x K when
  // trans_b).
  virtual void Gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
                    std::int64_t k, float alpha, const float* a, const float* b, float beta,
                    float* c) = 0;
  // `batch` independent Gemms; matrix i starts at a + i * stride_a, etc.
  virtual void GemmBatched(std::int64_t batch, bool trans_a, bool trans_b, std::int64_t m,
                           std::int64_t n, std::int64_t k, float alpha, const float* a,
                           std::int64_t stride_a, const float* b, std::int64_t stride_b,
                           float beta, float* c, std::int64_t stride_c) = 0;
  // y (rows x cols) += bias (cols) on every row.
  virtual void AddBias(float* y, const float* bias, std::int64_t rows, std::int64_t cols) = 0;
  // dbias (cols) += column sums of dy (rows x cols).
  virtual void BiasGrad(const float* dy, std::int64_t rows, std::int64_t cols,
                        float* dbias) = 0;
  // y += alpha * x.
  virtual void Axpy(std::int64_t count, float alpha, const float* x, float* y) = 0;
  // x *= alpha.
  virtual void Scale(std::int64_t count, float alpha, float* x) = 0;
  // y = a + b.
  virtual void Add(std::int64_t count, const float* a, const float* b, float* y) = 0;
  // Copies a rows x cols block: dst[i * dst_stride + j] (=, or += when
  // accumulate) src[i * src_stride + j]. Concat, slice and their gradients.
  virtual void Copy2D(std::int64_t rows, std::int64_t cols, const float* src,
                      std::int64_t src_stride, float* dst, std::int64_t dst_stride,
                      bool accumulate) = 0;
  // (N, S, heads, D) <-> (N, heads, S, D). SplitHeads writes y; MergeHeads
  // is its inverse (writes). Their gradients are each other, so backward
  // of SplitHeads is MergeHeads accumulated: pass accumulate = true.
  virtual void SplitHeads(std::int64_t n, std::int64_t s, std::int64_t heads, std::int64_t d,
                          const float* x, float* y, bool accumulate) = 0;
  virtual void MergeHeads(std::int64_t n, std::int64_t s, std::int64_t heads, std::int64_t d,
                          const float* x, float* y, bool accumulate) = 0;

  // ---- convolution and pooling
  virtual void Conv2dForward(const Conv2dArgs& a, const float* x, const float* w,
                             const float* bias, float* y) = 0;
  // dx (may be null), dw, dbias (may be null) accumulate.
  virtual void Conv2dBackward(const Conv2dArgs& a, const float* x, const float* w,
                              const float* dy, float* dx, float* dw, float* dbias) = 0;
  virtual void MaxPoolForward(const Pool2dArgs& a, const float* x, float* y) = 0;
  // The gradient goes to the first maximum of each window (row-major order).
  virtual void MaxPoolBackward(const Pool2dArgs& a, const float* x, const float* dy,
                               float* dx) = 0;
  virtual void AvgPoolForward(const Pool2dArgs& a, const float* x, float* y) = 0;
  virtual void AvgPoolBackward(const Pool2dArgs& a, const float* dy, float* dx) = 0;

  // ---- elementwise activations
  virtual void ReluForward(std::int64_t count, const float* x, float* y) = 0;
  // Uses y (the forward output): dx += dy where y > 0.
  virtual void ReluBackward(std::int64_t count, const float* y, const float* dy,
                            float* dx) = 0;
  // GELU, tanh approximation (GPT-2, BERT implementations):
  //   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  virtual void GeluForward(std::int64_t count, const float* x, float* y) = 0;
  virtual void GeluBackward(std::int64_t count, const float* x, const float* dy,
                            float* dx) = 0;
  virtual void TanhForward(std::int64_t count, const float* x, float* y) = 0;
  virtual void TanhBackward(std::int64_t count, const float* y, const float* dy,
                            float* dx) = 0;
  // Inverted dropout: mask[i] = (Uniform(seed, offset + i) >= rate) / (1 - rate),
  // y = x * mask, with exec/counter_rng.h's uniform so CPU and CUDA draw the
  // same masks. rate = 0 gives mask 1.
  virtual void DropoutForward(std::int64_t count, float rate, std::uint64_t seed,
                              std::uint64_t offset, const float* x, float* mask,
                              float* y) = 0;
  virtual void DropoutBackward(std::int64_t count, const float* mask, const float* dy,
                               float* dx) = 0;

  // ---- normalisation
  // Softmax over the last dimension of a (rows x cols) matrix. causal: rows
  // are grouped in blocks of `cols` query positions (attention scores
  // (heads, S, S) per sample), and column j of query row i (i = row % cols)
  // is masked (probability 0) when j > i.
  virtual void SoftmaxForward(std::int64_t rows, std::int64_t cols, bool causal,
                              const float* x, float* y) = 0;
  virtual void SoftmaxBackward(std::int64_t rows, std::int64_t cols, const float* y,
                               const float* dy, float* dx) = 0;
  // Layer norm over the last dimension with gain and bias (cols each):
  // y = (x - mean) * rstd * gamma + beta; mean and rstd (rows each) are
  // written for backward.
  virtual void LayerNormForward(std::int64_t rows, std::int64_t cols, float eps,
                                const float* x, const float* gamma, const float* beta,
                                float* y, float* mean, float* rstd) = 0;
  virtual void LayerNormBackward(std::int64_t rows, std::int64_t cols, const float* x,
                                 const float* gamma, const float* mean, const float* rstd,
                                 const float* dy, float* dx, float* dgamma,
                                 float* dbeta) = 0;
  // Batch norm in training mode over (N, spatial) per channel, x: (N, C,
  // spatial); batch statistics (biased variance), mean/rstd (C) written.
  virtual void BatchNormForward(std::int64_t n, std::int64_t c, std::int64_t spatial,
                                float eps, const float* x, const float* gamma,
                                const float* beta, float* y, float* mean, float* rstd) = 0;
  virtual void BatchNormBackward(std::int64_t n, std::int64_t c, std::int64_t spatial,
                                 const float* x, const float* gamma, const float* mean,
                                 const float* rstd, const float* dy, float* dx,
                                 float* dgamma, float* dbeta) = 0;
  virtual void LrnForward(const LrnArgs& a, const float* x, float* y) = 0;
  virtual void LrnBackward(const LrnArgs& a, const float* x, const float* y, const float* dy,
                           float* dx) = 0;

  // ---- loss and embedding
  // Softmax cross-entropy of logits (rows x classes) against labels (rows,
  // integer-valued floats): probs (rows x classes) and loss (rows) written.
  virtual void SoftmaxCrossEntropyForward(std::int64_t rows, std::int64_t classes,
                                          const float* logits, const float* labels,
                                          float* probs, float* loss) = 0;
  // dlogits += scale * (probs - onehot(labels)); scale is usually 1/batch
  // (the gradient of the mean loss).
  virtual void SoftmaxCrossEntropyBackward(std::int64_t rows, std::int64_t classes,
                                           const float* probs, const float* labels,
                                           float scale, float* dlogits) = 0;
  // y (count x hidden) = table[ids[i]] rows; ids are integer-valued floats.
  virtual void EmbeddingForward(std::int64_t count, std::int64_t hidden, const float* ids,
                                const float* table, float* y) = 0;
  virtual void EmbeddingBackward(std::int64_t count, std::int64_t hidden, const float* ids,
                                 const float* dy, float* dtable) = 0;

  // ---- optimizers (in place on parameter buffers)
  // p -= lr * (g + weight_decay * p).
  virtual void SgdStep(std::int64_t count, float lr, float weight_decay, const float* g,
                       float* p) = 0;
  // v = momentum * v + g; p -= lr * v (PyTorch SGD with momentum, dampening 0).
  virtual void MomentumStep(std::int64_t count, float lr, float momentum, const float* g,
                            float* v, float* p) = 0;
  // Adam (Kingma & Ba 2015, Algorithm 1) at 1-based step t:
  //   m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
  //   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
  virtual void AdamStep(std::int64_t count, float lr, float beta1, float beta2, float eps,
                        std::int64_t t, const float* g, float* m, float* v, float* p) = 0;

 private:
  std::vector<std::chrono::steady_clock::time_point> host_marks_;  // the default Mark()'s
};

}  // namespace dtsim::exec
