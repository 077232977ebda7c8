// The CPU reference kernels: one function template per Backend method's
// math, on the scalar type T (float for CpuBackend, double for the
// finite-difference tests). Each follows the contract of the Backend method
// of the same name in exec/backend.h (row-major, NCHW, forward writes,
// backward ADDS into gradients, null gradient pointer = not needed); only
// what differs or is added is written here.
//
// Instantiated for T = float and T = double in the cpu_*.cc files, one per
// family. Single-threaded and deterministic: the same inputs give the same
// bits on every machine that runs the build (fixed GEMM blocking, see
// CMakeLists.txt), every x86-64 machine for the portable build.
//
// Shapes: N = batch, C = channels, H/W = height/width, K = output channels,
// R/S = kernel height/width, OH/OW = output height/width, P = OH * OW.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/backend.h"
#include "exec/kernels/cpu_namespace.h"

namespace dtsim::exec::DTSIM_CPU_NS {

using Index = std::int64_t;

// ---- linear algebra (cpu_blas.cc)

// C (m x n) = alpha * op(A) * op(B) + beta * C, as Backend::Gemm. When
// beta == 0, C is not read (it may hold NaN), as in BLAS.
template <typename T>
void Gemm(bool trans_a, bool trans_b, Index m, Index n, Index k, T alpha, const T* a,
          const T* b, T beta, T* c);
// Columns [j0, j1) of Gemm's C alone: C[:, j0:j1] = alpha * op(A) *
// op(B)[:, j0:j1] + beta * C[:, j0:j1] (a Gemm split over threads).
// REQUIRES: 0 <= j0 <= j1 <= n.
template <typename T>
void GemmColumns(bool trans_a, bool trans_b, Index m, Index n, Index k, Index j0, Index j1,
                 T alpha, const T* a, const T* b, T beta, T* c);
// `batch` Gemms; matrix i of A starts at a + i * stride_a (same for B, C).
template <typename T>
void GemmBatched(Index batch, bool trans_a, bool trans_b, Index m, Index n, Index k,
                 T alpha, const T* a, Index stride_a, const T* b, Index stride_b, T beta,
                 T* c, Index stride_c);
// y (rows x cols) += bias (cols) on every row.
template <typename T>
void AddBias(T* y, const T* bias, Index rows, Index cols);
// dbias (cols) += column sums of dy (rows x cols).
template <typename T>
void BiasGrad(const T* dy, Index rows, Index cols, T* dbias);
// y += alpha * x.
template <typename T>
void Axpy(Index count, T alpha, const T* x, T* y);
// x *= alpha.
template <typename T>
void Scale(Index count, T alpha, T* x);
// y = a + b (y may alias a or b).
template <typename T>
void Add(Index count, const T* a, const T* b, T* y);

// ---- layout (cpu_layout.cc)

// dst[i * dst_stride + j] (= or +=) src[i * src_stride + j] for a rows x cols
// block. REQUIRES: the blocks do not overlap.
template <typename T>
void Copy2D(Index rows, Index cols, const T* src, Index src_stride, T* dst, Index dst_stride,
            bool accumulate);
// x (n, s, heads, d) -> y (n, heads, s, d); y = or += when accumulate.
template <typename T>
void SplitHeads(Index n, Index s, Index heads, Index d, const T* x, T* y, bool accumulate);
// x (n, heads, s, d) -> y (n, s, heads, d); y = or += when accumulate.
template <typename T>
void MergeHeads(Index n, Index s, Index heads, Index d, const T* x, T* y, bool accumulate);

// ---- convolution (cpu_conv.cc): im2col + Gemm per chunk of samples and
// group. `scratch` (may be null: a temporary is used) holds im2col's columns
// between calls, so that a caller that keeps it allocates nothing in the
// steady state.

// y (N, K, OH, OW) = conv(x (N, C, H, W), w (K, C/groups, R, S)) + bias (K,
// or null). REQUIRES: a.oh/a.ow follow the formula in Conv2dArgs and C, K
// are multiples of groups.
template <typename T>
void Conv2dForward(const Conv2dArgs& a, const T* x, const T* w, const T* bias, T* y,
                   std::vector<T>* scratch = nullptr);
// dx (N, C, H, W), dw (K, C/groups, R, S), dbias (K) accumulate; any may be
// null.
template <typename T>
void Conv2dBackward(const Conv2dArgs& a, const T* x, const T* w, const T* dy, T* dx, T* dw,
                    T* dbias, std::vector<T>* scratch = nullptr);

// ---- pooling (cpu_pool.cc). REQUIRES: every window of the (a.oh, a.ow)
// output overlaps the input (ceil mode as PyTorch drops empty windows).

// y (N, C, OH, OW) = max over the in-bounds part of each window.
template <typename T>
void MaxPoolForward(const Pool2dArgs& a, const T* x, T* y);
// dx (N, C, H, W) += dy at the first maximum (row-major) of each window.
template <typename T>
void MaxPoolBackward(const Pool2dArgs& a, const T* x, const T* dy, T* dx);
// y = mean over the in-bounds part of each window.
template <typename T>
void AvgPoolForward(const Pool2dArgs& a, const T* x, T* y);
template <typename T>
void AvgPoolBackward(const Pool2dArgs& a, const T* dy, T* dx);

// ---- elementwise activations (cpu_activations.cc)

template <typename T>
void ReluForward(Index count, const T* x, T* y);
// dx += dy where y > 0.
template <typename T>
void ReluBackward(Index count, const T* y, const T* dy, T* dx);
// GELU, tanh approximation (see Backend::GeluForward).
template <typename T>
void GeluForward(Index count, const T* x, T* y);
template <typename T>
void GeluBackward(Index count, const T* x, const T* dy, T* dx);
template <typename T>
void TanhForward(Index count, const T* x, T* y);
// dx += dy * (1 - y^2).
template <typename T>
void TanhBackward(Index count, const T* y, const T* dy, T* dx);
// mask[i] = (CounterUniform(seed, offset + i) >= rate) / (1 - rate), the
// uniform drawn in float as on CUDA; y = x * mask. REQUIRES: 0 <= rate <= 1
// (rate 1 gives mask 0 everywhere).
template <typename T>
void DropoutForward(Index count, float rate, std::uint64_t seed, std::uint64_t offset,
                    const T* x, T* mask, T* y);
// dx += dy * mask.
template <typename T>
void DropoutBackward(Index count, const T* mask, const T* dy, T* dx);

// ---- the gates and positions of today's transformers (cpu_gates.cc)

template <typename T>
void SigmoidForward(Index count, const T* x, T* y);
// dx += dy * y * (1 - y).
template <typename T>
void SigmoidBackward(Index count, const T* y, const T* dy, T* dx);
// y = x * sigmoid(x).
template <typename T>
void SiluForward(Index count, const T* x, T* y);
template <typename T>
void SiluBackward(Index count, const T* x, const T* dy, T* dx);
// y = a * b, b broadcast as Backend::MulForward says.
template <typename T>
void MulForward(MulBroadcast broadcast, Index rows, Index cols, const T* a, const T* b, T* y);
// da += dy * b, db += dy * a summed over the broadcast; either may be null.
template <typename T>
void MulBackward(MulBroadcast broadcast, Index rows, Index cols, const T* a, const T* b,
                 const T* dy, T* da, T* db);
// Rotary position embedding of (n, s, d) rows (Backend::RotaryForward).
template <typename T>
void RotaryForward(Index n, Index s, Index d, const T* x, T* y);
// dx += the inverse rotation of dy.
template <typename T>
void RotaryBackward(Index n, Index s, Index d, const T* dy, T* dx);

// ---- fused attention (cpu_attention.cc): Backend::AttentionForward/Backward.
template <typename T>
void AttentionForward(const AttentionArgs& a, const T* q, const T* k, const T* v, T* o, T* lse);
template <typename T>
void AttentionBackward(const AttentionArgs& a, const T* q, const T* k, const T* v, const T* o,
                       const T* lse, const T* dout, T* dq, T* dk, T* dv);

// ---- recurrent cells (cpu_recurrent.cc): Backend::RnnCellForward/Backward.
template <typename T>
void RnnCellForward(models::RnnCell cell, Index batch, Index hidden, const T* gx, const T* gh,
                    const T* h_prev, const T* c_prev, T* h, T* c, T* act);
template <typename T>
void RnnCellBackward(models::RnnCell cell, Index batch, Index hidden, const T* gh,
                     const T* h_prev, const T* c_prev, const T* c, const T* act, const T* dh,
                     T* dc, T* dgx, T* dgh, T* dh_prev);

// ---- normalisation (cpu_softmax.cc, cpu_norm.cc, cpu_lrn.cc)

// Row softmax of x (rows x cols); causal masks column j of row r when
// j > r % cols (probability exactly 0).
template <typename T>
void SoftmaxForward(Index rows, Index cols, bool causal, const T* x, T* y);
// dx += y * (dy - sum(y * dy)) per row; masked entries (y = 0) get nothing.
template <typename T>
void SoftmaxBackward(Index rows, Index cols, const T* y, const T* dy, T* dx);
// y (rows x cols) = (x - mean) * rstd * gamma + beta with rstd =
// 1 / sqrt(biased variance + eps); mean, rstd (rows) written.
template <typename T>
void LayerNormForward(Index rows, Index cols, T eps, const T* x, const T* gamma,
                      const T* beta, T* y, T* mean, T* rstd);
// dx (rows x cols), dgamma, dbeta (cols) accumulate; any may be null.
template <typename T>
void LayerNormBackward(Index rows, Index cols, const T* x, const T* gamma, const T* mean,
                       const T* rstd, const T* dy, T* dx, T* dgamma, T* dbeta);
// y (rows x cols) = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps);
// rstd (rows) written.
template <typename T>
void RmsNormForward(Index rows, Index cols, T eps, const T* x, const T* gamma, T* y, T* rstd);
// dx (rows x cols) and dgamma (cols) accumulate; either may be null.
template <typename T>
void RmsNormBackward(Index rows, Index cols, const T* x, const T* gamma, const T* rstd,
                     const T* dy, T* dx, T* dgamma);
// x, y: (n, c, spatial); statistics per channel over (n, spatial); mean,
// rstd (c) written.
template <typename T>
void BatchNormForward(Index n, Index c, Index spatial, T eps, const T* x, const T* gamma,
                      const T* beta, T* y, T* mean, T* rstd);
// dx (n, c, spatial), dgamma, dbeta (c) accumulate; any may be null.
template <typename T>
void BatchNormBackward(Index n, Index c, Index spatial, const T* x, const T* gamma,
                       const T* mean, const T* rstd, const T* dy, T* dx, T* dgamma,
                       T* dbeta);
// Local response normalisation across channels (see LrnArgs); x, y: (N, C,
// H, W).
template <typename T>
void LrnForward(const LrnArgs& a, const T* x, T* y);
// dx += d(sum(y * dy)) / dx, with y the forward output of x.
template <typename T>
void LrnBackward(const LrnArgs& a, const T* x, const T* y, const T* dy, T* dx);

// ---- loss and embedding (cpu_loss.cc)

// probs (rows x classes) = softmax(logits); loss (rows) = -log(probs[label]),
// computed as logsumexp(logits) - logits[label]. REQUIRES: every label is an
// integer in [0, classes).
template <typename T>
void SoftmaxCrossEntropyForward(Index rows, Index classes, const T* logits, const T* labels,
                                T* probs, T* loss);
// dlogits += scale * (probs - onehot(labels)).
template <typename T>
void SoftmaxCrossEntropyBackward(Index rows, Index classes, const T* probs, const T* labels,
                                 T scale, T* dlogits);
// y (count x hidden) = rows ids[i] of table. REQUIRES: ids are non-negative
// integers below the table's row count (which is not passed, so only the
// sign and integrality are checked).
template <typename T>
void EmbeddingForward(Index count, Index hidden, const T* ids, const T* table, T* y);
// dtable[ids[i]] += dy[i] (repeated ids sum).
template <typename T>
void EmbeddingBackward(Index count, Index hidden, const T* ids, const T* dy, T* dtable);

// ---- optimizers (cpu_optimizers.cc), in place; formulas in backend.h.

template <typename T>
void SgdStep(Index count, T lr, T weight_decay, const T* g, T* p);
template <typename T>
void MomentumStep(Index count, T lr, T momentum, const T* g, T* v, T* p);
// REQUIRES: t >= 1.
template <typename T>
void AdamStep(Index count, T lr, T beta1, T beta2, T eps, Index t, const T* g, T* m, T* v,
              T* p);

}  // namespace dtsim::exec::DTSIM_CPU_NS
