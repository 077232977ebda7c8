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
#include <climits>
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
        a.r > a.pad_h && a.s > a.pad_w && a.h * a.w <= INT_MAX && a.oh * a.ow <= INT_MAX))
    throw std::invalid_argument(
        "CudaBackend Pool2d: bad shape, window, stride or padding, a window outside the input, "
        "or a plane of 2^31 or more positions");
}

// The copy kernels below run on a 3-D grid: x over the positions of one
// plane (P or H * W, a thread each), y over rows or channels, z over the
// chunk's samples, each a grid-stride loop. Index arithmetic inside a plane
// and a chunk is 32-bit (CheckConvFitsInt): 64-bit division costs tens of
// instructions on the GPU: with it, these copies took 63 of the 143 ms of
// kernel time of a ResNet-50 step on an H100 (ncu; results/h100/).
struct CopyGrid {
  dim3 grid, block;
};

CopyGrid GridFor(std::int64_t plane, std::int64_t rows, std::int64_t samples) {
  // Threads: the plane rounded up to whole warps, at most kThreads, so that
  // 7 x 7 planes do not leave most of a 256-thread block idle.
  const std::int64_t threads =
      std::min<std::int64_t>(kThreads, std::max<std::int64_t>(32, (plane + 31) / 32 * 32));
  const std::int64_t x = std::min<std::int64_t>((plane + threads - 1) / threads, 1 << 16);
  constexpr std::int64_t kMaxYz = 65535;  // gridDim.y and gridDim.z limit
  // Each thread copies kSamplesPerThread samples' elements. With one (a
  // block per sample, 49 elements each in a 7 x 7 layer), im2col took
  // 19.8 ms of a ResNet-50 step on an H100; with eight, 7.3 ms (ncu).
  constexpr std::int64_t kSamplesPerThread = 8;
  const std::int64_t z = (samples + kSamplesPerThread - 1) / kSamplesPerThread;
  return {dim3(static_cast<unsigned>(x), static_cast<unsigned>(std::min(rows, kMaxYz)),
               static_cast<unsigned>(std::min(z, kMaxYz))),
          dim3(static_cast<unsigned>(threads))};
}

#define DTSIM_PLANE_LOOP(p, count) \
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < (count); p += gridDim.x * blockDim.x)
#define DTSIM_Y_LOOP(v, count) for (int v = blockIdx.y; v < (count); v += gridDim.y)
#define DTSIM_Z_LOOP(v, count) for (int v = blockIdx.z; v < (count); v += gridDim.z)

// col (C * R * S, nb * P) from samples [n0, n0 + nb) of x (N, C, H, W):
// col[row][j * P + p], row = (ch * R + kr) * S + ks.
__global__ void Im2ColKernel(Conv2dArgs a, std::int64_t n0, int nb, const float* x,
                             float* col) {
  const int h = static_cast<int>(a.h), w = static_cast<int>(a.w), ow = static_cast<int>(a.ow);
  const int p_count = static_cast<int>(a.oh) * ow, rows = static_cast<int>(a.c * a.r * a.s);
  const int r = static_cast<int>(a.r), s = static_cast<int>(a.s);
  const std::int64_t cols = std::int64_t{nb} * p_count, plane = std::int64_t{h} * w;
  DTSIM_PLANE_LOOP(p, p_count) {
    const int oy = p / ow, ox = p - oy * ow;
    const int y0 = oy * static_cast<int>(a.stride_h) - static_cast<int>(a.pad_h);
    const int x0 = ox * static_cast<int>(a.stride_w) - static_cast<int>(a.pad_w);
    DTSIM_Y_LOOP(row, rows) {
      const int ks = row % s, kr = (row / s) % r, ch = row / (s * r);
      const int iy = y0 + kr, ix = x0 + ks;
      const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
      const float* in = inside ? x + (n0 * a.c + ch) * plane + iy * w + ix : nullptr;
      float* out = col + row * cols + p;
      DTSIM_Z_LOOP(j, nb) out[std::int64_t{j} * p_count] = inside ? in[j * a.c * plane] : 0.0f;
    }
  }
}

