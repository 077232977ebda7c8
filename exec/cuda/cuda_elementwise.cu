// CudaBackend's elementwise and layout methods: bias, BLAS-1, copies and
// head permutations, activations, dropout and optimizers. One thread per
// element in grid-stride loops.
#include <cuda_runtime.h>

#include <cmath>

#include "exec/counter_rng.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_launch.cuh"

namespace dtsim::exec {
namespace {

using cuda::BlocksFor;
using cuda::kThreads;
using cuda::BlocksForItems;

// ---- bias, BLAS-1, copies

__global__ void AddBiasKernel(float* y, const float* bias, std::int64_t rows,
                              std::int64_t cols) {
  DTSIM_GRID_LOOP(i, rows * cols) y[i] += bias[i % cols];
}

// Column sums of a (rows x cols) matrix added into out (cols). Block (32, 8)
// owns 32 columns; its 8 thread rows stride over the matrix rows, then the 8
// partial sums are added in a fixed order (deterministic).
constexpr int kColTile = 32, kRowLanes = 8;
__global__ void ColumnSumKernel(const float* m, std::int64_t rows, std::int64_t cols,
                                float* out) {
  __shared__ float partial[kRowLanes][kColTile];
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  float sum = 0.0f;
  if (col < cols)
    for (std::int64_t r = threadIdx.y; r < rows; r += kRowLanes) sum += m[r * cols + col];
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total = 0.0f;
    for (int j = 0; j < kRowLanes; ++j) total += partial[j][threadIdx.x];
    out[col] += total;
  }
}

__global__ void AxpyKernel(std::int64_t count, float alpha, const float* x, float* y) {
  DTSIM_GRID_LOOP(i, count) y[i] += alpha * x[i];
}

__global__ void ScaleKernel(std::int64_t count, float alpha, float* x) {
  DTSIM_GRID_LOOP(i, count) x[i] *= alpha;
}

__global__ void AddKernel(std::int64_t count, const float* a, const float* b, float* y) {
  DTSIM_GRID_LOOP(i, count) y[i] = a[i] + b[i];
}

// The index kernels below divide per element. They take the index type
// as a template argument: unsigned 32-bit where every index fits (a 64-bit
// division is a long emulated sequence on the GPU), else 64-bit. Counts up
// to 2^31 leave room for the grid-stride step (at most kMaxBlocks x
// kThreads = 2^28) without wrapping.
bool IndexFits32(std::int64_t count) { return count <= std::int64_t{1} << 31; }

template <class I>
__global__ void Copy2DKernel(I rows, I cols, const float* src, std::int64_t src_stride,
                             float* dst, std::int64_t dst_stride, bool accumulate) {
  for (I i = blockIdx.x * blockDim.x + threadIdx.x; i < rows * cols;
       i += static_cast<I>(blockDim.x) * gridDim.x) {
    const I r = i / cols, c = i - r * cols;
    const float v = src[static_cast<std::int64_t>(r) * src_stride + c];
    float& d = dst[static_cast<std::int64_t>(r) * dst_stride + c];
    d = accumulate ? d + v : v;
  }
}

// y (N, B, A, D) (=, +=) x (N, A, B, D): swaps the two middle dimensions.
template <class I>
__global__ void SwapMiddleKernel(I n, I a, I b, I d, const float* x, float* y,
                                 bool accumulate) {
  for (I i = blockIdx.x * blockDim.x + threadIdx.x; i < n * a * b * d;
       i += static_cast<I>(blockDim.x) * gridDim.x) {
    // i indexes y: (ni, bi, ai, di).
    const I di = i % d, rest = i / d;
    const I ai = rest % a, rest2 = rest / a;
    const I bi = rest2 % b, ni = rest2 / b;
    const float v = x[((ni * a + ai) * b + bi) * d + di];
    y[i] = accumulate ? y[i] + v : v;
  }
}

// ---- activations

__global__ void ReluForwardKernel(std::int64_t count, const float* x, float* y) {
  DTSIM_GRID_LOOP(i, count) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void ReluBackwardKernel(std::int64_t count, const float* y, const float* dy,
                                   float* dx) {
  DTSIM_GRID_LOOP(i, count) if (y[i] > 0.0f) dx[i] += dy[i];
}

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

__global__ void GeluForwardKernel(std::int64_t count, const float* x, float* y) {
  DTSIM_GRID_LOOP(i, count) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
    y[i] = 0.5f * v * (1.0f + tanhf(u));
  }
}

// d/dx [0.5 x (1 + tanh u)] = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,
// du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
__global__ void GeluBackwardKernel(std::int64_t count, const float* x, const float* dy,
                                   float* dx) {
  DTSIM_GRID_LOOP(i, count) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
    const float t = tanhf(u);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
    dx[i] += dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
  }
}

