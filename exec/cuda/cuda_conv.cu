// CudaBackend's convolution and pooling. Convolution works on chunks of
// samples, with P = OH * OW and nb samples per chunk:
//
//   col (C * R * S, nb * P)   column j * P + p holds sample j's input patch
//                             under output position p (zeros in padding)
//   t_g (K/groups, nb * P)  = w_g (K/groups, C/groups * R * S) * col_g
//   y (nb, K, P)            = t, transposed per sample, + bias
//   dw_g                   += dyt_g * col_g^T    (dyt: dy as (K, nb * P))
//   dcol_g                  = w_g^T * dyt_g, gathered back (col2im) into dx
//
// one cuBLAS GEMM per group and chunk. Backward passes gather into each
// input element instead of scattering, so no atomics are needed.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_launch.cuh"

namespace dtsim::exec {
namespace {

using cuda::BlockSum;
using cuda::BlocksFor;
using cuda::BlocksForItems;
using cuda::kThreads;

// Workspace budget of one convolution chunk (floats): 128 MiB.
constexpr std::int64_t kConvWorkspaceFloats = std::int64_t{32} << 20;

void CheckConv(const Conv2dArgs& a) {
  if (!(a.n >= 0 && a.c > 0 && a.h > 0 && a.w > 0 && a.k > 0 && a.r > 0 && a.s > 0 &&
        a.stride_h > 0 && a.stride_w > 0 && a.pad_h >= 0 && a.pad_w >= 0 && a.groups > 0 &&
        a.c % a.groups == 0 && a.k % a.groups == 0 &&
        a.oh == (a.h + 2 * a.pad_h - a.r) / a.stride_h + 1 &&
        a.ow == (a.w + 2 * a.pad_w - a.s) / a.stride_w + 1 && a.oh > 0 && a.ow > 0))
    throw std::invalid_argument(
        "CudaBackend Conv2d: bad shape, stride, padding or groups, or oh/ow do not follow "
        "(h + 2 pad - r) / stride + 1");
}

void CheckPool(const Pool2dArgs& a) {
  if (!(a.n >= 0 && a.c >= 0 && a.h > 0 && a.w > 0 && a.oh > 0 && a.ow > 0 && a.r > 0 &&
        a.s > 0 && a.stride_h > 0 && a.stride_w > 0 && a.pad_h >= 0 && a.pad_w >= 0 &&
        (a.oh - 1) * a.stride_h - a.pad_h < a.h && (a.ow - 1) * a.stride_w - a.pad_w < a.w &&
        a.r > a.pad_h && a.s > a.pad_w))
    throw std::invalid_argument(
        "CudaBackend Pool2d: bad shape, window, stride or padding, or a window lies outside "
        "the input");
}

// col (C * R * S, nb * P) from samples [n0, n0 + nb) of x (N, C, H, W).
__global__ void Im2ColKernel(Conv2dArgs a, std::int64_t n0, std::int64_t nb, const float* x,
                             float* col) {
  const std::int64_t p_count = a.oh * a.ow, cols = nb * p_count;
  DTSIM_GRID_LOOP(i, a.c * a.r * a.s * cols) {
    const std::int64_t column = i % cols, row = i / cols;
    const std::int64_t j = column / p_count, p = column % p_count;
    const int ks = static_cast<int>(row % a.s), kr = static_cast<int>((row / a.s) % a.r);
    const std::int64_t ch = row / (a.s * a.r);
    const std::int64_t iy = (p / a.ow) * a.stride_h - a.pad_h + kr;
    const std::int64_t ix = (p % a.ow) * a.stride_w - a.pad_w + ks;
    const bool inside = iy >= 0 && iy < a.h && ix >= 0 && ix < a.w;
    col[i] = inside ? x[(((n0 + j) * a.c + ch) * a.h + iy) * a.w + ix] : 0.0f;
  }
}

// dx[n0 + j] (C, H, W) += the entries of dcol (C * R * S, nb * P) that im2col
// read from each element, in (kr, ks) order (the order of a sequential
// col2im scatter).
__global__ void Col2ImAddKernel(Conv2dArgs a, std::int64_t n0, std::int64_t nb,
                                const float* dcol, float* dx) {
  const std::int64_t p_count = a.oh * a.ow, cols = nb * p_count;
  DTSIM_GRID_LOOP(i, nb * a.c * a.h * a.w) {
    const std::int64_t ix = i % a.w, iy = (i / a.w) % a.h, ch = (i / (a.w * a.h)) % a.c;
    const std::int64_t j = i / (a.w * a.h * a.c);
    float& out = dx[n0 * a.c * a.h * a.w + i];
    float acc = out;
    for (int kr = 0; kr < a.r; ++kr) {
      const std::int64_t ty = iy + a.pad_h - kr;  // = oy * stride_h
      if (ty < 0 || ty % a.stride_h != 0 || ty / a.stride_h >= a.oh) continue;
      const std::int64_t oy = ty / a.stride_h;
      for (int ks = 0; ks < a.s; ++ks) {
        const std::int64_t tx = ix + a.pad_w - ks;
        if (tx < 0 || tx % a.stride_w != 0 || tx / a.stride_w >= a.ow) continue;
        const std::int64_t ox = tx / a.stride_w;
        const std::int64_t row = (ch * a.r + kr) * a.s + ks;
        acc += dcol[row * cols + j * p_count + oy * a.ow + ox];
      }
    }
    out = acc;
  }
}

// y[n0 + j] (K, P) = t (K, nb * P) columns of sample j, + bias (K or null).
__global__ void ChunkToOutputKernel(std::int64_t k, std::int64_t p_count, std::int64_t n0,
                                    std::int64_t nb, const float* t, const float* bias,
                                    float* y) {
  DTSIM_GRID_LOOP(i, nb * k * p_count) {
    const std::int64_t p = i % p_count, ch = (i / p_count) % k, j = i / (p_count * k);
    const float v = t[ch * nb * p_count + j * p_count + p];
    y[n0 * k * p_count + i] = bias ? v + bias[ch] : v;
  }
}

// dyt (K, nb * P) = samples [n0, n0 + nb) of dy (N, K, P).
__global__ void OutputToChunkKernel(std::int64_t k, std::int64_t p_count, std::int64_t n0,
                                    std::int64_t nb, const float* dy, float* dyt) {
  DTSIM_GRID_LOOP(i, nb * k * p_count) {
    const std::int64_t p = i % p_count, ch = (i / p_count) % k, j = i / (p_count * k);
    dyt[ch * nb * p_count + j * p_count + p] = dy[n0 * k * p_count + i];
  }
}

// dbias[k] += sum over (N, P) of dy (N, K, P); one block per channel.
__global__ void ConvBiasGradKernel(std::int64_t n, std::int64_t k, std::int64_t p_count,
                                   const float* dy, float* dbias) {
  for (std::int64_t ch = blockIdx.x; ch < k; ch += gridDim.x) {
    float sum = 0.0f;
    for (std::int64_t i = threadIdx.x; i < n * p_count; i += blockDim.x)
      sum += dy[((i / p_count) * k + ch) * p_count + i % p_count];
    sum = BlockSum(sum);
    if (threadIdx.x == 0) dbias[ch] += sum;
  }
}

// ---- pooling. A window's in-bounds part is rows [y0, y1), columns [x0, x1).

struct Window {
  std::int64_t y0, y1, x0, x1;
};

__device__ inline Window WindowOf(const Pool2dArgs& a, std::int64_t oy, std::int64_t ox) {
  const std::int64_t y = oy * a.stride_h - a.pad_h, x = ox * a.stride_w - a.pad_w;
  return {y > 0 ? y : 0, y + a.r < a.h ? y + a.r : a.h, x > 0 ? x : 0,
          x + a.s < a.w ? x + a.s : a.w};
}

// Index in the (H, W) plane of the window's first maximum (row-major).
__device__ inline std::int64_t ArgMax(const Pool2dArgs& a, const Window& win,
                                      const float* plane) {
  std::int64_t best = win.y0 * a.w + win.x0;
  for (std::int64_t iy = win.y0; iy < win.y1; ++iy)
    for (std::int64_t ix = win.x0; ix < win.x1; ++ix)
      if (plane[iy * a.w + ix] > plane[best]) best = iy * a.w + ix;
  return best;
}

// Output rows (or columns) whose windows contain input row `i`: [lo, hi].
__device__ inline void CoveringOutputs(std::int64_t i, int pad, int window, int stride,
                                       std::int64_t outputs, std::int64_t* lo,
                                       std::int64_t* hi) {
  // o * stride - pad <= i < o * stride - pad + window
  const std::int64_t first = i + pad - window + 1;
  *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  const std::int64_t last = (i + pad) / stride;
  *hi = last < outputs - 1 ? last : outputs - 1;
}

__global__ void MaxPoolForwardKernel(Pool2dArgs a, const float* x, float* y) {
  DTSIM_GRID_LOOP(i, a.n * a.c * a.oh * a.ow) {
    const std::int64_t ox = i % a.ow, oy = (i / a.ow) % a.oh, plane = i / (a.ow * a.oh);
    const float* in = x + plane * a.h * a.w;
    y[i] = in[ArgMax(a, WindowOf(a, oy, ox), in)];
  }
}

// dx element += dy of every window whose first maximum it is, in row-major
// window order (the order of a sequential scatter).
__global__ void MaxPoolBackwardKernel(Pool2dArgs a, const float* x, const float* dy,
                                      float* dx) {
  DTSIM_GRID_LOOP(i, a.n * a.c * a.h * a.w) {
    const std::int64_t ix = i % a.w, iy = (i / a.w) % a.h, plane = i / (a.w * a.h);
    const float* in = x + plane * a.h * a.w;
    std::int64_t oy0, oy1, ox0, ox1;
    CoveringOutputs(iy, a.pad_h, a.r, a.stride_h, a.oh, &oy0, &oy1);
    CoveringOutputs(ix, a.pad_w, a.s, a.stride_w, a.ow, &ox0, &ox1);
    float acc = dx[i];
    for (std::int64_t oy = oy0; oy <= oy1; ++oy)
      for (std::int64_t ox = ox0; ox <= ox1; ++ox)
        if (ArgMax(a, WindowOf(a, oy, ox), in) == iy * a.w + ix)
          acc += dy[(plane * a.oh + oy) * a.ow + ox];
    dx[i] = acc;
  }
}

__global__ void AvgPoolForwardKernel(Pool2dArgs a, const float* x, float* y) {
  DTSIM_GRID_LOOP(i, a.n * a.c * a.oh * a.ow) {
    const std::int64_t ox = i % a.ow, oy = (i / a.ow) % a.oh, plane = i / (a.ow * a.oh);
    const float* in = x + plane * a.h * a.w;
    const Window win = WindowOf(a, oy, ox);
    float sum = 0.0f;
    for (std::int64_t iy = win.y0; iy < win.y1; ++iy)
      for (std::int64_t ix = win.x0; ix < win.x1; ++ix) sum += in[iy * a.w + ix];
    y[i] = sum / static_cast<float>((win.y1 - win.y0) * (win.x1 - win.x0));
  }
}

__global__ void AvgPoolBackwardKernel(Pool2dArgs a, const float* dy, float* dx) {
  DTSIM_GRID_LOOP(i, a.n * a.c * a.h * a.w) {
    const std::int64_t ix = i % a.w, iy = (i / a.w) % a.h, plane = i / (a.w * a.h);
    std::int64_t oy0, oy1, ox0, ox1;
    CoveringOutputs(iy, a.pad_h, a.r, a.stride_h, a.oh, &oy0, &oy1);
    CoveringOutputs(ix, a.pad_w, a.s, a.stride_w, a.ow, &ox0, &ox1);
    float acc = dx[i];
    for (std::int64_t oy = oy0; oy <= oy1; ++oy) {
      for (std::int64_t ox = ox0; ox <= ox1; ++ox) {
        const Window win = WindowOf(a, oy, ox);
        acc += dy[(plane * a.oh + oy) * a.ow + ox] /
               static_cast<float>((win.y1 - win.y0) * (win.x1 - win.x0));
      }
    }
    dx[i] = acc;
  }
}

// Samples per convolution chunk so that col and t fit the workspace budget.
std::int64_t ChunkSamples(const Conv2dArgs& a) {
  const std::int64_t per_sample = (a.c * a.r * a.s + a.k) * a.oh * a.ow;
  return std::max<std::int64_t>(1, std::min(a.n, kConvWorkspaceFloats / per_sample));
}

}  // namespace

void CudaBackend::Conv2dForward(const Conv2dArgs& a, const float* x, const float* w,
                                const float* bias, float* y) {
  CheckConv(a);
  if (a.n == 0) return;
  UseDevice();
  const std::int64_t p_count = a.oh * a.ow, kg = a.k / a.groups;
  const std::int64_t patch = (a.c / a.groups) * a.r * a.s;  // rows of col_g
  const std::int64_t chunk = ChunkSamples(a);
  auto* col = static_cast<float*>(Workspace(static_cast<std::size_t>(
      (a.c * a.r * a.s + a.k) * chunk * p_count) * sizeof(float)));
  float* t = col + a.c * a.r * a.s * chunk * p_count;
  for (std::int64_t n0 = 0; n0 < a.n; n0 += chunk) {
    const std::int64_t nb = std::min(chunk, a.n - n0), cols = nb * p_count;
    Im2ColKernel<<<BlocksFor(a.c * a.r * a.s * cols), kThreads, 0, stream_>>>(a, n0, nb, x,
                                                                               col);
    DTSIM_CUDA_CHECK_LAUNCH();
    for (int g = 0; g < a.groups; ++g)
      Gemm(false, false, kg, cols, patch, 1.0f, w + g * kg * patch, col + g * patch * cols,
           0.0f, t + g * kg * cols);
    ChunkToOutputKernel<<<BlocksFor(a.k * cols), kThreads, 0, stream_>>>(a.k, p_count, n0, nb,
                                                                         t, bias, y);
    DTSIM_CUDA_CHECK_LAUNCH();
  }
}

void CudaBackend::Conv2dBackward(const Conv2dArgs& a, const float* x, const float* w,
                                 const float* dy, float* dx, float* dw, float* dbias) {
  CheckConv(a);
  if (a.n == 0) return;
  UseDevice();
  const std::int64_t p_count = a.oh * a.ow, kg = a.k / a.groups;
  const std::int64_t patch = (a.c / a.groups) * a.r * a.s;
  if (dbias) {
    ConvBiasGradKernel<<<BlocksForItems(a.k), kThreads, 0, stream_>>>(a.n, a.k, p_count, dy,
                                                                      dbias);
    DTSIM_CUDA_CHECK_LAUNCH();
  }
  if (!dx && !dw) return;
  const std::int64_t chunk = ChunkSamples(a);
  auto* col = static_cast<float*>(Workspace(static_cast<std::size_t>(
      (a.c * a.r * a.s + a.k) * chunk * p_count) * sizeof(float)));
  float* dyt = col + a.c * a.r * a.s * chunk * p_count;
  for (std::int64_t n0 = 0; n0 < a.n; n0 += chunk) {
    const std::int64_t nb = std::min(chunk, a.n - n0), cols = nb * p_count;
    OutputToChunkKernel<<<BlocksFor(a.k * cols), kThreads, 0, stream_>>>(a.k, p_count, n0, nb,
                                                                         dy, dyt);
    DTSIM_CUDA_CHECK_LAUNCH();
    if (dw) {
      Im2ColKernel<<<BlocksFor(a.c * a.r * a.s * cols), kThreads, 0, stream_>>>(a, n0, nb, x,
                                                                                 col);
      DTSIM_CUDA_CHECK_LAUNCH();
      for (int g = 0; g < a.groups; ++g)
        Gemm(false, true, kg, patch, cols, 1.0f, dyt + g * kg * cols, col + g * patch * cols,
             1.0f, dw + g * kg * patch);
    }
    if (dx) {
      // col now becomes dcol (the dw GEMMs above were queued first).
      for (int g = 0; g < a.groups; ++g)
        Gemm(true, false, patch, cols, kg, 1.0f, w + g * kg * patch, dyt + g * kg * cols, 0.0f,
             col + g * patch * cols);
      Col2ImAddKernel<<<BlocksFor(nb * a.c * a.h * a.w), kThreads, 0, stream_>>>(a, n0, nb,
                                                                                  col, dx);
      DTSIM_CUDA_CHECK_LAUNCH();
    }
  }
}

void CudaBackend::MaxPoolForward(const Pool2dArgs& a, const float* x, float* y) {
  CheckPool(a);
  const std::int64_t count = a.n * a.c * a.oh * a.ow;
  if (count == 0) return;
  UseDevice();
  MaxPoolForwardKernel<<<BlocksFor(count), kThreads, 0, stream_>>>(a, x, y);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::MaxPoolBackward(const Pool2dArgs& a, const float* x, const float* dy,
                                  float* dx) {
  CheckPool(a);
  const std::int64_t count = a.n * a.c * a.h * a.w;
  if (!dx || count == 0) return;
  UseDevice();
  MaxPoolBackwardKernel<<<BlocksFor(count), kThreads, 0, stream_>>>(a, x, dy, dx);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::AvgPoolForward(const Pool2dArgs& a, const float* x, float* y) {
  CheckPool(a);
  const std::int64_t count = a.n * a.c * a.oh * a.ow;
  if (count == 0) return;
  UseDevice();
  AvgPoolForwardKernel<<<BlocksFor(count), kThreads, 0, stream_>>>(a, x, y);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::AvgPoolBackward(const Pool2dArgs& a, const float* dy, float* dx) {
  CheckPool(a);
  const std::int64_t count = a.n * a.c * a.h * a.w;
  if (!dx || count == 0) return;
  UseDevice();
  AvgPoolBackwardKernel<<<BlocksFor(count), kThreads, 0, stream_>>>(a, dy, dx);
  DTSIM_CUDA_CHECK_LAUNCH();
}

}  // namespace dtsim::exec
