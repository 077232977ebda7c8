// Local response normalisation across channels (TensorFlow semantics):
//   d_c = bias + alpha * sum_{c' = c - radius .. c + radius} x_c'^2,
//   y_c = x_c * d_c^(-beta).
// Backward: y_c' depends on x_c through d_c' whenever |c - c'| <= radius
// (the window is symmetric), so
//   dx_c = dy_c * d_c^(-beta)
//          - 2 alpha beta x_c * sum_{|c' - c| <= radius} dy_c' * y_c' / d_c'.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {
namespace {

void CheckArgs(const LrnArgs& a) {
  DTSIM_CHECK(a.n >= 0 && a.c > 0 && a.h > 0 && a.w > 0 && a.radius >= 0, "Lrn: bad shape");
  DTSIM_CHECK(a.bias > 0.0f && a.alpha >= 0.0f, "Lrn: bias must be > 0 and alpha >= 0");
}

// out (C, HW) = sum over the channel window of in (C, HW): the sliding
// window sum, written by planes so that the inner loop runs over HW.
template <typename T>
void ChannelWindowSum(const LrnArgs& a, Index plane, const T* in, T* out) {
  std::fill(out, out + a.c * plane, T(0));
  for (Index ch = 0; ch < a.c; ++ch) {
    const Index lo = std::max<Index>(0, ch - a.radius);
    const Index hi = std::min<Index>(a.c - 1, ch + a.radius);
    T* acc = out + ch * plane;
    for (Index other = lo; other <= hi; ++other) {
      const T* src = in + other * plane;
      for (Index p = 0; p < plane; ++p) acc[p] += src[p];
    }
  }
}

// d (C, HW) = bias + alpha * window sum of x^2, for one sample.
template <typename T>
void Denominator(const LrnArgs& a, Index plane, const T* x, std::vector<T>& sq,
                 std::vector<T>& d) {
  for (Index i = 0; i < a.c * plane; ++i) sq[i] = x[i] * x[i];
  ChannelWindowSum(a, plane, sq.data(), d.data());
  for (Index i = 0; i < a.c * plane; ++i) d[i] = T(a.bias) + T(a.alpha) * d[i];
}

// out = d^(-beta) elementwise. For beta = 0.75 (TensorFlow's CIFAR-10
// tutorial, AlexNet) and 0.5 as square roots, which vectorise where a
// call of pow per element does not (the two differ in the last bit or so).
template <typename T>
void InversePower(Index count, T beta, const T* d, T* out) {
  if (beta == T(0.75)) {
    for (Index i = 0; i < count; ++i) {
      const T r = std::sqrt(d[i]);
      out[i] = T(1) / (r * std::sqrt(r));
    }
  } else if (beta == T(0.5)) {
    for (Index i = 0; i < count; ++i) out[i] = T(1) / std::sqrt(d[i]);
  } else {
    for (Index i = 0; i < count; ++i) out[i] = std::pow(d[i], -beta);
  }
}

}  // namespace

template <typename T>
void LrnForward(const LrnArgs& a, const T* x, T* y) {
  CheckArgs(a);
  const Index plane = a.h * a.w, sample = a.c * plane;
  std::vector<T> sq(sample), d(sample);
  for (Index b = 0; b < a.n; ++b) {
    const T* in = x + b * sample;
    Denominator(a, plane, in, sq, d);
    T* out = y + b * sample;
    InversePower(sample, T(a.beta), d.data(), sq.data());
    for (Index i = 0; i < sample; ++i) out[i] = in[i] * sq[i];
  }
}

template <typename T>
void LrnBackward(const LrnArgs& a, const T* x, const T* y, const T* dy, T* dx) {
  CheckArgs(a);
  if (dx == nullptr) return;
  const Index plane = a.h * a.w, sample = a.c * plane;
  std::vector<T> scratch(sample), d(sample), window(sample), scale(sample);
  for (Index b = 0; b < a.n; ++b) {
    const T* in = x + b * sample;
    const T* out = y + b * sample;
    const T* g_out = dy + b * sample;
    Denominator(a, plane, in, scratch, d);
    // scratch = dy * y / d, then window = its sum over each channel window.
    for (Index i = 0; i < sample; ++i) scratch[i] = g_out[i] * out[i] / d[i];
    ChannelWindowSum(a, plane, scratch.data(), window.data());
    const T factor = T(2) * T(a.alpha) * T(a.beta);
    T* g_in = dx + b * sample;
    InversePower(sample, T(a.beta), d.data(), scale.data());
    for (Index i = 0; i < sample; ++i) {
      g_in[i] += g_out[i] * scale[i] - factor * in[i] * window[i];
    }
  }
}

#define DTSIM_INSTANTIATE(T)                                              \
  template void LrnForward<T>(const LrnArgs&, const T*, T*);              \
  template void LrnBackward<T>(const LrnArgs&, const T*, const T*, const T*, T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
