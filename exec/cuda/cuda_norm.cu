// CudaBackend's normalisation, loss and embedding methods. Row-wise
// reductions use one block per row (or channel) and BlockSum/BlockMax, so
// each result is computed in a fixed order (deterministic).
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_launch.cuh"

namespace dtsim::exec {
namespace {

using cuda::BlockMax;
using cuda::BlockSum;
using cuda::BlocksFor;
using cuda::BlocksForItems;
using cuda::kThreads;

// ---- softmax

// y (rows x cols) = softmax of each row of x; causal rows only see columns
// j <= row % cols (the others get exactly 0).
__global__ void SoftmaxForwardKernel(std::int64_t rows, std::int64_t cols, bool causal,
                                     const float* x, float* y) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    const std::int64_t valid = causal ? row % cols + 1 : cols;
    float mx = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < valid; j += blockDim.x) mx = fmaxf(mx, xr[j]);
    mx = BlockMax(mx);
    float sum = 0.0f;
    for (std::int64_t j = threadIdx.x; j < valid; j += blockDim.x) sum += expf(xr[j] - mx);
    sum = BlockSum(sum);
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      yr[j] = j < valid ? expf(xr[j] - mx) / sum : 0.0f;
  }
}

// dx += y * (dy - sum(y * dy)) per row.
__global__ void SoftmaxBackwardKernel(std::int64_t rows, std::int64_t cols, const float* y,
                                      const float* dy, float* dx) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* yr = y + row * cols;
    const float* dyr = dy + row * cols;
    float dot = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) dot += yr[j] * dyr[j];
    dot = BlockSum(dot);
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      dx[row * cols + j] += yr[j] * (dyr[j] - dot);
  }
}

// ---- layer norm

__global__ void LayerNormForwardKernel(std::int64_t rows, std::int64_t cols, float eps,
                                       const float* x, const float* gamma, const float* beta,
                                       float* y, float* mean, float* rstd) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    float sum = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += xr[j];
    const float mu = BlockSum(sum) / static_cast<float>(cols);
    float sq = 0.0f;  // two passes: no cancellation for large means
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const float d = xr[j] - mu;
      sq += d * d;
    }
    const float rs = 1.0f / sqrtf(BlockSum(sq) / static_cast<float>(cols) + eps);
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      y[row * cols + j] = (xr[j] - mu) * rs * gamma[j] + beta[j];
    if (threadIdx.x == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
  }
}

// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
__global__ void LayerNormBackwardDxKernel(std::int64_t rows, std::int64_t cols, const float* x,
                                          const float* gamma, const float* mean,
                                          const float* rstd, const float* dy, float* dx) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float mu = mean[row], rs = rstd[row];
    const float* xr = x + row * cols;
    const float* dyr = dy + row * cols;
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const float g = dyr[j] * gamma[j];
      sum_g += g;
      sum_gx += g * (xr[j] - mu) * rs;
    }
    const float mean_g = BlockSum(sum_g) / static_cast<float>(cols);
    const float mean_gx = BlockSum(sum_gx) / static_cast<float>(cols);
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const float xhat = (xr[j] - mu) * rs;
      dx[row * cols + j] += rs * (dyr[j] * gamma[j] - mean_g - xhat * mean_gx);
    }
  }
}

// dgamma (cols) += sum over rows of dy * xhat; dbeta += sum of dy. Block
// (32, 8) owns 32 columns, as ColumnSumKernel in cuda_elementwise.cu.
constexpr int kColTile = 32, kRowLanes = 8;
__global__ void LayerNormBackwardParamsKernel(std::int64_t rows, std::int64_t cols,
                                              const float* x, const float* mean,
                                              const float* rstd, const float* dy,
                                              float* dgamma, float* dbeta) {
  __shared__ float part_g[kRowLanes][kColTile], part_b[kRowLanes][kColTile];
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  float sg = 0.0f, sb = 0.0f;
  if (col < cols) {
    for (std::int64_t r = threadIdx.y; r < rows; r += kRowLanes) {
      const float d = dy[r * cols + col];
      sg += d * (x[r * cols + col] - mean[r]) * rstd[r];
      sb += d;
    }
  }
  part_g[threadIdx.y][threadIdx.x] = sg;
  part_b[threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float tg = 0.0f, tb = 0.0f;
    for (int j = 0; j < kRowLanes; ++j) {
      tg += part_g[j][threadIdx.x];
      tb += part_b[j][threadIdx.x];
    }
    if (dgamma) dgamma[col] += tg;
    if (dbeta) dbeta[col] += tb;
  }
}