__global__ void TanhForwardKernel(std::int64_t count, const float* x, float* y) {
  DTSIM_GRID_LOOP(i, count) y[i] = tanhf(x[i]);
}

__global__ void TanhBackwardKernel(std::int64_t count, const float* y, const float* dy,
                                   float* dx) {
  DTSIM_GRID_LOOP(i, count) dx[i] += dy[i] * (1.0f - y[i] * y[i]);
}

__global__ void DropoutForwardKernel(std::int64_t count, float rate, float keep_scale,
                                     std::uint64_t seed, std::uint64_t offset, const float* x,
                                     float* mask, float* y) {
  DTSIM_GRID_LOOP(i, count) {
    const bool keep = CounterUniform(seed, offset + static_cast<std::uint64_t>(i)) >= rate;
    const float m = keep ? keep_scale : 0.0f;
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

__global__ void MulAccumulateKernel(std::int64_t count, const float* a, const float* b,
                                    float* y) {
  DTSIM_GRID_LOOP(i, count) y[i] += a[i] * b[i];
}

// ---- optimizers

__global__ void SgdKernel(std::int64_t count, float lr, float weight_decay, const float* g,
                          float* p) {
  DTSIM_GRID_LOOP(i, count) p[i] -= lr * (g[i] + weight_decay * p[i]);
}

__global__ void MomentumKernel(std::int64_t count, float lr, float momentum, const float* g,
                               float* v, float* p) {
  DTSIM_GRID_LOOP(i, count) {
    const float vi = momentum * v[i] + g[i];
    v[i] = vi;
    p[i] -= lr * vi;
  }
}

__global__ void AdamKernel(std::int64_t count, float lr, float beta1, float beta2, float eps,
                           float bias_correction1, float bias_correction2, const float* g,
                           float* m, float* v, float* p) {
  DTSIM_GRID_LOOP(i, count) {
    const float gi = g[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    const float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * (mi / bias_correction1) / (sqrtf(vi / bias_correction2) + eps);
  }
}


__device__ inline float Logistic(float x) { return 1.0f / (1.0f + expf(-x)); }

__global__ void SigmoidForwardKernel(std::int64_t count, const float* x, float* y) {
  DTSIM_GRID_LOOP(i, count) y[i] = Logistic(x[i]);
}

__global__ void SigmoidBackwardKernel(std::int64_t count, const float* y, const float* dy,
                                      float* dx) {
  DTSIM_GRID_LOOP(i, count) dx[i] += dy[i] * y[i] * (1.0f - y[i]);
}

__global__ void SiluForwardKernel(std::int64_t count, const float* x, float* y) {
  DTSIM_GRID_LOOP(i, count) y[i] = x[i] * Logistic(x[i]);
}

__global__ void SiluBackwardKernel(std::int64_t count, const float* x, const float* dy,
                                   float* dx) {
  DTSIM_GRID_LOOP(i, count) {
    const float s = Logistic(x[i]);
    dx[i] += dy[i] * s * (1.0f + x[i] * (1.0f - s));
  }
}

__device__ inline std::int64_t BroadcastIndex(MulBroadcast broadcast, std::int64_t k,
                                              std::int64_t cols) {
  return broadcast == MulBroadcast::kNone ? k
         : broadcast == MulBroadcast::kPerRow ? k / cols
                                               : k % cols;
}

__global__ void MulForwardKernel(std::int64_t count, MulBroadcast broadcast, std::int64_t cols,
                                 const float* a, const float* b, float* y) {
  DTSIM_GRID_LOOP(k, count) y[k] = a[k] * b[BroadcastIndex(broadcast, k, cols)];
}

__global__ void MulBackwardDaKernel(std::int64_t count, MulBroadcast broadcast, std::int64_t cols,
                                    const float* b, const float* dy, float* da) {
  DTSIM_GRID_LOOP(k, count) da[k] += dy[k] * b[BroadcastIndex(broadcast, k, cols)];
}

// db for b broadcast per row (one block per row, BlockSum) or per column
// (one thread per column, rows in order): sums in a fixed order.
__global__ void MulBackwardDbPerRowKernel(std::int64_t rows, std::int64_t cols, const float* a,
                                          const float* dy, float* db) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float sum = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      sum += dy[row * cols + j] * a[row * cols + j];
    sum = cuda::BlockSum(sum);
    if (threadIdx.x == 0) db[row] += sum;
  }
}

__global__ void MulBackwardDbPerColumnKernel(std::int64_t rows, std::int64_t cols,
                                             const float* a, const float* dy, float* db) {
  DTSIM_GRID_LOOP(j, cols) {
    float sum = 0.0f;
    for (std::int64_t r = 0; r < rows; ++r) sum += dy[r * cols + j] * a[r * cols + j];
    db[j] += sum;
  }
}

// One thread per pair (i, i + d/2) of a row; the angle in double, as the
// CPU kernel computes it (exec/kernels/cpu_gates.cc).
__global__ void RotaryKernel(std::int64_t pairs, std::int64_t s, std::int64_t d, const float* x,
                             float* y, double sign, bool accumulate) {
  DTSIM_GRID_LOOP(k, pairs) {
    const std::int64_t half = d / 2, row = k / half, i = k % half, p = row % s;
    const double theta = static_cast<double>(p) *
                         pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    const double c = cos(theta), sn = sign * sin(theta);
    const float* in = x + row * d;
    float* out = y + row * d;
    const float lo = static_cast<float>(in[i] * c - in[i + half] * sn);
    const float hi = static_cast<float>(in[i + half] * c + in[i] * sn);
    out[i] = accumulate ? out[i] + lo : lo;
    out[i + half] = accumulate ? out[i + half] + hi : hi;
  }
}

}  // namespace

