// Max and average pooling over the in-bounds part of each window.
#include <algorithm>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {
namespace {

// The in-bounds rows [y0, y1) and columns [x0, x1) of output (oy, ox)'s
// window.
struct Window {
  Index y0, y1, x0, x1;
  Index Count() const { return (y1 - y0) * (x1 - x0); }
};

void CheckArgs(const Pool2dArgs& a) {
  DTSIM_CHECK(a.n >= 0 && a.c >= 0 && a.h > 0 && a.w > 0 && a.oh > 0 && a.ow > 0,
              "Pool2d: bad shape");
  DTSIM_CHECK(a.r > 0 && a.s > 0 && a.stride_h > 0 && a.stride_w > 0 && a.pad_h >= 0 &&
                  a.pad_w >= 0,
              "Pool2d: bad window, stride or padding");
  // The last window must overlap the input, as PyTorch's ceil mode ensures.
  DTSIM_CHECK((a.oh - 1) * a.stride_h - a.pad_h < a.h && (a.ow - 1) * a.stride_w - a.pad_w < a.w,
              "Pool2d: the last output window lies outside the input");
  DTSIM_CHECK(a.r > a.pad_h && a.s > a.pad_w, "Pool2d: the first window is all padding");
}

Window WindowOf(const Pool2dArgs& a, Index oy, Index ox) {
  const Index y = oy * a.stride_h - a.pad_h, x = ox * a.stride_w - a.pad_w;
  return {std::max<Index>(y, 0), std::min<Index>(y + a.r, a.h), std::max<Index>(x, 0),
          std::min<Index>(x + a.s, a.w)};
}

// Index in the plane (H, W) of the window's first maximum (row-major).
template <typename T>
Index ArgMax(const Pool2dArgs& a, const Window& win, const T* plane) {
  Index best = win.y0 * a.w + win.x0;
  for (Index iy = win.y0; iy < win.y1; ++iy) {
    for (Index ix = win.x0; ix < win.x1; ++ix) {
      if (plane[iy * a.w + ix] > plane[best]) best = iy * a.w + ix;
    }
  }
  return best;
}

}  // namespace

template <typename T>
void MaxPoolForward(const Pool2dArgs& a, const T* x, T* y) {
  CheckArgs(a);
  for (Index plane = 0; plane < a.n * a.c; ++plane) {
    const T* in = x + plane * a.h * a.w;
    T* out = y + plane * a.oh * a.ow;
    for (Index oy = 0; oy < a.oh; ++oy) {
      for (Index ox = 0; ox < a.ow; ++ox) {
        out[oy * a.ow + ox] = in[ArgMax(a, WindowOf(a, oy, ox), in)];
      }
    }
  }
}

template <typename T>
void MaxPoolBackward(const Pool2dArgs& a, const T* x, const T* dy, T* dx) {
  CheckArgs(a);
  if (dx == nullptr) return;
  for (Index plane = 0; plane < a.n * a.c; ++plane) {
    const T* in = x + plane * a.h * a.w;
    const T* grad_out = dy + plane * a.oh * a.ow;
    T* grad_in = dx + plane * a.h * a.w;
    for (Index oy = 0; oy < a.oh; ++oy) {
      for (Index ox = 0; ox < a.ow; ++ox) {
        grad_in[ArgMax(a, WindowOf(a, oy, ox), in)] += grad_out[oy * a.ow + ox];
      }
    }
  }
}

template <typename T>
void AvgPoolForward(const Pool2dArgs& a, const T* x, T* y) {
  CheckArgs(a);
  for (Index plane = 0; plane < a.n * a.c; ++plane) {
    const T* in = x + plane * a.h * a.w;
    T* out = y + plane * a.oh * a.ow;
    for (Index oy = 0; oy < a.oh; ++oy) {
      for (Index ox = 0; ox < a.ow; ++ox) {
        const Window win = WindowOf(a, oy, ox);
        T sum = 0;
        for (Index iy = win.y0; iy < win.y1; ++iy) {
          for (Index ix = win.x0; ix < win.x1; ++ix) sum += in[iy * a.w + ix];
        }
        out[oy * a.ow + ox] = sum / static_cast<T>(win.Count());
      }
    }
  }
}

template <typename T>
void AvgPoolBackward(const Pool2dArgs& a, const T* dy, T* dx) {
  CheckArgs(a);
  if (dx == nullptr) return;
  for (Index plane = 0; plane < a.n * a.c; ++plane) {
    const T* grad_out = dy + plane * a.oh * a.ow;
    T* grad_in = dx + plane * a.h * a.w;
    for (Index oy = 0; oy < a.oh; ++oy) {
      for (Index ox = 0; ox < a.ow; ++ox) {
        const Window win = WindowOf(a, oy, ox);
        const T share = grad_out[oy * a.ow + ox] / static_cast<T>(win.Count());
        for (Index iy = win.y0; iy < win.y1; ++iy) {
          for (Index ix = win.x0; ix < win.x1; ++ix) grad_in[iy * a.w + ix] += share;
        }
      }
    }
  }
}

#define DTSIM_INSTANTIATE(T)                                                  \
  template void MaxPoolForward<T>(const Pool2dArgs&, const T*, T*);           \
  template void MaxPoolBackward<T>(const Pool2dArgs&, const T*, const T*, T*); \
  template void AvgPoolForward<T>(const Pool2dArgs&, const T*, T*);           \
  template void AvgPoolBackward<T>(const Pool2dArgs&, const T*, T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