// ---- batch norm. Each channel's N x spatial values are cut into `parts`
// contiguous slices of samples, one block per (channel, slice) (blockIdx.x =
// channel, blockIdx.y = slice), so that a layer of 64 channels still fills
// the GPU. Partial sums go to a workspace of channels x parts floats per
// quantity; every block that needs a channel's total adds that channel's
// partials in slice order, so each total is computed in a fixed order
// (deterministic) and is the same in every block.

// Samples [begin, end) of slice blockIdx.y of `parts` over n samples.
__device__ inline void SliceOf(std::int64_t n, int parts, std::int64_t* begin,
                               std::int64_t* end) {
  *begin = n * blockIdx.y / parts;
  *end = n * (blockIdx.y + 1) / parts;
}

// Sum over slices of `partial` (channels x parts) for channel `ch`.
__device__ inline float SumOfParts(const float* partial, std::int64_t ch, int parts) {
  float total = 0.0f;
  for (int p = 0; p < parts; ++p) total += partial[ch * parts + p];
  return total;
}

// Applies `f(at)` to every element of this block's (channel, slice), `at`
// being its index in x: ((sample * c + ch) * spatial + j).
template <class F>
__device__ inline void ForSlice(std::int64_t n, std::int64_t c, std::int64_t spatial, int parts,
                                F f) {
  std::int64_t begin, end;
  SliceOf(n, parts, &begin, &end);
  // Thread t visits the slice's elements t, t + blockDim.x, ... (flattened
  // over sample and position) in that order. The (sample, position) pair
  // advances by carrying instead of by a 64-bit division per element.
  const std::int64_t ch = blockIdx.x;
  const std::int64_t step_samples = blockDim.x / spatial, step_j = blockDim.x % spatial;
  std::int64_t sample = begin + threadIdx.x / spatial, j = threadIdx.x % spatial;
  while (sample < end) {
    f((sample * c + ch) * spatial + j);
    sample += step_samples;
    j += step_j;
    if (j >= spatial) j -= spatial, ++sample;
  }
}

// partial_sum[ch, slice] = sum of x over the slice.
__global__ void BatchNormSumKernel(std::int64_t n, std::int64_t c, std::int64_t spatial,
                                   int parts, const float* x, float* partial_sum) {
  float sum = 0.0f;
  ForSlice(n, c, spatial, parts, [&](std::int64_t at) { sum += x[at]; });
  sum = BlockSum(sum);
  if (threadIdx.x == 0) partial_sum[blockIdx.x * parts + blockIdx.y] = sum;
}

// partial_sq[ch, slice] = sum of (x - mean)^2 over the slice.
__global__ void BatchNormSquaresKernel(std::int64_t n, std::int64_t c, std::int64_t spatial,
                                       int parts, const float* x, const float* partial_sum,
                                       float* partial_sq) {
  const float mu = SumOfParts(partial_sum, blockIdx.x, parts) / static_cast<float>(n * spatial);
  float sq = 0.0f;
  ForSlice(n, c, spatial, parts, [&](std::int64_t at) {
    const float d = x[at] - mu;
    sq += d * d;
  });
  sq = BlockSum(sq);
  if (threadIdx.x == 0) partial_sq[blockIdx.x * parts + blockIdx.y] = sq;
}

__global__ void BatchNormApplyKernel(std::int64_t n, std::int64_t c, std::int64_t spatial,
                                     int parts, float eps, const float* x, const float* gamma,
                                     const float* beta, const float* partial_sum,
                                     const float* partial_sq, float* y, float* mean,
                                     float* rstd) {
  const std::int64_t ch = blockIdx.x;
  const auto m = static_cast<float>(n * spatial);
  const float mu = SumOfParts(partial_sum, ch, parts) / m;
  const float rs = 1.0f / sqrtf(SumOfParts(partial_sq, ch, parts) / m + eps);
  const float g = gamma[ch], b = beta[ch];
  ForSlice(n, c, spatial, parts, [&](std::int64_t at) { y[at] = (x[at] - mu) * rs * g + b; });
  if (blockIdx.y == 0 && threadIdx.x == 0) {
    mean[ch] = mu;
    rstd[ch] = rs;
  }
}

