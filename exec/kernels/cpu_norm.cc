// Layer norm and RMS norm (per row), batch norm (per channel over batch and
// space).
//
// Both normalise a group of M values: xhat = (x - mean) * rstd with
// rstd = 1 / sqrt(var + eps) (biased variance), y = xhat * gamma + beta.
// Backward, with g = dy * gamma:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
//   dgamma = sum(dy * xhat), dbeta = sum(dy).
#include <cmath>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {

template <typename T>
void LayerNormForward(Index rows, Index cols, T eps, const T* x, const T* gamma,
                      const T* beta, T* y, T* mean, T* rstd) {
  DTSIM_CHECK(rows >= 0 && cols > 0 && eps >= T(0), "LayerNormForward: bad arguments");
  for (Index i = 0; i < rows; ++i) {
    const T* in = x + i * cols;
    T sum = 0;
    for (Index j = 0; j < cols; ++j) sum += in[j];
    const T mu = sum / static_cast<T>(cols);
    T sq = 0;
    for (Index j = 0; j < cols; ++j) sq += (in[j] - mu) * (in[j] - mu);
    const T r = T(1) / std::sqrt(sq / static_cast<T>(cols) + eps);
    T* out = y + i * cols;
    for (Index j = 0; j < cols; ++j) out[j] = (in[j] - mu) * r * gamma[j] + beta[j];
    mean[i] = mu;
    rstd[i] = r;
  }
}

template <typename T>
void LayerNormBackward(Index rows, Index cols, const T* x, const T* gamma, const T* mean,
                       const T* rstd, const T* dy, T* dx, T* dgamma, T* dbeta) {
  DTSIM_CHECK(rows >= 0 && cols > 0, "LayerNormBackward: bad shape");
  for (Index i = 0; i < rows; ++i) {
    const T* in = x + i * cols;
    const T* g_out = dy + i * cols;
    const T mu = mean[i], r = rstd[i];
    T sum_g = 0, sum_gx = 0;  // sums of g and g * xhat
    for (Index j = 0; j < cols; ++j) {
      const T xhat = (in[j] - mu) * r;
      const T g = g_out[j] * gamma[j];
      sum_g += g;
      sum_gx += g * xhat;
      if (dgamma != nullptr) dgamma[j] += g_out[j] * xhat;
      if (dbeta != nullptr) dbeta[j] += g_out[j];
    }
    if (dx == nullptr) continue;
    const T mean_g = sum_g / static_cast<T>(cols), mean_gx = sum_gx / static_cast<T>(cols);
    T* g_in = dx + i * cols;
    for (Index j = 0; j < cols; ++j) {
      const T xhat = (in[j] - mu) * r;
      g_in[j] += r * (g_out[j] * gamma[j] - mean_g - xhat * mean_gx);
    }
  }
}

template <typename T>
void BatchNormForward(Index n, Index c, Index spatial, T eps, const T* x, const T* gamma,
                      const T* beta, T* y, T* mean, T* rstd) {
  DTSIM_CHECK(n > 0 && c >= 0 && spatial > 0 && eps >= T(0), "BatchNormForward: bad arguments");
  const T count = static_cast<T>(n * spatial);
  for (Index ch = 0; ch < c; ++ch) {
    T sum = 0;
    for (Index b = 0; b < n; ++b) {
      const T* in = x + (b * c + ch) * spatial;
      for (Index s = 0; s < spatial; ++s) sum += in[s];
    }
    const T mu = sum / count;
    T sq = 0;
    for (Index b = 0; b < n; ++b) {
      const T* in = x + (b * c + ch) * spatial;
      for (Index s = 0; s < spatial; ++s) sq += (in[s] - mu) * (in[s] - mu);
    }
    const T r = T(1) / std::sqrt(sq / count + eps);
    const T scale = r * gamma[ch];
    for (Index b = 0; b < n; ++b) {
      const T* in = x + (b * c + ch) * spatial;
      T* out = y + (b * c + ch) * spatial;
      for (Index s = 0; s < spatial; ++s) out[s] = (in[s] - mu) * scale + beta[ch];
    }
    mean[ch] = mu;
    rstd[ch] = r;
  }
}

