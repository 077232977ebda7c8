// Every backward kernel against central finite differences, in double
// precision (eps 1e-6, tolerance 1e-7 + 1e-6 |gradient|), on small odd
// shapes. The objective is L = sum(y * r) for a fixed random r, so the
// backward kernel is called with dy = r into zeroed gradients.
#include <cmath>
#include <vector>

#include "exec/kernels/cpu_kernels.h"
#include "exec/kernels/kernel_test_util.h"

namespace dtsim::exec::cpu {
namespace {

using testing::AwayFromZero;
using testing::Dot;
using testing::ExpectGradient;
using testing::RandomVector;
using Vec = std::vector<double>;

Vec Zeros(std::size_t n) { return Vec(n, 0.0); }

Conv2dArgs OddConv() {
  // 2 groups, 3x2 kernel, stride 2 x 1, padding 1 x 0:
  //   OH = (7 + 2 - 3) / 2 + 1 = 4,  OW = (6 + 0 - 2) / 1 + 1 = 5.
  Conv2dArgs a;
  a.n = 2, a.c = 4, a.h = 7, a.w = 6, a.k = 6, a.r = 3, a.s = 2;
  a.stride_h = 2, a.stride_w = 1, a.pad_h = 1, a.pad_w = 0, a.groups = 2;
  a.oh = 4, a.ow = 5;
  return a;
}

Conv2dArgs StridedConv() {
  // Square stride 2, padding 2, one group: OH = (5 + 4 - 3) / 2 + 1 = 4,
  // OW = (7 + 4 - 3) / 2 + 1 = 5.
  Conv2dArgs a;
  a.n = 1, a.c = 3, a.h = 5, a.w = 7, a.k = 2, a.r = 3, a.s = 3;
  a.stride_h = 2, a.stride_w = 2, a.pad_h = 2, a.pad_w = 2, a.groups = 1;
  a.oh = 4, a.ow = 5;
  return a;
}

void CheckConv(const Conv2dArgs& a, std::uint64_t seed) {
  Vec x = RandomVector(a.n * a.c * a.h * a.w, seed);
  Vec w = RandomVector(a.k * (a.c / a.groups) * a.r * a.s, seed + 1);
  Vec bias = RandomVector(a.k, seed + 2);
  const Vec r = RandomVector(a.n * a.k * a.oh * a.ow, seed + 3);
  auto loss = [&] {
    Vec y(r.size());
    Conv2dForward(a, x.data(), w.data(), bias.data(), y.data());
    return Dot(y, r);
  };
  Vec dx = Zeros(x.size()), dw = Zeros(w.size()), db = Zeros(bias.size());
  Conv2dBackward(a, x.data(), w.data(), r.data(), dx.data(), dw.data(), db.data());
  ExpectGradient("x", x, loss, dx);
  ExpectGradient("w", w, loss, dw);
  ExpectGradient("bias", bias, loss, db);
}

TEST(GradCheck, Conv2dGroupsNonSquareKernel) { CheckConv(OddConv(), 10); }
TEST(GradCheck, Conv2dStride2Padding2) { CheckConv(StridedConv(), 20); }

TEST(GradCheck, Conv2dPointwise) {
  // 1x1, stride 1: the path that skips im2col.
  Conv2dArgs a;
  a.n = 2, a.c = 3, a.h = 3, a.w = 5, a.k = 4, a.oh = 3, a.ow = 5;
  CheckConv(a, 30);
}

// PyTorch's ceil-mode output size: ceil((in + 2 pad - window) / stride) + 1,
// minus one when the last window would start past the input and padding.
std::int64_t CeilPoolOut(std::int64_t in, int window, int stride, int pad) {
  std::int64_t out = (in + 2 * pad - window + stride - 1) / stride + 1;
  if ((out - 1) * stride >= in + pad) --out;
  return out;
}

Pool2dArgs OddPool() {
  // H = 7, R = 2, stride 2, pad 0: ceil(5 / 2) + 1 = 4 (floor would give 3);
  // the last row window starts at 6 and holds one row.
  // W = 8, S = 3, stride 2, pad 1: ceil(7 / 2) + 1 = 5; the last column
  // window starts at 7 and holds one in-bounds column.
  Pool2dArgs a;
  a.n = 2, a.c = 3, a.h = 7, a.w = 8, a.r = 2, a.s = 3;
  a.stride_h = 2, a.stride_w = 2, a.pad_h = 0, a.pad_w = 1;
  a.oh = CeilPoolOut(a.h, a.r, a.stride_h, a.pad_h);
  a.ow = CeilPoolOut(a.w, a.s, a.stride_w, a.pad_w);
  return a;
}

TEST(GradCheck, MaxPoolCeilModePadding) {
  const Pool2dArgs a = OddPool();
  ASSERT_EQ(a.oh, 4);
  ASSERT_EQ(a.ow, 5);
  Vec x = RandomVector(a.n * a.c * a.h * a.w, 40);
  const Vec r = RandomVector(a.n * a.c * a.oh * a.ow, 41);
  auto loss = [&] {
    Vec y(r.size());
    MaxPoolForward(a, x.data(), y.data());
    return Dot(y, r);
  };
  Vec dx = Zeros(x.size());
  MaxPoolBackward(a, x.data(), r.data(), dx.data());
  ExpectGradient("x", x, loss, dx);
}

TEST(GradCheck, AvgPoolCeilModePadding) {
  const Pool2dArgs a = OddPool();
  Vec x = RandomVector(a.n * a.c * a.h * a.w, 50);
  const Vec r = RandomVector(a.n * a.c * a.oh * a.ow, 51);
  auto loss = [&] {
    Vec y(r.size());
    AvgPoolForward(a, x.data(), y.data());
    return Dot(y, r);
  };
  Vec dx = Zeros(x.size());
  AvgPoolBackward(a, r.data(), dx.data());
  ExpectGradient("x", x, loss, dx);
}

TEST(GradCheck, Lrn) {
  LrnArgs a;
  a.n = 2, a.c = 7, a.h = 3, a.w = 2, a.radius = 2;
  a.alpha = 0.3f;  // large, so that the normalisation matters
  a.beta = 0.75f, a.bias = 1.5f;
  Vec x = RandomVector(a.n * a.c * a.h * a.w, 60, -2, 2);
  const Vec r = RandomVector(x.size(), 61);
  auto loss = [&] {
    Vec y(r.size());
    LrnForward(a, x.data(), y.data());
    return Dot(y, r);
  };
  Vec y(x.size()), dx = Zeros(x.size());
  LrnForward(a, x.data(), y.data());
  LrnBackward(a, x.data(), y.data(), r.data(), dx.data());
  ExpectGradient("x", x, loss, dx);
}

TEST(GradCheck, BatchNorm) {
  const std::int64_t n = 3, c = 2, spatial = 5;
  Vec x = RandomVector(n * c * spatial, 70, -2, 2);
  Vec gamma = RandomVector(c, 71, 0.5, 1.5), beta = RandomVector(c, 72);
  const Vec r = RandomVector(x.size(), 73);
  const double eps = 1e-5;
  Vec mean(c), rstd(c);
  auto loss = [&] {
    Vec y(r.size()), m(c), s(c);
    BatchNormForward(n, c, spatial, eps, x.data(), gamma.data(), beta.data(), y.data(),
                     m.data(), s.data());
    return Dot(y, r);
  };
  Vec y(x.size());
  BatchNormForward(n, c, spatial, eps, x.data(), gamma.data(), beta.data(), y.data(),
                   mean.data(), rstd.data());
  Vec dx = Zeros(x.size()), dgamma = Zeros(c), dbeta = Zeros(c);
  BatchNormBackward(n, c, spatial, x.data(), gamma.data(), mean.data(), rstd.data(), r.data(),
                    dx.data(), dgamma.data(), dbeta.data());
  ExpectGradient("x", x, loss, dx);
  ExpectGradient("gamma", gamma, loss, dgamma);
  ExpectGradient("beta", beta, loss, dbeta);
}

TEST(GradCheck, LayerNorm) {
  const std::int64_t rows = 3, cols = 7;
  Vec x = RandomVector(rows * cols, 80, -2, 2);
  Vec gamma = RandomVector(cols, 81, 0.5, 1.5), beta = RandomVector(cols, 82);
  const Vec r = RandomVector(x.size(), 83);
  const double eps = 1e-5;
  auto loss = [&] {
    Vec y(r.size()), m(rows), s(rows);
    LayerNormForward(rows, cols, eps, x.data(), gamma.data(), beta.data(), y.data(), m.data(),
                     s.data());
    return Dot(y, r);
  };
  Vec y(x.size()), mean(rows), rstd(rows);
  LayerNormForward(rows, cols, eps, x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                   rstd.data());
  Vec dx = Zeros(x.size()), dgamma = Zeros(cols), dbeta = Zeros(cols);
  LayerNormBackward(rows, cols, x.data(), gamma.data(), mean.data(), rstd.data(), r.data(),
                    dx.data(), dgamma.data(), dbeta.data());
  ExpectGradient("x", x, loss, dx);
  ExpectGradient("gamma", gamma, loss, dgamma);
  ExpectGradient("beta", beta, loss, dbeta);
}

TEST(GradCheck, RmsNorm) {
  const std::int64_t rows = 3, cols = 7;
  Vec x = RandomVector(rows * cols, 180, -2, 2);
  Vec gamma = RandomVector(cols, 181, 0.5, 1.5);
  const Vec r = RandomVector(x.size(), 183);
  const double eps = 1e-5;
  auto loss = [&] {
    Vec y(r.size()), s(rows);
    RmsNormForward(rows, cols, eps, x.data(), gamma.data(), y.data(), s.data());
    return Dot(y, r);
  };
  Vec y(x.size()), rstd(rows);
  RmsNormForward(rows, cols, eps, x.data(), gamma.data(), y.data(), rstd.data());
  Vec dx = Zeros(x.size()), dgamma = Zeros(cols);
  RmsNormBackward(rows, cols, x.data(), gamma.data(), rstd.data(), r.data(), dx.data(),
                  dgamma.data());
  ExpectGradient("x", x, loss, dx);
  ExpectGradient("gamma", gamma, loss, dgamma);
}

TEST(GradCheck, SigmoidAndSilu) {
  Vec x = RandomVector(23, 190, -4, 4);
  const Vec r = RandomVector(x.size(), 191);
  auto sigmoid_loss = [&] {
    Vec y(r.size());
    SigmoidForward<double>(static_cast<Index>(x.size()), x.data(), y.data());
    return Dot(y, r);
  };
  Vec y(x.size()), dx = Zeros(x.size());
  SigmoidForward<double>(static_cast<Index>(x.size()), x.data(), y.data());
  SigmoidBackward<double>(static_cast<Index>(x.size()), y.data(), r.data(), dx.data());
  ExpectGradient("sigmoid x", x, sigmoid_loss, dx);
  auto silu_loss = [&] {
    Vec z(r.size());
    SiluForward<double>(static_cast<Index>(x.size()), x.data(), z.data());
    return Dot(z, r);
  };
  Vec dx2 = Zeros(x.size());
  SiluBackward<double>(static_cast<Index>(x.size()), x.data(), r.data(), dx2.data());
  ExpectGradient("silu x", x, silu_loss, dx2);
}

// a (3 x 5) times b of the same shape, one value per row, one per column.
TEST(GradCheck, MulEachBroadcast) {
  const std::int64_t rows = 3, cols = 5;
  for (MulBroadcast mode : {MulBroadcast::kNone, MulBroadcast::kPerRow, MulBroadcast::kPerColumn}) {
    const std::size_t b_size = mode == MulBroadcast::kNone     ? rows * cols
                               : mode == MulBroadcast::kPerRow ? rows
                                                               : cols;
    Vec a = RandomVector(rows * cols, 200, -2, 2), b = RandomVector(b_size, 201, -2, 2);
    const Vec r = RandomVector(a.size(), 202);
    auto loss = [&] {
      Vec y(r.size());
      MulForward(mode, rows, cols, a.data(), b.data(), y.data());
      return Dot(y, r);
    };
    Vec da = Zeros(a.size()), db = Zeros(b.size());
    MulBackward(mode, rows, cols, a.data(), b.data(), r.data(), da.data(), db.data());
    ExpectGradient("a", a, loss, da);
    ExpectGradient("b", b, loss, db);
  }
}

// 2 rows of 3 positions, head size 8: the rotation is orthogonal, so its
// gradient is the inverse rotation.
TEST(GradCheck, Rotary) {
  const std::int64_t n = 2, s = 3, d = 8;
  Vec x = RandomVector(n * s * d, 210, -2, 2);
  const Vec r = RandomVector(x.size(), 211);
  auto loss = [&] {
    Vec y(r.size());
    RotaryForward(n, s, d, x.data(), y.data());
    return Dot(y, r);
  };
  Vec dx = Zeros(x.size());
  RotaryBackward(n, s, d, r.data(), dx.data());
  ExpectGradient("x", x, loss, dx);
  // Position 0 is not rotated.
  Vec y(x.size());
  RotaryForward(n, s, d, x.data(), y.data());
  for (std::int64_t i = 0; i < d; ++i) EXPECT_DOUBLE_EQ(y[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(i)]);
}

// 2 samples, 4 query heads on 2 key/value heads, 5 positions, d 3, dv 2,
// causal and not.
TEST(GradCheck, FusedAttention) {
  for (bool causal : {true, false}) {
    AttentionArgs a;
    a.n = 2, a.heads = 4, a.kv_heads = 2, a.s = 5, a.d = 3, a.dv = 2;
    a.causal = causal;
    a.scale = 0.7f;
    Vec q = RandomVector(a.n * a.heads * a.s * a.d, 220, -1, 1);
    Vec k = RandomVector(a.n * a.kv_heads * a.s * a.d, 221, -1, 1);
    Vec v = RandomVector(a.n * a.kv_heads * a.s * a.dv, 222, -1, 1);
    const Vec r = RandomVector(a.n * a.heads * a.s * a.dv, 223);
    const std::size_t rows = static_cast<std::size_t>(a.n * a.heads * a.s);
    auto loss = [&] {
      Vec o(r.size()), lse(rows);
      AttentionForward(a, q.data(), k.data(), v.data(), o.data(), lse.data());
      return Dot(o, r);
    };
    Vec o(r.size()), lse(rows);
    AttentionForward(a, q.data(), k.data(), v.data(), o.data(), lse.data());
    Vec dq = Zeros(q.size()), dk = Zeros(k.size()), dv = Zeros(v.size());
    AttentionBackward(a, q.data(), k.data(), v.data(), o.data(), lse.data(), r.data(), dq.data(),
                      dk.data(), dv.data());
    ExpectGradient("q", q, loss, dq);
    ExpectGradient("k", k, loss, dk);
    ExpectGradient("v", v, loss, dv);
  }
}

// One step of each cell, 3 rows of 4 units: L = sum(h r) (+ sum(c q) for
// the LSTM) against gx, gh, h_prev (GRU: its direct path; the others reach
// h_prev only through gh) and c_prev.
TEST(GradCheck, RecurrentCells) {
  const std::int64_t batch = 3, hidden = 4;
  for (models::RnnCell cell : {models::RnnCell::kTanh, models::RnnCell::kLstm, models::RnnCell::kGru}) {
    const std::int64_t gates = models::RnnGates(cell);
    const std::int64_t width = gates * hidden, n = batch * hidden;
    const bool lstm = cell == models::RnnCell::kLstm;
    Vec gx = RandomVector(batch * width, 230, -2, 2), gh = RandomVector(batch * width, 231, -2, 2);
    Vec h_prev = RandomVector(n, 232, -1, 1), c_prev = RandomVector(n, 233, -1, 1);
    const Vec r = RandomVector(n, 234), q = RandomVector(n, 235);
    auto loss = [&] {
      Vec h(n), c(n), act(batch * width);
      RnnCellForward(cell, batch, hidden, gx.data(), gh.data(), h_prev.data(), c_prev.data(), h.data(),
                     c.data(), act.data());
      return Dot(h, r) + (lstm ? Dot(c, q) : 0.0);
    };
    Vec h(n), c(n), act(batch * width);
    RnnCellForward(cell, batch, hidden, gx.data(), gh.data(), h_prev.data(), c_prev.data(), h.data(),
                   c.data(), act.data());
    Vec dc = lstm ? q : Zeros(n), dgx(gx.size()), dgh(gh.size()), dh_prev = Zeros(n);
    RnnCellBackward(cell, batch, hidden, gh.data(), h_prev.data(), c_prev.data(), c.data(), act.data(),
                    r.data(), dc.data(), dgx.data(), dgh.data(), dh_prev.data());
    ExpectGradient("gx", gx, loss, dgx);
    ExpectGradient("gh", gh, loss, dgh);
    ExpectGradient("h_prev", h_prev, loss, dh_prev);
    if (lstm) ExpectGradient("c_prev", c_prev, loss, dc);
  }
}

void CheckSoftmax(bool causal) {
  // causal: 2 samples x 5 query rows of 5 keys each.
  const std::int64_t rows = 10, cols = 5;
  Vec x = RandomVector(rows * cols, causal ? 90 : 95, -3, 3);
  const Vec r = RandomVector(x.size(), 91);
  auto loss = [&] {
    Vec y(r.size());
    SoftmaxForward(rows, cols, causal, x.data(), y.data());
    return Dot(y, r);
  };
  Vec y(x.size()), dx = Zeros(x.size());
  SoftmaxForward(rows, cols, causal, x.data(), y.data());
  SoftmaxBackward(rows, cols, y.data(), r.data(), dx.data());
  ExpectGradient("x", x, loss, dx);
}

TEST(GradCheck, Softmax) { CheckSoftmax(false); }
TEST(GradCheck, SoftmaxCausal) { CheckSoftmax(true); }

TEST(GradCheck, SoftmaxCrossEntropy) {
  // L = scale * sum(loss), whose gradient the backward kernel produces.
  const std::int64_t rows = 4, classes = 7;
  Vec logits = RandomVector(rows * classes, 100, -3, 3);
  const Vec labels = {0, 6, 3, 3};
  const double scale = 1.0 / rows;
  auto loss = [&] {
    Vec probs(logits.size()), l(rows);
    SoftmaxCrossEntropyForward(rows, classes, logits.data(), labels.data(), probs.data(),
                               l.data());
    return scale * Dot(l, Vec(rows, 1.0));
  };
  Vec probs(logits.size()), l(rows), dlogits = Zeros(logits.size());
  SoftmaxCrossEntropyForward(rows, classes, logits.data(), labels.data(), probs.data(),
                             l.data());
  SoftmaxCrossEntropyBackward(rows, classes, probs.data(), labels.data(), scale,
                              dlogits.data());
  ExpectGradient("logits", logits, loss, dlogits);
}

TEST(GradCheck, Gelu) {
  Vec x = RandomVector(23, 110, -4, 4);
  const Vec r = RandomVector(x.size(), 111);
  auto loss = [&] {
    Vec y(r.size());
    GeluForward<double>(static_cast<Index>(x.size()), x.data(), y.data());
    return Dot(y, r);
  };
  Vec dx = Zeros(x.size());
  GeluBackward<double>(static_cast<Index>(x.size()), x.data(), r.data(), dx.data());
  ExpectGradient("x", x, loss, dx);
}

TEST(GradCheck, Tanh) {
  Vec x = RandomVector(23, 120, -3, 3);
  const Vec r = RandomVector(x.size(), 121);
  auto loss = [&] {
    Vec y(r.size());
    TanhForward<double>(static_cast<Index>(x.size()), x.data(), y.data());
    return Dot(y, r);
  };
  Vec y(x.size()), dx = Zeros(x.size());
  TanhForward<double>(static_cast<Index>(x.size()), x.data(), y.data());
  TanhBackward<double>(static_cast<Index>(x.size()), y.data(), r.data(), dx.data());
  ExpectGradient("x", x, loss, dx);
}

TEST(GradCheck, Relu) {
  Vec x = AwayFromZero(23, 130);
  const Vec r = RandomVector(x.size(), 131);
  auto loss = [&] {
    Vec y(r.size());
    ReluForward<double>(static_cast<Index>(x.size()), x.data(), y.data());
    return Dot(y, r);
  };
  Vec y(x.size()), dx = Zeros(x.size());
  ReluForward<double>(static_cast<Index>(x.size()), x.data(), y.data());
  ReluBackward<double>(static_cast<Index>(x.size()), y.data(), r.data(), dx.data());
  ExpectGradient("x", x, loss, dx);
}

TEST(GradCheck, Dropout) {
  const Index count = 31;
  Vec x = RandomVector(count, 140);
  const Vec r = RandomVector(count, 141);
  auto loss = [&] {
    Vec y(count), mask(count);
    DropoutForward<double>(count, 0.3f, 7, 100, x.data(), mask.data(), y.data());
    return Dot(y, r);
  };
  Vec y(count), mask(count), dx = Zeros(count);
  DropoutForward<double>(count, 0.3f, 7, 100, x.data(), mask.data(), y.data());
  DropoutBackward<double>(count, mask.data(), r.data(), dx.data());
  ExpectGradient("x", x, loss, dx);
}

TEST(GradCheck, EmbeddingTable) {
  const Index vocab = 5, hidden = 3;
  const Vec ids = {4, 0, 4, 2, 4};  // repeated ids sum their gradients
  Vec table = RandomVector(vocab * hidden, 150);
  const Vec r = RandomVector(static_cast<Index>(ids.size()) * hidden, 151);
  const Index count = static_cast<Index>(ids.size());
  auto loss = [&] {
    Vec y(r.size());
    EmbeddingForward(count, hidden, ids.data(), table.data(), y.data());
    return Dot(y, r);
  };
  Vec dtable = Zeros(table.size());
  EmbeddingBackward(count, hidden, ids.data(), r.data(), dtable.data());
  ExpectGradient("table", table, loss, dtable);
}

TEST(GradCheck, CausalAttention) {
  // One attention block on (batch * heads) = 3 matrices of S = 5 positions,
  // D = 4:
  //   scores = Q K^T / sqrt(D),  P = causal softmax(scores),  O = P V.
  // Backward, with dO = r:
  //   dP = dO V^T, dV = P^T dO, dS = softmax backward, dQ = dS K / sqrt(D),
  //   dK = dS^T Q / sqrt(D).
  const Index bh = 3, s = 5, d = 4, qs = s * d, ss = s * s;
  const double alpha = 1.0 / std::sqrt(static_cast<double>(d));
  Vec q = RandomVector(bh * qs, 160), k = RandomVector(bh * qs, 161),
      v = RandomVector(bh * qs, 162);
  const Vec r = RandomVector(bh * qs, 163);
  Vec scores(bh * ss), probs(bh * ss), out(bh * qs);
  auto forward = [&] {
    GemmBatched<double>(bh, false, true, s, s, d, alpha, q.data(), qs, k.data(), qs, 0.0,
                        scores.data(), ss);
    SoftmaxForward<double>(bh * s, s, true, scores.data(), probs.data());
    GemmBatched<double>(bh, false, false, s, d, s, 1.0, probs.data(), ss, v.data(), qs, 0.0,
                        out.data(), qs);
    return Dot(out, r);
  };
  forward();
  Vec dprobs(bh * ss), dscores = Zeros(bh * ss);
  Vec dq = Zeros(q.size()), dk = Zeros(k.size()), dv = Zeros(v.size());
  GemmBatched<double>(bh, false, true, s, s, d, 1.0, r.data(), qs, v.data(), qs, 0.0,
                      dprobs.data(), ss);
  GemmBatched<double>(bh, true, false, s, d, s, 1.0, probs.data(), ss, r.data(), qs, 1.0,
                      dv.data(), qs);
  SoftmaxBackward<double>(bh * s, s, probs.data(), dprobs.data(), dscores.data());
  GemmBatched<double>(bh, false, false, s, d, s, alpha, dscores.data(), ss, k.data(), qs, 1.0,
                      dq.data(), qs);
  GemmBatched<double>(bh, true, false, s, d, s, alpha, dscores.data(), ss, q.data(), qs, 1.0,
                      dk.data(), qs);
  ExpectGradient("q", q, forward, dq);
  ExpectGradient("k", k, forward, dk);
  ExpectGradient("v", v, forward, dv);
}

TEST(GradCheck, SplitAndMergeHeads) {
  // SplitHeads' backward is MergeHeads accumulated, and vice versa.
  const Index n = 2, s = 3, heads = 4, d = 5, count = n * s * heads * d;
  Vec x = RandomVector(count, 170);
  const Vec r = RandomVector(count, 171);
  auto split_loss = [&] {
    Vec y(count);
    SplitHeads(n, s, heads, d, x.data(), y.data(), false);
    return Dot(y, r);
  };
  auto merge_loss = [&] {
    Vec y(count);
    MergeHeads(n, s, heads, d, x.data(), y.data(), false);
    return Dot(y, r);
  };
  Vec dx = Zeros(count);
  MergeHeads(n, s, heads, d, r.data(), dx.data(), true);
  ExpectGradient("x (split)", x, split_loss, dx);
  dx = Zeros(count);
  SplitHeads(n, s, heads, d, r.data(), dx.data(), true);
  ExpectGradient("x (merge)", x, merge_loss, dx);
}

TEST(GradCheck, Copy2D) {
  // Slice a 3 x 4 block out of a 3 x 7 source into a 3 x 6 destination at
  // column 2; the gradient copies the block back, accumulating.
  const Index rows = 3, cols = 4, src_stride = 7, dst_stride = 6;
  Vec src = RandomVector(rows * src_stride, 180);
  const Vec r = RandomVector(rows * dst_stride, 181);
  auto loss = [&] {
    Vec dst(rows * dst_stride, 0.0);
    Copy2D(rows, cols, src.data(), src_stride, dst.data() + 2, dst_stride, false);
    return Dot(dst, r);
  };
  Vec dsrc = Zeros(src.size());
  Copy2D(rows, cols, r.data() + 2, dst_stride, dsrc.data(), src_stride, true);
  ExpectGradient("src", src, loss, dsrc);
}

TEST(GradCheck, AddBiasAndBiasGrad) {
  const Index rows = 5, cols = 3;
  const Vec y0 = RandomVector(rows * cols, 190);
  Vec bias = RandomVector(cols, 191);
  const Vec r = RandomVector(rows * cols, 192);
  auto loss = [&] {
    Vec y = y0;
    AddBias(y.data(), bias.data(), rows, cols);
    return Dot(y, r);
  };
  Vec dbias = Zeros(cols);
  BiasGrad(r.data(), rows, cols, dbias.data());
  ExpectGradient("bias", bias, loss, dbias);
}

TEST(GradCheck, GemmAllTranspositions) {
  // C = 0.7 op(A) op(B) + 0.3 C0 (m = 3, n = 4, k = 5):
  //   dA = 0.7 dC op(B)^T (transposed back when trans_a),
  //   dB = 0.7 op(A)^T dC (transposed back when trans_b).
  const Index m = 3, n = 4, k = 5;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Vec a = RandomVector(m * k, 200), b = RandomVector(k * n, 201);
      const Vec c0 = RandomVector(m * n, 202), r = RandomVector(m * n, 203);
      auto loss = [&] {
        Vec c = c0;
        Gemm<double>(ta, tb, m, n, k, 0.7, a.data(), b.data(), 0.3, c.data());
        return Dot(c, r);
      };
      Vec da = Zeros(a.size()), db = Zeros(b.size());
      // dA stored as A is: (m x k) = dC (m x n) op(B)^T, or (k x m) = op(B) dC^T.
      if (!ta) Gemm<double>(false, !tb, m, k, n, 0.7, r.data(), b.data(), 1.0, da.data());
      else Gemm<double>(tb, true, k, m, n, 0.7, b.data(), r.data(), 1.0, da.data());
      // dB stored as B is: (k x n) = op(A)^T dC, or (n x k) = dC^T op(A).
      if (!tb) Gemm<double>(!ta, false, k, n, m, 0.7, a.data(), r.data(), 1.0, db.data());
      else Gemm<double>(true, ta, n, k, m, 0.7, r.data(), a.data(), 1.0, db.data());
      ExpectGradient(ta ? "A (trans)" : "A", a, loss, da);
      ExpectGradient(tb ? "B (trans)" : "B", b, loss, db);
    }
  }
}

}  // namespace
}  // namespace dtsim::exec::cpu