// With M = N * spatial, xhat = (x - mean) * rstd:
//   dbeta += sum(dy); dgamma += sum(dy * xhat);
//   dx += gamma * rstd * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M).
// First the partial sums of dy and dy * xhat per (channel, slice).
__global__ void BatchNormGradSumsKernel(std::int64_t n, std::int64_t c, std::int64_t spatial,
                                       int parts, const float* x, const float* mean,
                                       const float* rstd, const float* dy, float* partial_dy,
                                       float* partial_dyx) {
  const std::int64_t ch = blockIdx.x;
  const float mu = mean[ch], rs = rstd[ch];
  float sum_dy = 0.0f, sum_dyx = 0.0f;
  ForSlice(n, c, spatial, parts, [&](std::int64_t at) {
    sum_dy += dy[at];
    sum_dyx += dy[at] * (x[at] - mu) * rs;
  });
  sum_dy = BlockSum(sum_dy);
  sum_dyx = BlockSum(sum_dyx);
  if (threadIdx.x == 0) {
    partial_dy[ch * parts + blockIdx.y] = sum_dy;
    partial_dyx[ch * parts + blockIdx.y] = sum_dyx;
  }
}

__global__ void BatchNormGradApplyKernel(std::int64_t n, std::int64_t c, std::int64_t spatial,
                                         int parts, const float* x, const float* gamma,
                                         const float* mean, const float* rstd, const float* dy,
                                         const float* partial_dy, const float* partial_dyx,
                                         float* dx, float* dgamma, float* dbeta) {
  const std::int64_t ch = blockIdx.x;
  const float sum_dy = SumOfParts(partial_dy, ch, parts);
  const float sum_dyx = SumOfParts(partial_dyx, ch, parts);
  if (blockIdx.y == 0 && threadIdx.x == 0) {
    if (dgamma) dgamma[ch] += sum_dyx;
    if (dbeta) dbeta[ch] += sum_dy;
  }
  if (!dx) return;
  const float mu = mean[ch], rs = rstd[ch];
  const float scale = gamma[ch] * rs;
  const auto m = static_cast<float>(n * spatial);
  const float mean_dy = sum_dy / m, mean_dyx = sum_dyx / m;
  ForSlice(n, c, spatial, parts, [&](std::int64_t at) {
    dx[at] += scale * (dy[at] - mean_dy - (x[at] - mu) * rs * mean_dyx);
  });
}

// Slices per channel: enough blocks for 4 per SM of the largest current GPU
// (132 SMs, H100 SXM), at most one slice per sample and 64 slices (partial
// sums stay few).
int BatchNormParts(std::int64_t n, std::int64_t c) {
  constexpr std::int64_t kTargetBlocks = 4 * 132;
  const std::int64_t parts = (kTargetBlocks + c - 1) / c;
  return static_cast<int>(std::max<std::int64_t>(1, std::min({parts, n, std::int64_t{64}})));
}

// ---- local response normalisation, x: (N, C, H*W).

// den[i] = bias + alpha * sum of x^2 over the channel window of i.
__global__ void LrnDenominatorKernel(std::int64_t n, std::int64_t c, std::int64_t plane,
                                     int radius, float bias, float alpha, const float* x,
                                     float* den) {
  DTSIM_GRID_LOOP(i, n * c * plane) {
    const std::int64_t p = i % plane, ch = (i / plane) % c, s = i / (plane * c);
    const std::int64_t lo = ch - radius > 0 ? ch - radius : 0;
    const std::int64_t hi = ch + radius < c - 1 ? ch + radius : c - 1;
    float sq = 0.0f;
    for (std::int64_t k = lo; k <= hi; ++k) {
      const float v = x[(s * c + k) * plane + p];
      sq += v * v;
    }
    den[i] = bias + alpha * sq;
  }
}

__global__ void LrnForwardKernel(std::int64_t count, float beta, const float* x,
                                 const float* den, float* y) {
  DTSIM_GRID_LOOP(i, count) y[i] = x[i] * powf(den[i], -beta);
}

