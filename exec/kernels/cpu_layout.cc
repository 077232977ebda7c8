// Strided copies: Copy2D (concat, slice) and the attention head transposes.
#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {
namespace {

// dst[j] (= or +=) src[j] for j < count.
template <typename T>
void CopyRow(Index count, const T* src, T* dst, bool accumulate) {
  if (accumulate) {
    for (Index j = 0; j < count; ++j) dst[j] += src[j];
  } else {
    for (Index j = 0; j < count; ++j) dst[j] = src[j];
  }
}

}  // namespace

template <typename T>
void Copy2D(Index rows, Index cols, const T* src, Index src_stride, T* dst, Index dst_stride,
            bool accumulate) {
  DTSIM_CHECK(rows >= 0 && cols >= 0, "Copy2D: negative dimension");
  DTSIM_CHECK(rows <= 1 || (src_stride >= cols && dst_stride >= cols),
              "Copy2D: a stride is smaller than the row length");
  for (Index i = 0; i < rows; ++i) {
    CopyRow(cols, src + i * src_stride, dst + i * dst_stride, accumulate);
  }
}

template <typename T>
void SplitHeads(Index n, Index s, Index heads, Index d, const T* x, T* y, bool accumulate) {
  DTSIM_CHECK(n >= 0 && s >= 0 && heads >= 0 && d >= 0, "SplitHeads: negative dimension");
  for (Index b = 0; b < n; ++b) {
    for (Index t = 0; t < s; ++t) {
      for (Index h = 0; h < heads; ++h) {
        const T* src = x + ((b * s + t) * heads + h) * d;  // x[b, t, h, :]
        T* dst = y + ((b * heads + h) * s + t) * d;        // y[b, h, t, :]
        CopyRow(d, src, dst, accumulate);
      }
    }
  }
}

template <typename T>
void MergeHeads(Index n, Index s, Index heads, Index d, const T* x, T* y, bool accumulate) {
  DTSIM_CHECK(n >= 0 && s >= 0 && heads >= 0 && d >= 0, "MergeHeads: negative dimension");
  for (Index b = 0; b < n; ++b) {
    for (Index t = 0; t < s; ++t) {
      for (Index h = 0; h < heads; ++h) {
        const T* src = x + ((b * heads + h) * s + t) * d;  // x[b, h, t, :]
        T* dst = y + ((b * s + t) * heads + h) * d;        // y[b, t, h, :]
        CopyRow(d, src, dst, accumulate);
      }
    }
  }
}

#define DTSIM_INSTANTIATE(T)                                                          \
  template void Copy2D<T>(Index, Index, const T*, Index, T*, Index, bool);            \
  template void SplitHeads<T>(Index, Index, Index, Index, const T*, T*, bool);        \
  template void MergeHeads<T>(Index, Index, Index, Index, const T*, T*, bool);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
