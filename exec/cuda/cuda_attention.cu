// CudaBackend's fused attention, the CPU kernel's algorithm on the GPU
// (exec/kernels/cpu_attention.cc): one thread per query row walking the keys
// with a running maximum forward; backward in three passes without atomics
// (each result has one writer, sums in a fixed order): D_i = dO_i . O_i per
// query row, dq per query row, dk and dv per key row over the query rows of
// the heads that share it. Correct, not fast: a reference for the plan's
// attention on a GPU, not FlashAttention's tiling.
#include <cuda_runtime.h>

#include <cmath>

#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_launch.cuh"

namespace dtsim::exec {
namespace {

using cuda::BlocksFor;
using cuda::kThreads;

__device__ inline float RowDot(const float* x, const float* y, std::int64_t n) {
  float sum = 0.0f;
  for (std::int64_t c = 0; c < n; ++c) sum += x[c] * y[c];
  return sum;
}

__device__ inline std::int64_t KeysSeen(const AttentionArgs& a, std::int64_t i) {
  return a.causal ? i + 1 : a.s;
}

// The key/value head row base of query row `row` ((b * heads + h) * s + i).
__device__ inline std::int64_t KvHead(const AttentionArgs& a, std::int64_t row) {
  const std::int64_t bh = row / a.s, b = bh / a.heads, h = bh % a.heads;
  return b * a.kv_heads + h / (a.heads / a.kv_heads);
}

__global__ void AttentionForwardKernel(AttentionArgs a, const float* q, const float* k,
                                       const float* v, float* o, float* lse) {
  DTSIM_GRID_LOOP(row, a.n * a.heads * a.s) {
    const std::int64_t i = row % a.s, kvh = KvHead(a, row);
    const float* qi = q + row * a.d;
    const float* kh = k + kvh * a.s * a.d;
    const float* vh = v + kvh * a.s * a.dv;
    float* oi = o + row * a.dv;  // the running output
    for (std::int64_t c = 0; c < a.dv; ++c) oi[c] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (std::int64_t j = 0; j < KeysSeen(a, i); ++j) {
      const float score = a.scale * RowDot(qi, kh + j * a.d, a.d);
      const float m_new = fmaxf(m, score);
      const float rescale = expf(m - m_new), p = expf(score - m_new);
      l = l * rescale + p;
      for (std::int64_t c = 0; c < a.dv; ++c) oi[c] = oi[c] * rescale + p * vh[j * a.dv + c];
      m = m_new;
    }
    for (std::int64_t c = 0; c < a.dv; ++c) oi[c] /= l;
    lse[row] = m + logf(l);
  }
}

__global__ void AttentionDeltaKernel(AttentionArgs a, const float* o, const float* dout,
                                     float* delta) {
  DTSIM_GRID_LOOP(row, a.n * a.heads * a.s) {
    delta[row] = RowDot(dout + row * a.dv, o + row * a.dv, a.dv);
  }
}

__global__ void AttentionDqKernel(AttentionArgs a, const float* q, const float* k, const float* v,
                                  const float* lse, const float* dout, const float* delta,
                                  float* dq) {
  DTSIM_GRID_LOOP(row, a.n * a.heads * a.s) {
    const std::int64_t i = row % a.s, kvh = KvHead(a, row);
    const float* qi = q + row * a.d;
    const float* kh = k + kvh * a.s * a.d;
    const float* vh = v + kvh * a.s * a.dv;
    const float* doi = dout + row * a.dv;
    for (std::int64_t j = 0; j < KeysSeen(a, i); ++j) {
      const float p = expf(a.scale * RowDot(qi, kh + j * a.d, a.d) - lse[row]);
      const float ds = p * (RowDot(doi, vh + j * a.dv, a.dv) - delta[row]);
      for (std::int64_t c = 0; c < a.d; ++c) dq[row * a.d + c] += a.scale * ds * kh[j * a.d + c];
    }
  }
}

// One thread per key row (b, g, j): the query rows of the heads sharing
// key/value head g that see key j, head by head, row by row.
__global__ void AttentionDkDvKernel(AttentionArgs a, const float* q, const float* k,
                                    const float* v, const float* lse, const float* dout,
                                    const float* delta, float* dk, float* dv) {
  const std::int64_t group = a.heads / a.kv_heads;
  DTSIM_GRID_LOOP(key_row, a.n * a.kv_heads * a.s) {
    const std::int64_t j = key_row % a.s, bg = key_row / a.s;
    const std::int64_t b = bg / a.kv_heads, g = bg % a.kv_heads;
    const float* kj = k + key_row * a.d;
    const float* vj = v + key_row * a.dv;
    for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
      for (std::int64_t i = a.causal ? j : 0; i < a.s; ++i) {
        const std::int64_t row = (b * a.heads + h) * a.s + i;
        const float* qi = q + row * a.d;
        const float* doi = dout + row * a.dv;
        const float p = expf(a.scale * RowDot(qi, kj, a.d) - lse[row]);
        const float ds = p * (RowDot(doi, vj, a.dv) - delta[row]);
        if (dk)
          for (std::int64_t c = 0; c < a.d; ++c) dk[key_row * a.d + c] += a.scale * ds * qi[c];
        if (dv)
          for (std::int64_t c = 0; c < a.dv; ++c) dv[key_row * a.dv + c] += p * doi[c];
      }
    }
  }
}

}  // namespace

void CudaBackend::AttentionForward(const AttentionArgs& a, const float* q, const float* k,
                                   const float* v, float* o, float* lse) {
  const std::int64_t rows = a.n * a.heads * a.s;
  if (rows <= 0) return;
  UseDevice();
  AttentionForwardKernel<<<BlocksFor(rows), kThreads, 0, stream_>>>(a, q, k, v, o, lse);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::AttentionBackward(const AttentionArgs& a, const float* q, const float* k,
                                    const float* v, const float* o, const float* lse,
                                    const float* dout, float* dq, float* dk, float* dv) {
  const std::int64_t rows = a.n * a.heads * a.s, key_rows = a.n * a.kv_heads * a.s;
  if (rows <= 0 || (!dq && !dk && !dv)) return;
  UseDevice();
  auto* delta = static_cast<float*>(Workspace(static_cast<std::size_t>(rows) * sizeof(float)));
  AttentionDeltaKernel<<<BlocksFor(rows), kThreads, 0, stream_>>>(a, o, dout, delta);
  DTSIM_CUDA_CHECK_LAUNCH();
  if (dq) {
    AttentionDqKernel<<<BlocksFor(rows), kThreads, 0, stream_>>>(a, q, k, v, lse, dout, delta, dq);
    DTSIM_CUDA_CHECK_LAUNCH();
  }
  if (dk || dv) {
    AttentionDkDvKernel<<<BlocksFor(key_rows), kThreads, 0, stream_>>>(a, q, k, v, lse, dout,
                                                                       delta, dk, dv);
    DTSIM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace dtsim::exec