// y_k = x_k den_k^-beta with den_k = bias + alpha sum_{j in win(k)} x_j^2, so
//   dx_i += dy_i den_i^-beta - 2 alpha beta x_i sum_{k in win(i)} dy_k y_k / den_k
// (the channel window is symmetric: i in win(k) iff k in win(i)).
__global__ void LrnBackwardKernel(std::int64_t n, std::int64_t c, std::int64_t plane,
                                  int radius, float alpha, float beta, const float* x,
                                  const float* y, const float* den, const float* dy,
                                  float* dx) {
  DTSIM_GRID_LOOP(i, n * c * plane) {
    const std::int64_t p = i % plane, ch = (i / plane) % c, s = i / (plane * c);
    const std::int64_t lo = ch - radius > 0 ? ch - radius : 0;
    const std::int64_t hi = ch + radius < c - 1 ? ch + radius : c - 1;
    float acc = 0.0f;
    for (std::int64_t k = lo; k <= hi; ++k) {
      const std::int64_t at = (s * c + k) * plane + p;
      acc += dy[at] * y[at] / den[at];
    }
    dx[i] += dy[i] * powf(den[i], -beta) - 2.0f * alpha * beta * x[i] * acc;
  }
}

// ---- softmax cross-entropy

// probs = softmax(logits row); loss = logsumexp - logits[label] (NaN when
// the label is not a class index).
__global__ void CrossEntropyForwardKernel(std::int64_t rows, std::int64_t classes,
                                          const float* logits, const float* labels,
                                          float* probs, float* loss) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* lr = logits + row * classes;
    float mx = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < classes; j += blockDim.x) mx = fmaxf(mx, lr[j]);
    mx = BlockMax(mx);
    float sum = 0.0f;
    for (std::int64_t j = threadIdx.x; j < classes; j += blockDim.x) sum += expf(lr[j] - mx);
    sum = BlockSum(sum);
    for (std::int64_t j = threadIdx.x; j < classes; j += blockDim.x)
      probs[row * classes + j] = expf(lr[j] - mx) / sum;
    if (threadIdx.x == 0) {
      const float label = labels[row];
      const auto cls = static_cast<std::int64_t>(label);
      const bool ok = label >= 0.0f && cls < classes && static_cast<float>(cls) == label;
      loss[row] = ok ? logf(sum) + mx - lr[cls] : NAN;
    }
  }
}

__global__ void CrossEntropyBackwardKernel(std::int64_t rows, std::int64_t classes,
                                           const float* probs, const float* labels,
                                           float scale, float* dlogits) {
  DTSIM_GRID_LOOP(i, rows * classes) {
    const std::int64_t row = i / classes, j = i % classes;
    const float onehot = static_cast<float>(j) == labels[row] ? 1.0f : 0.0f;
    dlogits[i] += scale * (probs[i] - onehot);
  }
}

// ---- embedding

__global__ void EmbeddingForwardKernel(std::int64_t count, std::int64_t hidden,
                                       const float* ids, const float* table, float* y) {
  DTSIM_GRID_LOOP(i, count * hidden) {
    const auto id = static_cast<std::int64_t>(ids[i / hidden]);
    y[i] = table[id * hidden + i % hidden];
  }
}

// keys[i] = ids[i] as an integer, positions[i] = i.
__global__ void EmbeddingKeysKernel(std::int64_t count, const float* ids, unsigned int* keys,
                                    unsigned int* positions) {
  DTSIM_GRID_LOOP(i, count) {
    keys[i] = static_cast<unsigned int>(ids[i]);
    positions[i] = static_cast<unsigned int>(i);
  }
}

// Block b handles sorted entries b, b + grid, ...; an entry that starts a
// run of equal ids sums the run's dy rows, in position order, into its
// table row (no two blocks write the same row).
__global__ void EmbeddingBackwardKernel(std::int64_t count, std::int64_t hidden,
                                        const unsigned int* keys, const unsigned int* positions,
                                        const float* dy, float* dtable) {
  for (std::int64_t e = blockIdx.x; e < count; e += gridDim.x) {
    const unsigned int id = keys[e];
    if (e > 0 && keys[e - 1] == id) continue;
    for (std::int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
      float* out = dtable + static_cast<std::int64_t>(id) * hidden + h;
      float acc = *out;
      for (std::int64_t r = e; r < count && keys[r] == id; ++r)
        acc += dy[static_cast<std::int64_t>(positions[r]) * hidden + h];
      *out = acc;
    }
  }
}

