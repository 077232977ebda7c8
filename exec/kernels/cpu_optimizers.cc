// Optimizer steps, in place on parameter buffers (formulas in backend_ops.inc).
#include <cmath>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {

template <typename T>
void SgdStep(Index count, T lr, T weight_decay, const T* g, T* p) {
  DTSIM_CHECK(count >= 0, "SgdStep: negative count");
  for (Index i = 0; i < count; ++i) p[i] -= lr * (g[i] + weight_decay * p[i]);
}

template <typename T>
void MomentumStep(Index count, T lr, T momentum, const T* g, T* v, T* p) {
  DTSIM_CHECK(count >= 0, "MomentumStep: negative count");
  for (Index i = 0; i < count; ++i) {
    v[i] = momentum * v[i] + g[i];
    p[i] -= lr * v[i];
  }
}

template <typename T>
void AdamStep(Index count, T lr, T beta1, T beta2, T eps, Index t, const T* g, T* m, T* v,
              T* p) {
  DTSIM_CHECK(count >= 0, "AdamStep: negative count");
  DTSIM_CHECK(t >= 1, "AdamStep: the step t is 1-based");
  // Bias corrections 1 - beta^t, computed once per call.
  const T correction1 = T(1) - std::pow(beta1, static_cast<T>(t));
  const T correction2 = T(1) - std::pow(beta2, static_cast<T>(t));
  for (Index i = 0; i < count; ++i) {
    m[i] = beta1 * m[i] + (T(1) - beta1) * g[i];
    v[i] = beta2 * v[i] + (T(1) - beta2) * g[i] * g[i];
    const T m_hat = m[i] / correction1;
    const T v_hat = v[i] / correction2;
    p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

#define DTSIM_INSTANTIATE(T)                                                    \
  template void SgdStep<T>(Index, T, T, const T*, T*);                          \
  template void MomentumStep<T>(Index, T, T, const T*, T*, T*);                 \
  template void AdamStep<T>(Index, T, T, T, T, Index, const T*, T*, T*, T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
