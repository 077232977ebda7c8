// Helpers shared by the CUDA backend's kernel files (nvcc only): launch
// sizes for grid-stride loops and block-wide reductions.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace dtsim::exec::cuda {

// Threads per block for elementwise kernels and row reductions.
constexpr int kThreads = 256;
// Grid-stride loops cover any count, so grids are capped (blocks).
constexpr std::int64_t kMaxBlocks = 1 << 20;

// Blocks for a grid-stride loop over `count` (> 0) items.
inline unsigned int BlocksFor(std::int64_t count, int threads = kThreads) {
  return static_cast<unsigned int>(std::min<std::int64_t>((count + threads - 1) / threads,
                                                          kMaxBlocks));
}

// Blocks when each block handles one of `items` (> 0) rows/channels in a
// grid-stride loop over items.
inline unsigned int BlocksForItems(std::int64_t items) {
  return static_cast<unsigned int>(std::min<std::int64_t>(items, kMaxBlocks));
}

// Grid-stride index loop: for (i = global thread; i < n; i += all threads).
#define DTSIM_GRID_LOOP(i, n)                                                               \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;  \
       i < (n); i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

__device__ inline float WarpSum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float WarpMax(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum of `v` over the block, returned to every thread. REQUIRES: blockDim.x
// a multiple of 32 and <= 1024, called by every thread of the block. The
// order of additions depends only on blockDim, so results are deterministic.
__device__ inline float BlockSum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = WarpSum(v);
  __syncthreads();  // `partial` may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  v = lane < warps ? partial[lane] : 0.0f;
  return WarpSum(v);
}

// Maximum of `v` over the block; same requirements as BlockSum.
__device__ inline float BlockMax(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = WarpMax(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  v = lane < warps ? partial[lane] : -INFINITY;
  return WarpMax(v);
}

}  // namespace dtsim::exec::cuda