// Elementwise launch over `count` items on the backend's stream.
#define DTSIM_LAUNCH_ELEMENTWISE(kernel, count, ...)                            \
  do {                                                                          \
    if ((count) <= 0) return;                                                   \
    UseDevice();                                                                \
    kernel<<<BlocksFor(count), kThreads, 0, stream_>>>(__VA_ARGS__);            \
    DTSIM_CUDA_CHECK_LAUNCH();                                                  \
  } while (0)

void CudaBackend::AddBias(float* y, const float* bias, std::int64_t rows, std::int64_t cols) {
  DTSIM_LAUNCH_ELEMENTWISE(AddBiasKernel, rows * cols, y, bias, rows, cols);
}

void CudaBackend::BiasGrad(const float* dy, std::int64_t rows, std::int64_t cols,
                           float* dbias) {
  if (!dbias || rows <= 0 || cols <= 0) return;
  UseDevice();
  const auto blocks = static_cast<unsigned int>((cols + kColTile - 1) / kColTile);
  ColumnSumKernel<<<blocks, dim3(kColTile, kRowLanes), 0, stream_>>>(dy, rows, cols, dbias);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::Axpy(std::int64_t count, float alpha, const float* x, float* y) {
  DTSIM_LAUNCH_ELEMENTWISE(AxpyKernel, count, count, alpha, x, y);
}

void CudaBackend::Scale(std::int64_t count, float alpha, float* x) {
  DTSIM_LAUNCH_ELEMENTWISE(ScaleKernel, count, count, alpha, x);
}

void CudaBackend::Add(std::int64_t count, const float* a, const float* b, float* y) {
  DTSIM_LAUNCH_ELEMENTWISE(AddKernel, count, count, a, b, y);
}

void CudaBackend::Copy2D(std::int64_t rows, std::int64_t cols, const float* src,
                         std::int64_t src_stride, float* dst, std::int64_t dst_stride,
                         bool accumulate) {
  if (IndexFits32(rows * cols))
    DTSIM_LAUNCH_ELEMENTWISE(Copy2DKernel<std::uint32_t>, rows * cols,
                             static_cast<std::uint32_t>(rows), static_cast<std::uint32_t>(cols),
                             src, src_stride, dst, dst_stride, accumulate);
  else
    DTSIM_LAUNCH_ELEMENTWISE(Copy2DKernel<std::int64_t>, rows * cols, rows, cols, src,
                             src_stride, dst, dst_stride, accumulate);
}

// y (N, B, A, D) (=, +=) x (N, A, B, D) on the backend's stream.
#define DTSIM_SWAP_MIDDLE(n, a, b, d, x, y, accumulate)                                      \
  do {                                                                                        \
    if (IndexFits32((n) * (a) * (b) * (d)))                                                   \
      DTSIM_LAUNCH_ELEMENTWISE(SwapMiddleKernel<std::uint32_t>, (n) * (a) * (b) * (d),        \
                               static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(a), \
                               static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(d), \
                               x, y, accumulate);                                             \
    else                                                                                      \
      DTSIM_LAUNCH_ELEMENTWISE(SwapMiddleKernel<std::int64_t>, (n) * (a) * (b) * (d), n, a,  \
                               b, d, x, y, accumulate);                                       \
  } while (0)

void CudaBackend::SplitHeads(std::int64_t n, std::int64_t s, std::int64_t heads,
                             std::int64_t d, const float* x, float* y, bool accumulate) {
  // x (N, S, heads, D) -> y (N, heads, S, D).
  DTSIM_SWAP_MIDDLE(n, s, heads, d, x, y, accumulate);
}

void CudaBackend::MergeHeads(std::int64_t n, std::int64_t s, std::int64_t heads,
                             std::int64_t d, const float* x, float* y, bool accumulate) {
  // x (N, heads, S, D) -> y (N, S, heads, D).
  DTSIM_SWAP_MIDDLE(n, heads, s, d, x, y, accumulate);
}

void CudaBackend::ReluForward(std::int64_t count, const float* x, float* y) {
  DTSIM_LAUNCH_ELEMENTWISE(ReluForwardKernel, count, count, x, y);
}

void CudaBackend::ReluBackward(std::int64_t count, const float* y, const float* dy,
                               float* dx) {
  if (!dx) return;
  DTSIM_LAUNCH_ELEMENTWISE(ReluBackwardKernel, count, count, y, dy, dx);
}

void CudaBackend::GeluForward(std::int64_t count, const float* x, float* y) {
  DTSIM_LAUNCH_ELEMENTWISE(GeluForwardKernel, count, count, x, y);
}

void CudaBackend::GeluBackward(std::int64_t count, const float* x, const float* dy,
                               float* dx) {
  if (!dx) return;
  DTSIM_LAUNCH_ELEMENTWISE(GeluBackwardKernel, count, count, x, dy, dx);
}

void CudaBackend::TanhForward(std::int64_t count, const float* x, float* y) {
  DTSIM_LAUNCH_ELEMENTWISE(TanhForwardKernel, count, count, x, y);
}

void CudaBackend::TanhBackward(std::int64_t count, const float* y, const float* dy,
                               float* dx) {
  if (!dx) return;
  DTSIM_LAUNCH_ELEMENTWISE(TanhBackwardKernel, count, count, y, dy, dx);
}

void CudaBackend::DropoutForward(std::int64_t count, float rate, std::uint64_t seed,
                                 std::uint64_t offset, const float* x, float* mask, float* y) {
  const float keep_scale = rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
  DTSIM_LAUNCH_ELEMENTWISE(DropoutForwardKernel, count, count, rate, keep_scale, seed, offset,
                           x, mask, y);
}

void CudaBackend::DropoutBackward(std::int64_t count, const float* mask, const float* dy,
                                  float* dx) {
  if (!dx) return;
  DTSIM_LAUNCH_ELEMENTWISE(MulAccumulateKernel, count, count, dy, mask, dx);
}

void CudaBackend::SgdStep(std::int64_t count, float lr, float weight_decay, const float* g,
                          float* p) {
  DTSIM_LAUNCH_ELEMENTWISE(SgdKernel, count, count, lr, weight_decay, g, p);
}

void CudaBackend::MomentumStep(std::int64_t count, float lr, float momentum, const float* g,
                               float* v, float* p) {
  DTSIM_LAUNCH_ELEMENTWISE(MomentumKernel, count, count, lr, momentum, g, v, p);
}

void CudaBackend::AdamStep(std::int64_t count, float lr, float beta1, float beta2, float eps,
                           std::int64_t t, const float* g, float* m, float* v, float* p) {
  // Bias corrections 1 - beta^t, computed once in double on the host.
  const auto bias_correction1 =
      static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(t)));
  const auto bias_correction2 =
      static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(t)));
  DTSIM_LAUNCH_ELEMENTWISE(AdamKernel, count, count, lr, beta1, beta2, eps, bias_correction1,
                           bias_correction2, g, m, v, p);
}