// dx[n0 + j] (C, H, W) += the entries of dcol (C * R * S, nb * P) that im2col
// read from each element, in (kr, ks) order (the order of a sequential
// col2im scatter).
__global__ void Col2ImAddKernel(Conv2dArgs a, std::int64_t n0, int nb, const float* dcol,
                                float* dx) {
  const int h = static_cast<int>(a.h), w = static_cast<int>(a.w), c = static_cast<int>(a.c);
  const int oh = static_cast<int>(a.oh), ow = static_cast<int>(a.ow);
  const int r = static_cast<int>(a.r), s = static_cast<int>(a.s);
  const int stride_h = static_cast<int>(a.stride_h), stride_w = static_cast<int>(a.stride_w);
  const int pad_h = static_cast<int>(a.pad_h), pad_w = static_cast<int>(a.pad_w);
  const int p_count = oh * ow;
  const std::int64_t cols = std::int64_t{nb} * p_count, plane = std::int64_t{h} * w;
  DTSIM_PLANE_LOOP(i, h * w) {
    const int iy = i / w, ix = i - iy * w;
    DTSIM_Y_LOOP(ch, c) {
      DTSIM_Z_LOOP(j, nb) {
        float& out = dx[((n0 + j) * a.c + ch) * plane + i];
        const float* in = dcol + std::int64_t{j} * p_count;
        float acc = out;
        for (int kr = 0; kr < r; ++kr) {
          const int ty = iy + pad_h - kr;  // = oy * stride_h
          if (ty < 0 || ty % stride_h != 0 || ty / stride_h >= oh) continue;
          const int oy = ty / stride_h;
          for (int ks = 0; ks < s; ++ks) {
            const int tx = ix + pad_w - ks;
            if (tx < 0 || tx % stride_w != 0 || tx / stride_w >= ow) continue;
            const std::int64_t row = (std::int64_t{ch} * r + kr) * s + ks;
            acc += in[row * cols + oy * ow + tx / stride_w];
          }
        }
        out = acc;
      }
    }
  }
}

// y[n0 + j] (K, P) = t (K, nb * P) columns of sample j, + bias (K or null).
__global__ void ChunkToOutputKernel(int k, int p_count, std::int64_t n0, int nb, const float* t,
                                    const float* bias, float* y) {
  const std::int64_t cols = std::int64_t{nb} * p_count;
  DTSIM_PLANE_LOOP(p, p_count) {
    DTSIM_Y_LOOP(ch, k) {
      const float b = bias ? bias[ch] : 0.0f;
      DTSIM_Z_LOOP(j, nb) {
        const float v = t[ch * cols + std::int64_t{j} * p_count + p];
        y[((n0 + j) * k + ch) * p_count + p] = bias ? v + b : v;
      }
    }
  }
}

// dyt (K, nb * P) = samples [n0, n0 + nb) of dy (N, K, P).
__global__ void OutputToChunkKernel(int k, int p_count, std::int64_t n0, int nb, const float* dy,
                                    float* dyt) {
  const std::int64_t cols = std::int64_t{nb} * p_count;
  DTSIM_PLANE_LOOP(p, p_count) {
    DTSIM_Y_LOOP(ch, k) {
      DTSIM_Z_LOOP(j, nb) {
        dyt[ch * cols + std::int64_t{j} * p_count + p] = dy[((n0 + j) * k + ch) * p_count + p];
      }
    }
  }
}

