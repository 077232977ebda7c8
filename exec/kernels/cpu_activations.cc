// Elementwise activations and inverted dropout.
#include <cmath>

#include "common/error.h"
#include "exec/counter_rng.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {
namespace {

// GELU's tanh approximation: gelu(x) = 0.5 x (1 + tanh(u)),
// u = sqrt(2/pi) (x + 0.044715 x^3).
template <typename T>
constexpr T kSqrt2OverPi = T(0.7978845608028654);
template <typename T>
constexpr T kGeluCubic = T(0.044715);

}  // namespace

template <typename T>
void ReluForward(Index count, const T* x, T* y) {
  DTSIM_CHECK(count >= 0, "ReluForward: negative count");
  for (Index i = 0; i < count; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

template <typename T>
void ReluBackward(Index count, const T* y, const T* dy, T* dx) {
  DTSIM_CHECK(count >= 0, "ReluBackward: negative count");
  if (dx == nullptr) return;
  for (Index i = 0; i < count; ++i) dx[i] += y[i] > T(0) ? dy[i] : T(0);
}

template <typename T>
void GeluForward(Index count, const T* x, T* y) {
  DTSIM_CHECK(count >= 0, "GeluForward: negative count");
  for (Index i = 0; i < count; ++i) {
    const T v = x[i];
    const T u = kSqrt2OverPi<T> * (v + kGeluCubic<T> * v * v * v);
    y[i] = T(0.5) * v * (T(1) + std::tanh(u));
  }
}

template <typename T>
void GeluBackward(Index count, const T* x, const T* dy, T* dx) {
  DTSIM_CHECK(count >= 0, "GeluBackward: negative count");
  if (dx == nullptr) return;
  for (Index i = 0; i < count; ++i) {
    // d/dx [0.5 x (1 + tanh u)] = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,
    // du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
    const T v = x[i];
    const T u = kSqrt2OverPi<T> * (v + kGeluCubic<T> * v * v * v);
    const T t = std::tanh(u);
    const T du = kSqrt2OverPi<T> * (T(1) + T(3) * kGeluCubic<T> * v * v);
    dx[i] += dy[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
  }
}

template <typename T>
void TanhForward(Index count, const T* x, T* y) {
  DTSIM_CHECK(count >= 0, "TanhForward: negative count");
  for (Index i = 0; i < count; ++i) y[i] = std::tanh(x[i]);
}

template <typename T>
void TanhBackward(Index count, const T* y, const T* dy, T* dx) {
  DTSIM_CHECK(count >= 0, "TanhBackward: negative count");
  if (dx == nullptr) return;
  for (Index i = 0; i < count; ++i) dx[i] += dy[i] * (T(1) - y[i] * y[i]);
}

template <typename T>
void DropoutForward(Index count, float rate, std::uint64_t seed, std::uint64_t offset,
                    const T* x, T* mask, T* y) {
  DTSIM_CHECK(count >= 0, "DropoutForward: negative count");
  DTSIM_CHECK(rate >= 0.0f && rate <= 1.0f, "DropoutForward: rate outside [0, 1]");
  // The keep scale in float, as the CUDA backend computes it. rate = 1
  // drops everything (a uniform in [0, 1) is never >= 1): mask 0, not 0/0.
  const T keep_scale = rate < 1.0f ? static_cast<T>(1.0f / (1.0f - rate)) : T(0);
  for (Index i = 0; i < count; ++i) {
    const float u = CounterUniform(seed, offset + static_cast<std::uint64_t>(i));
    mask[i] = u >= rate ? keep_scale : T(0);
    y[i] = x[i] * mask[i];
  }
}

template <typename T>
void DropoutBackward(Index count, const T* mask, const T* dy, T* dx) {
  DTSIM_CHECK(count >= 0, "DropoutBackward: negative count");
  if (dx == nullptr) return;
  for (Index i = 0; i < count; ++i) dx[i] += dy[i] * mask[i];
}

#define DTSIM_INSTANTIATE(T)                                                        \
  template void ReluForward<T>(Index, const T*, T*);                                \
  template void ReluBackward<T>(Index, const T*, const T*, T*);                     \
  template void GeluForward<T>(Index, const T*, T*);                                \
  template void GeluBackward<T>(Index, const T*, const T*, T*);                     \
  template void TanhForward<T>(Index, const T*, T*);                                \
  template void TanhBackward<T>(Index, const T*, const T*, T*);                     \
  template void DropoutForward<T>(Index, float, std::uint64_t, std::uint64_t, const T*, \
                                  T*, T*);                                          \
  template void DropoutBackward<T>(Index, const T*, const T*, T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
