// The gates and positions of today's transformers: sigmoid, SiLU, the
// product of a gate and its input, rotary position embedding.
#include <cmath>
#include <vector>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {
namespace {

template <typename T>
T Logistic(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// The index into b of element (i, j) of a (rows x cols).
Index BroadcastIndex(MulBroadcast broadcast, Index i, Index j, Index cols) {
  switch (broadcast) {
    case MulBroadcast::kNone: return i * cols + j;
    case MulBroadcast::kPerRow: return i;
    case MulBroadcast::kPerColumn: return j;
  }
  return 0;
}

// Rotary angles' base (Su et al. 2021, RoFormer, Eq. 15; Llama's rope_theta).
constexpr double kRotaryBase = 10000.0;

// cos and sin of each position's angle for each pair of d, in double
// whatever T (the table PyTorch implementations build once from the same
// formula): entry p * (d / 2) + i.
void AngleTable(Index s, Index d, std::vector<double>* cos_t, std::vector<double>* sin_t) {
  const Index half = d / 2;
  cos_t->resize(static_cast<std::size_t>(s * half));
  sin_t->resize(cos_t->size());
  for (Index i = 0; i < half; ++i) {
    const double inv_freq =
        std::pow(kRotaryBase, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    for (Index p = 0; p < s; ++p) {
      const double theta = static_cast<double>(p) * inv_freq;
      (*cos_t)[static_cast<std::size_t>(p * half + i)] = std::cos(theta);
      (*sin_t)[static_cast<std::size_t>(p * half + i)] = std::sin(theta);
    }
  }
}

// y = R(angle) x per pair when sign = +1, the inverse rotation when -1;
// accumulate adds into y.
template <typename T>
void Rotate(Index n, Index s, Index d, const T* x, T* y, double sign, bool accumulate) {
  DTSIM_CHECK(n >= 0 && s > 0 && d > 0 && d % 2 == 0, "Rotary: bad shape");
  const Index half = d / 2;
  std::vector<double> cos_t, sin_t;
  AngleTable(s, d, &cos_t, &sin_t);
  for (Index row = 0; row < n * s; ++row) {
    const Index p = row % s;
    const T* in = x + row * d;
    T* out = y + row * d;
    for (Index i = 0; i < half; ++i) {
      const double c = cos_t[static_cast<std::size_t>(p * half + i)];
      const double sn = sign * sin_t[static_cast<std::size_t>(p * half + i)];
      const T lo = static_cast<T>(in[i] * c - in[i + half] * sn);
      const T hi = static_cast<T>(in[i + half] * c + in[i] * sn);
      out[i] = accumulate ? out[i] + lo : lo;
      out[i + half] = accumulate ? out[i + half] + hi : hi;
    }
  }
}

}  // namespace

template <typename T>
void SigmoidForward(Index count, const T* x, T* y) {
  DTSIM_CHECK(count >= 0, "SigmoidForward: negative count");
  for (Index i = 0; i < count; ++i) y[i] = Logistic(x[i]);
}

template <typename T>
void SigmoidBackward(Index count, const T* y, const T* dy, T* dx) {
  DTSIM_CHECK(count >= 0, "SigmoidBackward: negative count");
  if (dx == nullptr) return;
  for (Index i = 0; i < count; ++i) dx[i] += dy[i] * y[i] * (T(1) - y[i]);
}

template <typename T>
void SiluForward(Index count, const T* x, T* y) {
  DTSIM_CHECK(count >= 0, "SiluForward: negative count");
  for (Index i = 0; i < count; ++i) y[i] = x[i] * Logistic(x[i]);
}

template <typename T>
void SiluBackward(Index count, const T* x, const T* dy, T* dx) {
  DTSIM_CHECK(count >= 0, "SiluBackward: negative count");
  if (dx == nullptr) return;
  for (Index i = 0; i < count; ++i) {
    const T s = Logistic(x[i]);
    dx[i] += dy[i] * s * (T(1) + x[i] * (T(1) - s));
  }
}

template <typename T>
void MulForward(MulBroadcast broadcast, Index rows, Index cols, const T* a, const T* b, T* y) {
  DTSIM_CHECK(rows >= 0 && cols >= 0, "MulForward: bad shape");
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j)
      y[i * cols + j] = a[i * cols + j] * b[BroadcastIndex(broadcast, i, j, cols)];
}

template <typename T>
void MulBackward(MulBroadcast broadcast, Index rows, Index cols, const T* a, const T* b,
                 const T* dy, T* da, T* db) {
  DTSIM_CHECK(rows >= 0 && cols >= 0, "MulBackward: bad shape");
  for (Index i = 0; i < rows; ++i) {
    for (Index j = 0; j < cols; ++j) {
      const Index k = i * cols + j, kb = BroadcastIndex(broadcast, i, j, cols);
      if (da != nullptr) da[k] += dy[k] * b[kb];
      if (db != nullptr) db[kb] += dy[k] * a[k];
    }
  }
}

template <typename T>
void RotaryForward(Index n, Index s, Index d, const T* x, T* y) {
  Rotate(n, s, d, x, y, 1.0, false);
}

template <typename T>
void RotaryBackward(Index n, Index s, Index d, const T* dy, T* dx) {
  if (dx == nullptr) return;
  Rotate(n, s, d, dy, dx, -1.0, true);
}

#define DTSIM_INSTANTIATE(T)                                                                 \
  template void SigmoidForward<T>(Index, const T*, T*);                                      \
  template void SigmoidBackward<T>(Index, const T*, const T*, T*);                           \
  template void SiluForward<T>(Index, const T*, T*);                                         \
  template void SiluBackward<T>(Index, const T*, const T*, T*);                              \
  template void MulForward<T>(MulBroadcast, Index, Index, const T*, const T*, T*);           \
  template void MulBackward<T>(MulBroadcast, Index, Index, const T*, const T*, const T*, T*, \
                               T*);                                                          \
  template void RotaryForward<T>(Index, Index, Index, const T*, T*);                         \
  template void RotaryBackward<T>(Index, Index, Index, const T*, T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