void CudaBackend::SigmoidForward(std::int64_t count, const float* x, float* y) {
  DTSIM_LAUNCH_ELEMENTWISE(SigmoidForwardKernel, count, count, x, y);
}

void CudaBackend::SigmoidBackward(std::int64_t count, const float* y, const float* dy,
                                  float* dx) {
  if (!dx) return;
  DTSIM_LAUNCH_ELEMENTWISE(SigmoidBackwardKernel, count, count, y, dy, dx);
}

void CudaBackend::SiluForward(std::int64_t count, const float* x, float* y) {
  DTSIM_LAUNCH_ELEMENTWISE(SiluForwardKernel, count, count, x, y);
}

void CudaBackend::SiluBackward(std::int64_t count, const float* x, const float* dy, float* dx) {
  if (!dx) return;
  DTSIM_LAUNCH_ELEMENTWISE(SiluBackwardKernel, count, count, x, dy, dx);
}

void CudaBackend::MulForward(MulBroadcast broadcast, std::int64_t rows, std::int64_t cols,
                             const float* a, const float* b, float* y) {
  DTSIM_LAUNCH_ELEMENTWISE(MulForwardKernel, rows * cols, rows * cols, broadcast, cols, a, b, y);
}

void CudaBackend::MulBackward(MulBroadcast broadcast, std::int64_t rows, std::int64_t cols,
                              const float* a, const float* b, const float* dy, float* da,
                              float* db) {
  if (rows <= 0 || cols <= 0) return;
  UseDevice();
  const std::int64_t count = rows * cols;
  if (da) {
    MulBackwardDaKernel<<<BlocksFor(count), kThreads, 0, stream_>>>(count, broadcast, cols, b,
                                                                     dy, da);
    DTSIM_CUDA_CHECK_LAUNCH();
  }
  if (!db) return;
  switch (broadcast) {
    case MulBroadcast::kNone:
      MulBackwardDaKernel<<<BlocksFor(count), kThreads, 0, stream_>>>(count, broadcast, cols, a,
                                                                       dy, db);
      break;
    case MulBroadcast::kPerRow:
      MulBackwardDbPerRowKernel<<<BlocksForItems(rows), kThreads, 0, stream_>>>(rows, cols, a,
                                                                                dy, db);
      break;
    case MulBroadcast::kPerColumn:
      MulBackwardDbPerColumnKernel<<<BlocksFor(cols), kThreads, 0, stream_>>>(rows, cols, a, dy,
                                                                              db);
      break;
  }
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::RotaryForward(std::int64_t n, std::int64_t s, std::int64_t d, const float* x,
                                float* y) {
  const std::int64_t pairs = n * s * (d / 2);
  DTSIM_LAUNCH_ELEMENTWISE(RotaryKernel, pairs, pairs, s, d, x, y, 1.0, false);
}

void CudaBackend::RotaryBackward(std::int64_t n, std::int64_t s, std::int64_t d, const float* dy,
                                 float* dx) {
  if (!dx) return;
  const std::int64_t pairs = n * s * (d / 2);
  DTSIM_LAUNCH_ELEMENTWISE(RotaryKernel, pairs, pairs, s, d, dy, dx, -1.0, true);
}

#undef DTSIM_LAUNCH_ELEMENTWISE

}  // namespace dtsim::exec