// y (N, K, P) += bias[k] (the pointwise convolution's GEMMs write y whole).
__global__ void AddChannelBiasKernel(int k, int p_count, std::int64_t n, const float* bias,
                                     float* y) {
  DTSIM_PLANE_LOOP(p, p_count) {
    DTSIM_Y_LOOP(ch, k) {
      const float b = bias[ch];
      for (std::int64_t j = blockIdx.z; j < n; j += gridDim.z)
        y[(j * k + ch) * p_count + p] += b;
    }
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
// Kernels run on GridFor(plane, planes, 1) grids; positions inside a plane
// are 32-bit (CheckPool bounds H * W and OH * OW).

struct Window {
  int y0, y1, x0, x1;
};

// The pooling geometry as 32-bit integers.
struct PoolDims {
  int h, w, oh, ow, r, s, stride_h, stride_w, pad_h, pad_w;
};

PoolDims DimsOf(const Pool2dArgs& a) {
  return {static_cast<int>(a.h),        static_cast<int>(a.w),        static_cast<int>(a.oh),
          static_cast<int>(a.ow),       static_cast<int>(a.r),        static_cast<int>(a.s),
          static_cast<int>(a.stride_h), static_cast<int>(a.stride_w), static_cast<int>(a.pad_h),
          static_cast<int>(a.pad_w)};
}

__device__ inline Window WindowOf(const PoolDims& d, int oy, int ox) {
  const int y = oy * d.stride_h - d.pad_h, x = ox * d.stride_w - d.pad_w;
  return {y > 0 ? y : 0, y + d.r < d.h ? y + d.r : d.h, x > 0 ? x : 0,
          x + d.s < d.w ? x + d.s : d.w};
}

// Index in the (H, W) plane of the window's first maximum (row-major).
__device__ inline int ArgMax(const PoolDims& d, const Window& win, const float* plane) {
  int best = win.y0 * d.w + win.x0;
  float best_value = plane[best];
  for (int iy = win.y0; iy < win.y1; ++iy)
    for (int ix = win.x0; ix < win.x1; ++ix) {
      const float v = plane[iy * d.w + ix];
      if (v > best_value) best = iy * d.w + ix, best_value = v;
    }
  return best;
}

// Output rows (or columns) whose windows contain input row `i`: [lo, hi].
__device__ inline void CoveringOutputs(int i, int pad, int window, int stride, int outputs,
                                       int* lo, int* hi) {
  // o * stride - pad <= i < o * stride - pad + window
  const int first = i + pad - window + 1;
  *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  const int last = (i + pad) / stride;
  *hi = last < outputs - 1 ? last : outputs - 1;
}

#define DTSIM_PLANES_LOOP(plane, count) \
  for (std::int64_t plane = blockIdx.y; plane < (count); plane += gridDim.y)

__global__ void MaxPoolForwardKernel(PoolDims d, std::int64_t planes, const float* x,
                                     float* y) {
  DTSIM_PLANE_LOOP(o, d.oh * d.ow) {
    const int oy = o / d.ow, ox = o - oy * d.ow;
    DTSIM_PLANES_LOOP(plane, planes) {
      const float* in = x + plane * d.h * d.w;
      y[plane * d.oh * d.ow + o] = in[ArgMax(d, WindowOf(d, oy, ox), in)];
    }
  }
}

// dx element += dy of every window whose first maximum it is, in row-major
// window order (the order of a sequential scatter).
__global__ void MaxPoolBackwardKernel(PoolDims d, std::int64_t planes, const float* x,
                                      const float* dy, float* dx) {
  DTSIM_PLANE_LOOP(i, d.h * d.w) {
    const int iy = i / d.w, ix = i - iy * d.w;
    int oy0, oy1, ox0, ox1;
    CoveringOutputs(iy, d.pad_h, d.r, d.stride_h, d.oh, &oy0, &oy1);
    CoveringOutputs(ix, d.pad_w, d.s, d.stride_w, d.ow, &ox0, &ox1);
    DTSIM_PLANES_LOOP(plane, planes) {
      const float* in = x + plane * d.h * d.w;
      const float* grad = dy + plane * d.oh * d.ow;
      float& out = dx[plane * d.h * d.w + i];
      float acc = out;
      for (int oy = oy0; oy <= oy1; ++oy)
        for (int ox = ox0; ox <= ox1; ++ox)
          if (ArgMax(d, WindowOf(d, oy, ox), in) == i) acc += grad[oy * d.ow + ox];
      out = acc;
    }
  }
}

__global__ void AvgPoolForwardKernel(PoolDims d, std::int64_t planes, const float* x,
                                     float* y) {
  DTSIM_PLANE_LOOP(o, d.oh * d.ow) {
    const int oy = o / d.ow, ox = o - oy * d.ow;
    const Window win = WindowOf(d, oy, ox);
    const float count = static_cast<float>((win.y1 - win.y0) * (win.x1 - win.x0));
    DTSIM_PLANES_LOOP(plane, planes) {
      const float* in = x + plane * d.h * d.w;
      float sum = 0.0f;
      for (int iy = win.y0; iy < win.y1; ++iy)
        for (int ix = win.x0; ix < win.x1; ++ix) sum += in[iy * d.w + ix];
      y[plane * d.oh * d.ow + o] = sum / count;
    }
  }
}

__global__ void AvgPoolBackwardKernel(PoolDims d, std::int64_t planes, const float* dy,
                                      float* dx) {
  DTSIM_PLANE_LOOP(i, d.h * d.w) {
    const int iy = i / d.w, ix = i - iy * d.w;
    int oy0, oy1, ox0, ox1;
    CoveringOutputs(iy, d.pad_h, d.r, d.stride_h, d.oh, &oy0, &oy1);
    CoveringOutputs(ix, d.pad_w, d.s, d.stride_w, d.ow, &ox0, &ox1);
    DTSIM_PLANES_LOOP(plane, planes) {
      const float* grad = dy + plane * d.oh * d.ow;
      float& out = dx[plane * d.h * d.w + i];
      float acc = out;
      for (int oy = oy0; oy <= oy1; ++oy) {
        for (int ox = ox0; ox <= ox1; ++ox) {
          const Window win = WindowOf(d, oy, ox);
          acc += grad[oy * d.ow + ox] / static_cast<float>((win.y1 - win.y0) * (win.x1 - win.x0));
        }
      }
      out = acc;
    }
  }
}

// Samples per convolution chunk so that col and t fit the workspace budget.
std::int64_t ChunkSamples(const Conv2dArgs& a) {
  const std::int64_t per_sample = (a.c * a.r * a.s + a.k) * a.oh * a.ow;
  return std::max<std::int64_t>(1, std::min(a.n, kConvWorkspaceFloats / per_sample));
}

// The copy kernels index planes, rows and channels with 32-bit integers.
void CheckConvFitsInt(const Conv2dArgs& a) {
  constexpr std::int64_t kMax = INT_MAX;
  if (a.h * a.w > kMax || a.oh * a.ow > kMax || a.c * a.r * a.s > kMax || a.k > kMax ||
      ChunkSamples(a) > kMax)
    throw std::invalid_argument(
        "CudaBackend Conv2d: a plane, the patch rows or the channels exceed 2^31 - 1");
}

// 1 x 1, stride 1, no padding: each sample's input (C, H * W) is its own
// im2col, so the GEMMs read x and dy and write y and dx in place, one per
// sample (strided batched, the weights shared): no copies.
bool Pointwise(const Conv2dArgs& a) {
  return a.r == 1 && a.s == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 &&
         a.pad_w == 0;
}

}  // namespace

void CudaBackend::Conv2dForward(const Conv2dArgs& a, const float* x, const float* w,
                                const float* bias, float* y) {
  CheckConv(a);
  if (a.n == 0) return;
  CheckConvFitsInt(a);
  UseDevice();
  const std::int64_t p_count = a.oh * a.ow, kg = a.k / a.groups;
  const std::int64_t patch = (a.c / a.groups) * a.r * a.s;  // rows of col_g
  if (Pointwise(a)) {
    // y_n,g (K/groups, P) = w_g (K/groups, C/groups) x_n,g (C/groups, P)
    for (int g = 0; g < a.groups; ++g)
      GemmBatched(a.n, false, false, kg, p_count, patch, 1.0f, w + g * kg * patch, 0,
                  x + g * patch * p_count, a.c * p_count, 0.0f, y + g * kg * p_count,
                  a.k * p_count);
    if (bias) {
      const CopyGrid cg = GridFor(p_count, a.k, a.n);
      AddChannelBiasKernel<<<cg.grid, cg.block, 0, stream_>>>(
          static_cast<int>(a.k), static_cast<int>(p_count), a.n, bias, y);
      DTSIM_CUDA_CHECK_LAUNCH();
    }
    return;
  }
  const std::int64_t chunk = ChunkSamples(a);
  auto* col = static_cast<float*>(Workspace(static_cast<std::size_t>(
      (a.c * a.r * a.s + a.k) * chunk * p_count) * sizeof(float)));
  float* t = col + a.c * a.r * a.s * chunk * p_count;
  for (std::int64_t n0 = 0; n0 < a.n; n0 += chunk) {
    const std::int64_t nb = std::min(chunk, a.n - n0), cols = nb * p_count;
    const CopyGrid im2col = GridFor(p_count, a.c * a.r * a.s, nb);
    Im2ColKernel<<<im2col.grid, im2col.block, 0, stream_>>>(a, n0, static_cast<int>(nb), x, col);
    DTSIM_CUDA_CHECK_LAUNCH();
    for (int g = 0; g < a.groups; ++g)
      Gemm(false, false, kg, cols, patch, 1.0f, w + g * kg * patch, col + g * patch * cols,
           0.0f, t + g * kg * cols);
    const CopyGrid out = GridFor(p_count, a.k, nb);
    ChunkToOutputKernel<<<out.grid, out.block, 0, stream_>>>(
        static_cast<int>(a.k), static_cast<int>(p_count), n0, static_cast<int>(nb), t, bias, y);
    DTSIM_CUDA_CHECK_LAUNCH();
  }
}

void CudaBackend::Conv2dBackward(const Conv2dArgs& a, const float* x, const float* w,
                                 const float* dy, float* dx, float* dw, float* dbias) {
  CheckConv(a);
  if (a.n == 0) return;
  CheckConvFitsInt(a);
  UseDevice();
  const std::int64_t p_count = a.oh * a.ow, kg = a.k / a.groups;
  const std::int64_t patch = (a.c / a.groups) * a.r * a.s;
  if (dbias) {
    ConvBiasGradKernel<<<BlocksForItems(a.k), kThreads, 0, stream_>>>(a.n, a.k, p_count, dy,
                                                                      dbias);
    DTSIM_CUDA_CHECK_LAUNCH();
  }
  const bool pointwise = Pointwise(a);
  if (dx && pointwise) {
    // dx_n,g (C/groups, P) += w_g^T dy_n,g (K/groups, P), straight into dx.
    for (int g = 0; g < a.groups; ++g)
      GemmBatched(a.n, true, false, patch, p_count, kg, 1.0f, w + g * kg * patch, 0,
                  dy + g * kg * p_count, a.k * p_count, 1.0f, dx + g * patch * p_count,
                  a.c * p_count);
  }
  const bool col_dx = dx && !pointwise;
  if (!col_dx && !dw) return;
  // dw sums over samples and positions alike, so it needs dy as (K, nb * P)
  // and the input as col (C * R * S, nb * P): one GEMM per group and chunk.
  const std::int64_t chunk = ChunkSamples(a);
  auto* col = static_cast<float*>(Workspace(static_cast<std::size_t>(
      (a.c * a.r * a.s + a.k) * chunk * p_count) * sizeof(float)));
  float* dyt = col + a.c * a.r * a.s * chunk * p_count;
  for (std::int64_t n0 = 0; n0 < a.n; n0 += chunk) {
    const std::int64_t nb = std::min(chunk, a.n - n0), cols = nb * p_count;
    const CopyGrid in = GridFor(p_count, a.k, nb);
    OutputToChunkKernel<<<in.grid, in.block, 0, stream_>>>(
        static_cast<int>(a.k), static_cast<int>(p_count), n0, static_cast<int>(nb), dy, dyt);
    DTSIM_CUDA_CHECK_LAUNCH();
    if (dw) {
      const CopyGrid im2col = GridFor(p_count, a.c * a.r * a.s, nb);
      Im2ColKernel<<<im2col.grid, im2col.block, 0, stream_>>>(a, n0, static_cast<int>(nb), x,
                                                              col);
      DTSIM_CUDA_CHECK_LAUNCH();
      for (int g = 0; g < a.groups; ++g)
        Gemm(false, true, kg, patch, cols, 1.0f, dyt + g * kg * cols, col + g * patch * cols,
             1.0f, dw + g * kg * patch);
    }
    if (col_dx) {
      // col now becomes dcol (the dw GEMMs above were queued first).
      for (int g = 0; g < a.groups; ++g)
        Gemm(true, false, patch, cols, kg, 1.0f, w + g * kg * patch, dyt + g * kg * cols, 0.0f,
             col + g * patch * cols);
      const CopyGrid back = GridFor(a.h * a.w, a.c, nb);
      Col2ImAddKernel<<<back.grid, back.block, 0, stream_>>>(a, n0, static_cast<int>(nb), col,
                                                             dx);
      DTSIM_CUDA_CHECK_LAUNCH();
    }
  }
}

void CudaBackend::MaxPoolForward(const Pool2dArgs& a, const float* x, float* y) {
  CheckPool(a);
  if (a.n * a.c == 0) return;
  UseDevice();
  const CopyGrid pg = GridFor(a.oh * a.ow, a.n * a.c, 1);
  MaxPoolForwardKernel<<<pg.grid, pg.block, 0, stream_>>>(DimsOf(a), a.n * a.c, x, y);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::MaxPoolBackward(const Pool2dArgs& a, const float* x, const float* dy,
                                  float* dx) {
  CheckPool(a);
  if (!dx || a.n * a.c == 0) return;
  UseDevice();
  const CopyGrid pg = GridFor(a.h * a.w, a.n * a.c, 1);
  MaxPoolBackwardKernel<<<pg.grid, pg.block, 0, stream_>>>(DimsOf(a), a.n * a.c, x, dy, dx);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::AvgPoolForward(const Pool2dArgs& a, const float* x, float* y) {
  CheckPool(a);
  if (a.n * a.c == 0) return;
  UseDevice();
  const CopyGrid pg = GridFor(a.oh * a.ow, a.n * a.c, 1);
  AvgPoolForwardKernel<<<pg.grid, pg.block, 0, stream_>>>(DimsOf(a), a.n * a.c, x, y);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::AvgPoolBackward(const Pool2dArgs& a, const float* dy, float* dx) {
  CheckPool(a);
  if (!dx || a.n * a.c == 0) return;
  UseDevice();
  const CopyGrid pg = GridFor(a.h * a.w, a.n * a.c, 1);
  AvgPoolBackwardKernel<<<pg.grid, pg.block, 0, stream_>>>(DimsOf(a), a.n * a.c, dy, dx);
  DTSIM_CUDA_CHECK_LAUNCH();
}

}  // namespace dtsim::exec
