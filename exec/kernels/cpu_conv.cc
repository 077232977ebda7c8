// Conv2d as im2col + Gemm, one sample and one group at a time:
//
//   col (C/groups * R * S, P)      column p holds the input patch under
//                                  output position p (zeros in the padding)
//   y_g (K/groups, P)   = w_g (K/groups, C/groups*R*S) * col
//   dw_g               += dy_g * col^T
//   dcol                = w_g^T * dy_g, scattered back (col2im) into dx.
#include <vector>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {
namespace {

void CheckArgs(const Conv2dArgs& a) {
  DTSIM_CHECK(a.n >= 0 && a.c > 0 && a.h > 0 && a.w > 0 && a.k > 0, "Conv2d: bad shape");
  DTSIM_CHECK(a.r > 0 && a.s > 0 && a.stride_h > 0 && a.stride_w > 0 && a.pad_h >= 0 &&
                  a.pad_w >= 0,
              "Conv2d: bad kernel, stride or padding");
  DTSIM_CHECK(a.groups > 0 && a.c % a.groups == 0 && a.k % a.groups == 0,
              "Conv2d: channels are not a multiple of groups");
  DTSIM_CHECK(a.oh == (a.h + 2 * a.pad_h - a.r) / a.stride_h + 1 &&
                  a.ow == (a.w + 2 * a.pad_w - a.s) / a.stride_w + 1 && a.oh > 0 && a.ow > 0,
              "Conv2d: oh/ow do not follow (h + 2 pad - r) / stride + 1");
}

// True when col would equal the input itself (1x1, stride 1, no padding).
bool IsPointwise(const Conv2dArgs& a) {
  return a.r == 1 && a.s == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 &&
         a.pad_w == 0;
}

// col (channels * R * S, OH * OW) from x (channels, H, W).
template <typename T>
void Im2Col(const Conv2dArgs& a, Index channels, const T* x, T* col) {
  const Index p_count = a.oh * a.ow;
  for (Index ch = 0; ch < channels; ++ch) {
    for (int kr = 0; kr < a.r; ++kr) {
      for (int ks = 0; ks < a.s; ++ks) {
        T* out = col + ((ch * a.r + kr) * a.s + ks) * p_count;
        for (Index oy = 0; oy < a.oh; ++oy) {
          const Index iy = oy * a.stride_h - a.pad_h + kr;
          for (Index ox = 0; ox < a.ow; ++ox) {
            const Index ix = ox * a.stride_w - a.pad_w + ks;
            const bool inside = iy >= 0 && iy < a.h && ix >= 0 && ix < a.w;
            out[oy * a.ow + ox] = inside ? x[(ch * a.h + iy) * a.w + ix] : T(0);
          }
        }
      }
    }
  }
}

// dx (channels, H, W) += col2im(dcol), the adjoint of Im2Col.
template <typename T>
void Col2ImAdd(const Conv2dArgs& a, Index channels, const T* dcol, T* dx) {
  const Index p_count = a.oh * a.ow;
  for (Index ch = 0; ch < channels; ++ch) {
    for (int kr = 0; kr < a.r; ++kr) {
      for (int ks = 0; ks < a.s; ++ks) {
        const T* in = dcol + ((ch * a.r + kr) * a.s + ks) * p_count;
        for (Index oy = 0; oy < a.oh; ++oy) {
          const Index iy = oy * a.stride_h - a.pad_h + kr;
          if (iy < 0 || iy >= a.h) continue;
          for (Index ox = 0; ox < a.ow; ++ox) {
            const Index ix = ox * a.stride_w - a.pad_w + ks;
            if (ix >= 0 && ix < a.w) dx[(ch * a.h + iy) * a.w + ix] += in[oy * a.ow + ox];
          }
        }
      }
    }
  }
}

}  // namespace

template <typename T>
void Conv2dForward(const Conv2dArgs& a, const T* x, const T* w, const T* bias, T* y) {
  CheckArgs(a);
  const Index cg = a.c / a.groups, kg = a.k / a.groups;
  const Index patch = cg * a.r * a.s;  // rows of col, columns of w_g
  const Index p_count = a.oh * a.ow;
  std::vector<T> col(IsPointwise(a) ? 0 : static_cast<std::size_t>(patch * p_count));
  for (Index b = 0; b < a.n; ++b) {
    for (int g = 0; g < a.groups; ++g) {
      const T* x_g = x + (b * a.c + g * cg) * a.h * a.w;
      const T* cols = x_g;
      if (!IsPointwise(a)) {
        Im2Col(a, cg, x_g, col.data());
        cols = col.data();
      }
      Gemm<T>(false, false, kg, p_count, patch, T(1), w + g * kg * patch, cols, T(0),
              y + (b * a.k + g * kg) * p_count);
    }
    if (bias == nullptr) continue;
    for (Index ch = 0; ch < a.k; ++ch) {
      T* plane = y + (b * a.k + ch) * p_count;
      for (Index p = 0; p < p_count; ++p) plane[p] += bias[ch];
    }
  }
}

template <typename T>
void Conv2dBackward(const Conv2dArgs& a, const T* x, const T* w, const T* dy, T* dx, T* dw,
                    T* dbias) {
  CheckArgs(a);
  const Index cg = a.c / a.groups, kg = a.k / a.groups;
  const Index patch = cg * a.r * a.s;
  const Index p_count = a.oh * a.ow;
  const std::size_t col_size = static_cast<std::size_t>(patch * p_count);
  std::vector<T> col(dw != nullptr && !IsPointwise(a) ? col_size : 0);
  std::vector<T> dcol(dx != nullptr ? col_size : 0);
  for (Index b = 0; b < a.n; ++b) {
    for (int g = 0; g < a.groups; ++g) {
      const T* dy_g = dy + (b * a.k + g * kg) * p_count;  // (kg, P)
      const T* w_g = w + g * kg * patch;                   // (kg, patch)
      if (dw != nullptr) {
        const T* x_g = x + (b * a.c + g * cg) * a.h * a.w;
        const T* cols = x_g;
        if (!IsPointwise(a)) {
          Im2Col(a, cg, x_g, col.data());
          cols = col.data();
        }
        Gemm<T>(false, true, kg, patch, p_count, T(1), dy_g, cols, T(1), dw + g * kg * patch);
      }
      if (dx != nullptr) {
        Gemm<T>(true, false, patch, p_count, kg, T(1), w_g, dy_g, T(0), dcol.data());
        Col2ImAdd(a, cg, dcol.data(), dx + (b * a.c + g * cg) * a.h * a.w);
      }
    }
    if (dbias == nullptr) continue;
    for (Index ch = 0; ch < a.k; ++ch) {
      const T* plane = dy + (b * a.k + ch) * p_count;
      T sum = 0;
      for (Index p = 0; p < p_count; ++p) sum += plane[p];
      dbias[ch] += sum;
    }
  }
}

#define DTSIM_INSTANTIATE(T)                                                              \
  template void Conv2dForward<T>(const Conv2dArgs&, const T*, const T*, const T*, T*);    \
  template void Conv2dBackward<T>(const Conv2dArgs&, const T*, const T*, const T*, T*, T*, \
                                  T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