template <typename T>
void BatchNormBackward(Index n, Index c, Index spatial, const T* x, const T* gamma,
                       const T* mean, const T* rstd, const T* dy, T* dx, T* dgamma,
                       T* dbeta) {
  DTSIM_CHECK(n > 0 && c >= 0 && spatial > 0, "BatchNormBackward: bad shape");
  const T count = static_cast<T>(n * spatial);
  for (Index ch = 0; ch < c; ++ch) {
    const T mu = mean[ch], r = rstd[ch];
    T sum_dy = 0, sum_dy_xhat = 0;
    for (Index b = 0; b < n; ++b) {
      const T* in = x + (b * c + ch) * spatial;
      const T* g_out = dy + (b * c + ch) * spatial;
      for (Index s = 0; s < spatial; ++s) {
        sum_dy += g_out[s];
        sum_dy_xhat += g_out[s] * (in[s] - mu) * r;
      }
    }
    if (dgamma != nullptr) dgamma[ch] += sum_dy_xhat;
    if (dbeta != nullptr) dbeta[ch] += sum_dy;
    if (dx == nullptr) continue;
    // g = dy * gamma, so mean(g) = gamma * sum_dy / M and
    // mean(g * xhat) = gamma * sum_dy_xhat / M.
    const T mean_g = gamma[ch] * sum_dy / count;
    const T mean_gx = gamma[ch] * sum_dy_xhat / count;
    for (Index b = 0; b < n; ++b) {
      const T* in = x + (b * c + ch) * spatial;
      const T* g_out = dy + (b * c + ch) * spatial;
      T* g_in = dx + (b * c + ch) * spatial;
      for (Index s = 0; s < spatial; ++s) {
        const T xhat = (in[s] - mu) * r;
        g_in[s] += r * (g_out[s] * gamma[ch] - mean_g - xhat * mean_gx);
      }
    }
  }
}

template <typename T>
void RmsNormForward(Index rows, Index cols, T eps, const T* x, const T* gamma, T* y, T* rstd) {
  DTSIM_CHECK(rows >= 0 && cols > 0 && eps >= T(0), "RmsNormForward: bad arguments");
  for (Index i = 0; i < rows; ++i) {
    const T* in = x + i * cols;
    T sq = 0;
    for (Index j = 0; j < cols; ++j) sq += in[j] * in[j];
    const T r = T(1) / std::sqrt(sq / static_cast<T>(cols) + eps);
    T* out = y + i * cols;
    for (Index j = 0; j < cols; ++j) out[j] = in[j] * r * gamma[j];
    rstd[i] = r;
  }
}

template <typename T>
void RmsNormBackward(Index rows, Index cols, const T* x, const T* gamma, const T* rstd,
                     const T* dy, T* dx, T* dgamma) {
  DTSIM_CHECK(rows >= 0 && cols > 0, "RmsNormBackward: bad shape");
  for (Index i = 0; i < rows; ++i) {
    const T* in = x + i * cols;
    const T* g_out = dy + i * cols;
    const T r = rstd[i];
    T sum_gx = 0;  // sum of g * xhat, g = dy * gamma
    for (Index j = 0; j < cols; ++j) {
      const T xhat = in[j] * r;
      sum_gx += g_out[j] * gamma[j] * xhat;
      if (dgamma != nullptr) dgamma[j] += g_out[j] * xhat;
    }
    if (dx == nullptr) continue;
    const T mean_gx = sum_gx / static_cast<T>(cols);
    T* g_in = dx + i * cols;
    for (Index j = 0; j < cols; ++j) g_in[j] += r * (g_out[j] * gamma[j] - in[j] * r * mean_gx);
  }
}

#define DTSIM_INSTANTIATE(T)                                                              \
  template void LayerNormForward<T>(Index, Index, T, const T*, const T*, const T*, T*, T*, \
                                    T*);                                                  \
  template void LayerNormBackward<T>(Index, Index, const T*, const T*, const T*, const T*, \
                                     const T*, T*, T*, T*);                               \
  template void RmsNormForward<T>(Index, Index, T, const T*, const T*, T*, T*);            \
  template void RmsNormBackward<T>(Index, Index, const T*, const T*, const T*, const T*,   \
                                   T*, T*);                                               \
  template void BatchNormForward<T>(Index, Index, Index, T, const T*, const T*, const T*,  \
                                    T*, T*, T*);                                          \
  template void BatchNormBackward<T>(Index, Index, Index, const T*, const T*, const T*,    \
                                     const T*, const T*, T*, T*, T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