std::size_t AlignUp(std::size_t bytes) { return (bytes + 255) / 256 * 256; }


__global__ void RmsNormForwardKernel(std::int64_t rows, std::int64_t cols, float eps,
                                     const float* x, const float* gamma, float* y, float* rstd) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    float sq = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) sq += xr[j] * xr[j];
    const float rs = 1.0f / sqrtf(BlockSum(sq) / static_cast<float>(cols) + eps);
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      y[row * cols + j] = xr[j] * rs * gamma[j];
    if (threadIdx.x == 0) rstd[row] = rs;
  }
}

// dx += rstd * (g - xhat * mean(g * xhat)), g = dy * gamma, xhat = x * rstd.
__global__ void RmsNormBackwardDxKernel(std::int64_t rows, std::int64_t cols, const float* x,
                                        const float* gamma, const float* rstd, const float* dy,
                                        float* dx) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float rs = rstd[row];
    const float* xr = x + row * cols;
    const float* dyr = dy + row * cols;
    float sum_gx = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      sum_gx += dyr[j] * gamma[j] * xr[j] * rs;
    const float mean_gx = BlockSum(sum_gx) / static_cast<float>(cols);
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      dx[row * cols + j] += rs * (dyr[j] * gamma[j] - xr[j] * rs * mean_gx);
  }
}

// dgamma (cols) += sum over rows of dy * x * rstd, one thread per column,
// rows in order.
__global__ void RmsNormBackwardGammaKernel(std::int64_t rows, std::int64_t cols, const float* x,
                                           const float* rstd, const float* dy, float* dgamma) {
  DTSIM_GRID_LOOP(j, cols) {
    float sum = 0.0f;
    for (std::int64_t r = 0; r < rows; ++r) sum += dy[r * cols + j] * x[r * cols + j] * rstd[r];
    dgamma[j] += sum;
  }
}

}  // namespace

