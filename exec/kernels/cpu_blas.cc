// Gemm on Eigen row-major Maps, and the vector helpers around it.
#include <Eigen/Core>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {
namespace {

template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMap = Eigen::Map<const RowMatrix<T>>;
template <typename T>
using MutableMap = Eigen::Map<RowMatrix<T>>;

// C = alpha * op_a * op_b + beta * C, op_a and op_b being Eigen expressions.
// When beta == 0, C is overwritten without being read.
template <typename T, typename OpA, typename OpB, typename C>
void Product(T alpha, const OpA& op_a, const OpB& op_b, T beta, C& c) {
  if (beta == T(0)) {
    c.noalias() = alpha * op_a * op_b;
  } else {
    if (beta != T(1)) c *= beta;
    c.noalias() += alpha * op_a * op_b;
  }
}

}  // namespace

template <typename T>
void Gemm(bool trans_a, bool trans_b, Index m, Index n, Index k, T alpha, const T* a,
          const T* b, T beta, T* c) {
  DTSIM_CHECK(m >= 0 && n >= 0 && k >= 0, "Gemm: negative dimension");
  if (m == 0 || n == 0) return;
  MutableMap<T> cm(c, m, n);
  if (k == 0) {
    // op(A) * op(B) is the zero matrix.
    if (beta == T(0)) cm.setZero(); else cm *= beta;
    return;
  }
  // Stored shapes: A is m x k (k x m when trans_a), B is k x n (n x k when
  // trans_b).
  const ConstMap<T> am(a, trans_a ? k : m, trans_a ? m : k);
  const ConstMap<T> bm(b, trans_b ? n : k, trans_b ? k : n);
  if (!trans_a && !trans_b) Product(alpha, am, bm, beta, cm);
  if (!trans_a && trans_b) Product(alpha, am, bm.transpose(), beta, cm);
  if (trans_a && !trans_b) Product(alpha, am.transpose(), bm, beta, cm);
  if (trans_a && trans_b) Product(alpha, am.transpose(), bm.transpose(), beta, cm);
}

template <typename T>
void GemmColumns(bool trans_a, bool trans_b, Index m, Index n, Index k, Index j0, Index j1,
                 T alpha, const T* a, const T* b, T beta, T* c) {
  DTSIM_CHECK(m >= 0 && n >= 0 && k >= 0 && 0 <= j0 && j0 <= j1 && j1 <= n,
              "GemmColumns: bad dimension or column range");
  const Index w = j1 - j0;
  if (m == 0 || w == 0) return;
  using Stride = Eigen::OuterStride<>;
  Eigen::Map<RowMatrix<T>, 0, Stride> cm(c + j0, m, w, Stride(n));
  if (k == 0) {
    if (beta == T(0)) cm.setZero(); else cm *= beta;
    return;
  }
  const ConstMap<T> am(a, trans_a ? k : m, trans_a ? m : k);
  // B's columns j0.. are its stored columns (k x n) or stored rows (n x k).
  const Eigen::Map<const RowMatrix<T>, 0, Stride> bm(trans_b ? b + j0 * k : b + j0,
                                                     trans_b ? w : k, trans_b ? k : w,
                                                     Stride(trans_b ? k : n));
  if (!trans_a && !trans_b) Product(alpha, am, bm, beta, cm);
  if (!trans_a && trans_b) Product(alpha, am, bm.transpose(), beta, cm);
  if (trans_a && !trans_b) Product(alpha, am.transpose(), bm, beta, cm);
  if (trans_a && trans_b) Product(alpha, am.transpose(), bm.transpose(), beta, cm);
}

template <typename T>
void GemmBatched(Index batch, bool trans_a, bool trans_b, Index m, Index n, Index k,
                 T alpha, const T* a, Index stride_a, const T* b, Index stride_b, T beta,
                 T* c, Index stride_c) {
  DTSIM_CHECK(batch >= 0, "GemmBatched: negative batch");
  for (Index i = 0; i < batch; ++i) {
    Gemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, b + i * stride_b, beta,
         c + i * stride_c);
  }
}

template <typename T>
void AddBias(T* y, const T* bias, Index rows, Index cols) {
  DTSIM_CHECK(rows >= 0 && cols >= 0, "AddBias: negative dimension");
  for (Index i = 0; i < rows; ++i) {
    T* row = y + i * cols;
    for (Index j = 0; j < cols; ++j) row[j] += bias[j];
  }
}

template <typename T>
void BiasGrad(const T* dy, Index rows, Index cols, T* dbias) {
  DTSIM_CHECK(rows >= 0 && cols >= 0, "BiasGrad: negative dimension");
  for (Index i = 0; i < rows; ++i) {
    const T* row = dy + i * cols;
    for (Index j = 0; j < cols; ++j) dbias[j] += row[j];
  }
}

template <typename T>
void Axpy(Index count, T alpha, const T* x, T* y) {
  DTSIM_CHECK(count >= 0, "Axpy: negative count");
  for (Index i = 0; i < count; ++i) y[i] += alpha * x[i];
}

template <typename T>
void Scale(Index count, T alpha, T* x) {
  DTSIM_CHECK(count >= 0, "Scale: negative count");
  for (Index i = 0; i < count; ++i) x[i] *= alpha;
}

template <typename T>
void Add(Index count, const T* a, const T* b, T* y) {
  DTSIM_CHECK(count >= 0, "Add: negative count");
  for (Index i = 0; i < count; ++i) y[i] = a[i] + b[i];
}

#define DTSIM_INSTANTIATE(T)                                                              \
  template void Gemm<T>(bool, bool, Index, Index, Index, T, const T*, const T*, T, T*);   \
  template void GemmColumns<T>(bool, bool, Index, Index, Index, Index, Index, T, const T*, \
                               const T*, T, T*);                                           \
  template void GemmBatched<T>(Index, bool, bool, Index, Index, Index, T, const T*, Index, \
                               const T*, Index, T, T*, Index);                            \
  template void AddBias<T>(T*, const T*, Index, Index);                                   \
  template void BiasGrad<T>(const T*, Index, Index, T*);                                  \
  template void Axpy<T>(Index, T, const T*, T*);                                          \
  template void Scale<T>(Index, T, T*);                                                   \
  template void Add<T>(Index, const T*, const T*, T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
