// One time step of the recurrent cells PyTorch's nn.RNN (tanh), nn.LSTM
// and nn.GRU run (their documentation's equations; gates in their order).
#include <cmath>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {
namespace {

template <typename T>
T Sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

}  // namespace

template <typename T>
void RnnCellForward(models::RnnCell cell, Index batch, Index hidden, const T* gx, const T* gh,
                    const T* h_prev, const T* c_prev, T* h, T* c, T* act) {
  DTSIM_CHECK(batch >= 0 && hidden > 0, "RnnCellForward: bad shape");
  const Index width = models::RnnGates(cell) * hidden;
  for (Index b = 0; b < batch; ++b) {
    const T* x = gx + b * width;
    const T* u = gh + b * width;
    T* a = act + b * width;
    for (Index j = 0; j < hidden; ++j) {
      const Index k = b * hidden + j;
      switch (cell) {
        case models::RnnCell::kTanh:
          h[k] = a[j] = std::tanh(x[j] + u[j]);
          break;
        case models::RnnCell::kLstm: {
          const T i = Sigmoid(x[j] + u[j]), f = Sigmoid(x[hidden + j] + u[hidden + j]);
          const T gg = std::tanh(x[2 * hidden + j] + u[2 * hidden + j]);
          const T o = Sigmoid(x[3 * hidden + j] + u[3 * hidden + j]);
          a[j] = i, a[hidden + j] = f, a[2 * hidden + j] = gg, a[3 * hidden + j] = o;
          c[k] = f * c_prev[k] + i * gg;
          h[k] = o * std::tanh(c[k]);
          break;
        }
        case models::RnnCell::kGru: {
          const T r = Sigmoid(x[j] + u[j]), z = Sigmoid(x[hidden + j] + u[hidden + j]);
          const T n = std::tanh(x[2 * hidden + j] + r * u[2 * hidden + j]);
          a[j] = r, a[hidden + j] = z, a[2 * hidden + j] = n;
          h[k] = (T(1) - z) * n + z * h_prev[k];
          break;
        }
      }
    }
  }
}

template <typename T>
void RnnCellBackward(models::RnnCell cell, Index batch, Index hidden, const T* gh,
                     const T* h_prev, const T* c_prev, const T* c, const T* act, const T* dh,
                     T* dc, T* dgx, T* dgh, T* dh_prev) {
  DTSIM_CHECK(batch >= 0 && hidden > 0, "RnnCellBackward: bad shape");
  const Index width = models::RnnGates(cell) * hidden;
  for (Index b = 0; b < batch; ++b) {
    const T* a = act + b * width;
    const T* u = gh + b * width;
    T* dx = dgx + b * width;
    T* du = dgh + b * width;
    for (Index j = 0; j < hidden; ++j) {
      const Index k = b * hidden + j;
      switch (cell) {
        case models::RnnCell::kTanh:
          dx[j] = du[j] = dh[k] * (T(1) - a[j] * a[j]);
          break;
        case models::RnnCell::kLstm: {
          const T i = a[j], f = a[hidden + j], gg = a[2 * hidden + j], o = a[3 * hidden + j];
          const T tc = std::tanh(c[k]);
          const T dct = dc[k] + dh[k] * o * (T(1) - tc * tc);
          dx[j] = du[j] = dct * gg * i * (T(1) - i);
          dx[hidden + j] = du[hidden + j] = dct * c_prev[k] * f * (T(1) - f);
          dx[2 * hidden + j] = du[2 * hidden + j] = dct * i * (T(1) - gg * gg);
          dx[3 * hidden + j] = du[3 * hidden + j] = dh[k] * tc * o * (T(1) - o);
          dc[k] = dct * f;
          break;
        }
        case models::RnnCell::kGru: {
          const T r = a[j], z = a[hidden + j], n = a[2 * hidden + j];
          const T dn = dh[k] * (T(1) - z) * (T(1) - n * n);  // of n's pre-activation
          dx[2 * hidden + j] = dn;
          du[2 * hidden + j] = dn * r;
          dx[j] = du[j] = dn * u[2 * hidden + j] * r * (T(1) - r);
          dx[hidden + j] = du[hidden + j] = dh[k] * (h_prev[k] - n) * z * (T(1) - z);
          dh_prev[k] += dh[k] * z;
          break;
        }
      }
    }
  }
}

#define DTSIM_INSTANTIATE(T)                                                                     \
  template void RnnCellForward<T>(models::RnnCell, Index, Index, const T*, const T*, const T*,   \
                                  const T*, T*, T*, T*);                                         \
  template void RnnCellBackward<T>(models::RnnCell, Index, Index, const T*, const T*, const T*, \
                                   const T*, const T*, const T*, T*, T*, T*, T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