void CudaBackend::SoftmaxForward(std::int64_t rows, std::int64_t cols, bool causal,
                                 const float* x, float* y) {
  if (rows <= 0 || cols <= 0) return;
  UseDevice();
  SoftmaxForwardKernel<<<BlocksForItems(rows), kThreads, 0, stream_>>>(rows, cols, causal, x,
                                                                       y);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::SoftmaxBackward(std::int64_t rows, std::int64_t cols, const float* y,
                                  const float* dy, float* dx) {
  if (!dx || rows <= 0 || cols <= 0) return;
  UseDevice();
  SoftmaxBackwardKernel<<<BlocksForItems(rows), kThreads, 0, stream_>>>(rows, cols, y, dy, dx);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::LayerNormForward(std::int64_t rows, std::int64_t cols, float eps,
                                   const float* x, const float* gamma, const float* beta,
                                   float* y, float* mean, float* rstd) {
  if (rows <= 0 || cols <= 0) return;
  UseDevice();
  LayerNormForwardKernel<<<BlocksForItems(rows), kThreads, 0, stream_>>>(
      rows, cols, eps, x, gamma, beta, y, mean, rstd);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::LayerNormBackward(std::int64_t rows, std::int64_t cols, const float* x,
                                    const float* gamma, const float* mean, const float* rstd,
                                    const float* dy, float* dx, float* dgamma, float* dbeta) {
  if (rows <= 0 || cols <= 0) return;
  UseDevice();
  if (dx) {
    LayerNormBackwardDxKernel<<<BlocksForItems(rows), kThreads, 0, stream_>>>(
        rows, cols, x, gamma, mean, rstd, dy, dx);
    DTSIM_CUDA_CHECK_LAUNCH();
  }
  if (dgamma || dbeta) {
    const auto blocks = static_cast<unsigned int>((cols + kColTile - 1) / kColTile);
    LayerNormBackwardParamsKernel<<<blocks, dim3(kColTile, kRowLanes), 0, stream_>>>(
        rows, cols, x, mean, rstd, dy, dgamma, dbeta);
    DTSIM_CUDA_CHECK_LAUNCH();
  }
}

void CudaBackend::BatchNormForward(std::int64_t n, std::int64_t c, std::int64_t spatial,
                                   float eps, const float* x, const float* gamma,
                                   const float* beta, float* y, float* mean, float* rstd) {
  if (n <= 0 || c <= 0 || spatial <= 0) return;
  if (c > INT_MAX) throw std::invalid_argument("CudaBackend BatchNorm: more than 2^31 channels");
  UseDevice();
  const int parts = BatchNormParts(n, c);
  auto* partial = static_cast<float*>(Workspace(2 * static_cast<std::size_t>(c * parts) *
                                                sizeof(float)));
  float* partial_sq = partial + c * parts;
  const dim3 grid(static_cast<unsigned int>(c), static_cast<unsigned int>(parts));
  BatchNormSumKernel<<<grid, kThreads, 0, stream_>>>(n, c, spatial, parts, x, partial);
  DTSIM_CUDA_CHECK_LAUNCH();
  BatchNormSquaresKernel<<<grid, kThreads, 0, stream_>>>(n, c, spatial, parts, x, partial,
                                                         partial_sq);
  DTSIM_CUDA_CHECK_LAUNCH();
  BatchNormApplyKernel<<<grid, kThreads, 0, stream_>>>(n, c, spatial, parts, eps, x, gamma, beta,
                                                       partial, partial_sq, y, mean, rstd);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::BatchNormBackward(std::int64_t n, std::int64_t c, std::int64_t spatial,
                                    const float* x, const float* gamma, const float* mean,
                                    const float* rstd, const float* dy, float* dx,
                                    float* dgamma, float* dbeta) {
  if (n <= 0 || c <= 0 || spatial <= 0 || (!dx && !dgamma && !dbeta)) return;
  if (c > INT_MAX) throw std::invalid_argument("CudaBackend BatchNorm: more than 2^31 channels");
  UseDevice();
  const int parts = BatchNormParts(n, c);
  auto* partial = static_cast<float*>(Workspace(2 * static_cast<std::size_t>(c * parts) *
                                                sizeof(float)));
  float* partial_dyx = partial + c * parts;
  const dim3 grid(static_cast<unsigned int>(c), static_cast<unsigned int>(parts));
  BatchNormGradSumsKernel<<<grid, kThreads, 0, stream_>>>(n, c, spatial, parts, x, mean, rstd,
                                                          dy, partial, partial_dyx);
  DTSIM_CUDA_CHECK_LAUNCH();
  BatchNormGradApplyKernel<<<grid, kThreads, 0, stream_>>>(n, c, spatial, parts, x, gamma, mean,
                                                           rstd, dy, partial, partial_dyx, dx,
                                                           dgamma, dbeta);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::LrnForward(const LrnArgs& a, const float* x, float* y) {
  const std::int64_t plane = a.h * a.w, count = a.n * a.c * plane;
  if (count <= 0) return;
  UseDevice();
  auto* den = static_cast<float*>(Workspace(static_cast<std::size_t>(count) * sizeof(float)));
  LrnDenominatorKernel<<<BlocksFor(count), kThreads, 0, stream_>>>(a.n, a.c, plane, a.radius,
                                                                   a.bias, a.alpha, x, den);
  DTSIM_CUDA_CHECK_LAUNCH();
  LrnForwardKernel<<<BlocksFor(count), kThreads, 0, stream_>>>(count, a.beta, x, den, y);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::LrnBackward(const LrnArgs& a, const float* x, const float* y,
                              const float* dy, float* dx) {
  const std::int64_t plane = a.h * a.w, count = a.n * a.c * plane;
  if (!dx || count <= 0) return;
  UseDevice();
  auto* den = static_cast<float*>(Workspace(static_cast<std::size_t>(count) * sizeof(float)));
  LrnDenominatorKernel<<<BlocksFor(count), kThreads, 0, stream_>>>(a.n, a.c, plane, a.radius,
                                                                   a.bias, a.alpha, x, den);
  DTSIM_CUDA_CHECK_LAUNCH();
  LrnBackwardKernel<<<BlocksFor(count), kThreads, 0, stream_>>>(
      a.n, a.c, plane, a.radius, a.alpha, a.beta, x, y, den, dy, dx);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::SoftmaxCrossEntropyForward(std::int64_t rows, std::int64_t classes,
                                             const float* logits, const float* labels,
                                             float* probs, float* loss) {
  if (rows <= 0 || classes <= 0) return;
  UseDevice();
  CrossEntropyForwardKernel<<<BlocksForItems(rows), kThreads, 0, stream_>>>(
      rows, classes, logits, labels, probs, loss);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::SoftmaxCrossEntropyBackward(std::int64_t rows, std::int64_t classes,
                                              const float* probs, const float* labels,
                                              float scale, float* dlogits) {
  if (!dlogits || rows <= 0 || classes <= 0) return;
  UseDevice();
  CrossEntropyBackwardKernel<<<BlocksFor(rows * classes), kThreads, 0, stream_>>>(
      rows, classes, probs, labels, scale, dlogits);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::EmbeddingForward(std::int64_t count, std::int64_t hidden, const float* ids,
                                   const float* table, float* y) {
  if (count <= 0 || hidden <= 0) return;
  UseDevice();
  EmbeddingForwardKernel<<<BlocksFor(count * hidden), kThreads, 0, stream_>>>(count, hidden,
                                                                              ids, table, y);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::EmbeddingBackward(std::int64_t count, std::int64_t hidden, const float* ids,
                                    const float* dy, float* dtable) {
  if (!dtable || count <= 0 || hidden <= 0) return;
  if (count > INT_MAX)  // CUB's item count is an int
    throw std::invalid_argument("CudaBackend::EmbeddingBackward: count above 2^31 - 1");
  UseDevice();
  const int n = static_cast<int>(count);
  // Workspace: keys and positions, sorted copies of both, then CUB's scratch.
  std::size_t sort_bytes = 0;
  DTSIM_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, sort_bytes, static_cast<const unsigned int*>(nullptr),
      static_cast<unsigned int*>(nullptr), static_cast<const unsigned int*>(nullptr),
      static_cast<unsigned int*>(nullptr), n, 0, 32, stream_));
  const std::size_t array_bytes = AlignUp(static_cast<std::size_t>(count) * sizeof(unsigned int));
  auto* base = static_cast<char*>(Workspace(4 * array_bytes + sort_bytes));
  auto* keys = reinterpret_cast<unsigned int*>(base);
  auto* positions = reinterpret_cast<unsigned int*>(base + array_bytes);
  auto* sorted_keys = reinterpret_cast<unsigned int*>(base + 2 * array_bytes);
  auto* sorted_positions = reinterpret_cast<unsigned int*>(base + 3 * array_bytes);
  void* sort_scratch = base + 4 * array_bytes;
  EmbeddingKeysKernel<<<BlocksFor(count), kThreads, 0, stream_>>>(count, ids, keys, positions);
  DTSIM_CUDA_CHECK_LAUNCH();
  // Radix sort is stable: equal ids keep increasing positions.
  DTSIM_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_scratch, sort_bytes, keys, sorted_keys,
                                                   positions, sorted_positions, n, 0, 32,
                                                   stream_));
  const int threads = hidden < kThreads ? 32 * static_cast<int>((hidden + 31) / 32) : kThreads;
  EmbeddingBackwardKernel<<<BlocksForItems(count), threads, 0, stream_>>>(
      count, hidden, sorted_keys, sorted_positions, dy, dtable);
  DTSIM_CUDA_CHECK_LAUNCH();
}


void CudaBackend::RmsNormForward(std::int64_t rows, std::int64_t cols, float eps, const float* x,
                                 const float* gamma, float* y, float* rstd) {
  if (rows <= 0 || cols <= 0) return;
  UseDevice();
  RmsNormForwardKernel<<<BlocksForItems(rows), kThreads, 0, stream_>>>(rows, cols, eps, x, gamma,
                                                                       y, rstd);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::RmsNormBackward(std::int64_t rows, std::int64_t cols, const float* x,
                                  const float* gamma, const float* rstd, const float* dy,
                                  float* dx, float* dgamma) {
  if (rows <= 0 || cols <= 0) return;
  UseDevice();
  if (dx) {
    RmsNormBackwardDxKernel<<<BlocksForItems(rows), kThreads, 0, stream_>>>(rows, cols, x, gamma,
                                                                            rstd, dy, dx);
    DTSIM_CUDA_CHECK_LAUNCH();
  }
  if (dgamma) {
    RmsNormBackwardGammaKernel<<<BlocksFor(cols), kThreads, 0, stream_>>>(rows, cols, x, rstd,
                                                                          dy, dgamma);
    DTSIM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace dtsim::exec
