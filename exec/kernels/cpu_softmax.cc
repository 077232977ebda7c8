// Row softmax, optionally causal, and its backward.
#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {

template <typename T>
void SoftmaxForward(Index rows, Index cols, bool causal, const T* x, T* y) {
  DTSIM_CHECK(rows >= 0 && cols > 0, "SoftmaxForward: bad shape");
  for (Index i = 0; i < rows; ++i) {
    const T* in = x + i * cols;
    T* out = y + i * cols;
    // Columns [0, valid) take part; the causal mask hides j > i % cols.
    const Index valid = causal ? i % cols + 1 : cols;
    T max = in[0];
    for (Index j = 1; j < valid; ++j) max = std::max(max, in[j]);
    T sum = 0;
    for (Index j = 0; j < valid; ++j) {
      out[j] = std::exp(in[j] - max);
      sum += out[j];
    }
    const T inv = T(1) / sum;
    for (Index j = 0; j < valid; ++j) out[j] *= inv;
    for (Index j = valid; j < cols; ++j) out[j] = T(0);
  }
}

template <typename T>
void SoftmaxBackward(Index rows, Index cols, const T* y, const T* dy, T* dx) {
  DTSIM_CHECK(rows >= 0 && cols > 0, "SoftmaxBackward: bad shape");
  if (dx == nullptr) return;
  for (Index i = 0; i < rows; ++i) {
    const T* p = y + i * cols;
    const T* g = dy + i * cols;
    T dot = 0;
    for (Index j = 0; j < cols; ++j) dot += p[j] * g[j];
    T* out = dx + i * cols;
    for (Index j = 0; j < cols; ++j) out[j] += p[j] * (g[j] - dot);
  }
}

#define DTSIM_INSTANTIATE(T)                                               \
  template void SoftmaxForward<T>(Index, Index, bool, const T*, T*);       \
  template void SoftmaxBackward<T>(Index, Index, const T*, const T*, T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
