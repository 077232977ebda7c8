// Fused attention by the flash algorithm: one query row at a time, keys
// walked once with a running maximum (online softmax, Milakov & Gimelshein
// 2018), no s x s matrix held.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {
namespace {

void CheckArgs(const AttentionArgs& a) {
  DTSIM_CHECK(a.n >= 0 && a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0 &&
                  a.s > 0 && a.d > 0 && a.dv > 0,
              "Attention: bad shape");
}

template <typename T>
T Dot(const T* x, const T* y, Index n) {
  T sum = 0;
  for (Index i = 0; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

// The keys query i sees: all, or 0..i when causal.
Index KeysSeen(const AttentionArgs& a, Index i) { return a.causal ? i + 1 : a.s; }

}  // namespace

template <typename T>
void AttentionForward(const AttentionArgs& a, const T* q, const T* k, const T* v, T* o, T* lse) {
  CheckArgs(a);
  const Index group = a.heads / a.kv_heads;
  std::vector<T> acc(static_cast<std::size_t>(a.dv));
  for (Index b = 0; b < a.n; ++b) {
    for (Index h = 0; h < a.heads; ++h) {
      const Index kvh = b * a.kv_heads + h / group;
      const T* kh = k + kvh * a.s * a.d;
      const T* vh = v + kvh * a.s * a.dv;
      for (Index i = 0; i < a.s; ++i) {
        const Index row = (b * a.heads + h) * a.s + i;
        const T* qi = q + row * a.d;
        T m = -std::numeric_limits<T>::infinity(), l = 0;
        std::fill(acc.begin(), acc.end(), T(0));
        for (Index j = 0; j < KeysSeen(a, i); ++j) {
          const T score = static_cast<T>(a.scale) * Dot(qi, kh + j * a.d, a.d);
          const T m_new = std::max(m, score);
          const T rescale = std::exp(m - m_new), p = std::exp(score - m_new);
          l = l * rescale + p;
          for (Index c = 0; c < a.dv; ++c) acc[c] = acc[c] * rescale + p * vh[j * a.dv + c];
          m = m_new;
        }
        T* oi = o + row * a.dv;
        for (Index c = 0; c < a.dv; ++c) oi[c] = acc[c] / l;
        lse[row] = m + std::log(l);
      }
    }
  }
}

template <typename T>
void AttentionBackward(const AttentionArgs& a, const T* q, const T* k, const T* v, const T* o,
                       const T* lse, const T* dout, T* dq, T* dk, T* dv) {
  CheckArgs(a);
  const Index group = a.heads / a.kv_heads;
  const T scale = static_cast<T>(a.scale);
  for (Index b = 0; b < a.n; ++b) {
    for (Index h = 0; h < a.heads; ++h) {
      const Index kvh = b * a.kv_heads + h / group;
      const T* kh = k + kvh * a.s * a.d;
      const T* vh = v + kvh * a.s * a.dv;
      for (Index i = 0; i < a.s; ++i) {
        const Index row = (b * a.heads + h) * a.s + i;
        const T* qi = q + row * a.d;
        const T* doi = dout + row * a.dv;
        const T delta = Dot(doi, o + row * a.dv, a.dv);
        for (Index j = 0; j < KeysSeen(a, i); ++j) {
          const T p = std::exp(scale * Dot(qi, kh + j * a.d, a.d) - lse[row]);
          const T ds = p * (Dot(doi, vh + j * a.dv, a.dv) - delta);
          if (dq != nullptr)
            for (Index c = 0; c < a.d; ++c) dq[row * a.d + c] += scale * ds * kh[j * a.d + c];
          if (dk != nullptr)
            for (Index c = 0; c < a.d; ++c) dk[(kvh * a.s + j) * a.d + c] += scale * ds * qi[c];
          if (dv != nullptr)
            for (Index c = 0; c < a.dv; ++c) dv[(kvh * a.s + j) * a.dv + c] += p * doi[c];
        }
      }
    }
  }
}

#define DTSIM_INSTANTIATE(T)                                                                \
  template void AttentionForward<T>(const AttentionArgs&, const T*, const T*, const T*, T*, \
                                    T*);                                                    \
  template void AttentionBackward<T>(const AttentionArgs&, const T*, const T*, const T*,    \
                                     const T*, const T*, const T*, T*, T*, T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
