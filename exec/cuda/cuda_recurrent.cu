// CudaBackend's recurrent cells: one thread per (row, unit), the CPU
// kernel's equations (exec/kernels/cpu_recurrent.cc).
#include <cuda_runtime.h>

#include <cmath>

#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_launch.cuh"

namespace dtsim::exec {
namespace {

using cuda::BlocksFor;
using cuda::kThreads;

__device__ inline float Sig(float x) { return 1.0f / (1.0f + expf(-x)); }

// models::RnnGates on the device.
__device__ inline std::int64_t Gates(models::RnnCell cell) {
  return cell == models::RnnCell::kLstm ? 4 : cell == models::RnnCell::kGru ? 3 : 1;
}

__global__ void RnnCellForwardKernel(models::RnnCell cell, std::int64_t batch, std::int64_t hidden,
                                     const float* gx, const float* gh, const float* h_prev,
                                     const float* c_prev, float* h, float* c, float* act) {
  const std::int64_t width = Gates(cell) * hidden;
  DTSIM_GRID_LOOP(k, batch * hidden) {
    const std::int64_t b = k / hidden, j = k % hidden;
    const float* x = gx + b * width;
    const float* u = gh + b * width;
    float* a = act + b * width;
    if (cell == models::RnnCell::kTanh) {
      h[k] = a[j] = tanhf(x[j] + u[j]);
    } else if (cell == models::RnnCell::kLstm) {
      const float i = Sig(x[j] + u[j]), f = Sig(x[hidden + j] + u[hidden + j]);
      const float g = tanhf(x[2 * hidden + j] + u[2 * hidden + j]);
      const float o = Sig(x[3 * hidden + j] + u[3 * hidden + j]);
      a[j] = i, a[hidden + j] = f, a[2 * hidden + j] = g, a[3 * hidden + j] = o;
      c[k] = f * c_prev[k] + i * g;
      h[k] = o * tanhf(c[k]);
    } else {
      const float r = Sig(x[j] + u[j]), z = Sig(x[hidden + j] + u[hidden + j]);
      const float n = tanhf(x[2 * hidden + j] + r * u[2 * hidden + j]);
      a[j] = r, a[hidden + j] = z, a[2 * hidden + j] = n;
      h[k] = (1.0f - z) * n + z * h_prev[k];
    }
  }
}

__global__ void RnnCellBackwardKernel(models::RnnCell cell, std::int64_t batch,
                                      std::int64_t hidden, const float* gh, const float* h_prev,
                                      const float* c_prev, const float* c, const float* act,
                                      const float* dh, float* dc, float* dgx, float* dgh,
                                      float* dh_prev) {
  const std::int64_t width = Gates(cell) * hidden;
  DTSIM_GRID_LOOP(k, batch * hidden) {
    const std::int64_t b = k / hidden, j = k % hidden;
    const float* a = act + b * width;
    const float* u = gh + b * width;
    float* dx = dgx + b * width;
    float* du = dgh + b * width;
    if (cell == models::RnnCell::kTanh) {
      dx[j] = du[j] = dh[k] * (1.0f - a[j] * a[j]);
    } else if (cell == models::RnnCell::kLstm) {
      const float i = a[j], f = a[hidden + j], g = a[2 * hidden + j], o = a[3 * hidden + j];
      const float tc = tanhf(c[k]);
      const float dct = dc[k] + dh[k] * o * (1.0f - tc * tc);
      dx[j] = du[j] = dct * g * i * (1.0f - i);
      dx[hidden + j] = du[hidden + j] = dct * c_prev[k] * f * (1.0f - f);
      dx[2 * hidden + j] = du[2 * hidden + j] = dct * i * (1.0f - g * g);
      dx[3 * hidden + j] = du[3 * hidden + j] = dh[k] * tc * o * (1.0f - o);
      dc[k] = dct * f;
    } else {
      const float r = a[j], z = a[hidden + j], n = a[2 * hidden + j];
      const float dn = dh[k] * (1.0f - z) * (1.0f - n * n);
      dx[2 * hidden + j] = dn;
      du[2 * hidden + j] = dn * r;
      dx[j] = du[j] = dn * u[2 * hidden + j] * r * (1.0f - r);
      dx[hidden + j] = du[hidden + j] = dh[k] * (h_prev[k] - n) * z * (1.0f - z);
      dh_prev[k] += dh[k] * z;
    }
  }
}

}  // namespace

void CudaBackend::RnnCellForward(models::RnnCell cell, std::int64_t batch, std::int64_t hidden,
                                 const float* gx, const float* gh, const float* h_prev,
                                 const float* c_prev, float* h, float* c, float* act) {
  if (batch <= 0 || hidden <= 0) return;
  UseDevice();
  RnnCellForwardKernel<<<BlocksFor(batch * hidden), kThreads, 0, stream_>>>(
      cell, batch, hidden, gx, gh, h_prev, c_prev, h, c, act);
  DTSIM_CUDA_CHECK_LAUNCH();
}

void CudaBackend::RnnCellBackward(models::RnnCell cell, std::int64_t batch, std::int64_t hidden,
                                  const float* gh, const float* h_prev, const float* c_prev,
                                  const float* c, const float* act, const float* dh, float* dc,
                                  float* dgx, float* dgh, float* dh_prev) {
  if (batch <= 0 || hidden <= 0) return;
  UseDevice();
  RnnCellBackwardKernel<<<BlocksFor(batch * hidden), kThreads, 0, stream_>>>(
      cell, batch, hidden, gh, h_prev, c_prev, c, act, dh, dc, dgx, dgh, dh_prev);
  DTSIM_CUDA_CHECK_LAUNCH();
}

}  // namespace dtsim::exec
