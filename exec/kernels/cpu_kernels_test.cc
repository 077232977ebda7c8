// Forward kernels against independent closed forms and hand-computed
// values, in double precision. Every expected value says where it comes
// from.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <vector>

#include "exec/counter_rng.h"
#include "exec/kernels/cpu_kernels.h"
#include "exec/kernels/kernel_test_util.h"

namespace dtsim::exec::cpu {
namespace {

using testing::RandomVector;
using Vec = std::vector<double>;

// 0, 1, 2, ..., count - 1.
Vec Iota(std::size_t count) {
  Vec v(count);
  std::iota(v.begin(), v.end(), 0.0);
  return v;
}

TEST(Gemm, MatchesTripleLoopForEveryTransposition) {
  // Reference: C[i][j] = alpha * sum_l op(A)[i][l] op(B)[l][j] + beta * C0[i][j]
  // with op(A)[i][l] = trans_a ? A[l][i] : A[i][l] (A stored k x m).
  // m + n + k = 90 takes Eigen's blocked (not coefficient-wise) path.
  const Index m = 37, n = 29, k = 24;
  const double alpha = 0.5, beta = -1.5;
  const Vec a = RandomVector(m * k, 1), b = RandomVector(k * n, 2), c0 = RandomVector(m * n, 3);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Vec c = c0;
      Gemm<double>(ta, tb, m, n, k, alpha, a.data(), b.data(), beta, c.data());
      for (Index i = 0; i < m; ++i) {
        for (Index j = 0; j < n; ++j) {
          double sum = 0;
          for (Index l = 0; l < k; ++l) {
            sum += (ta ? a[l * m + i] : a[i * k + l]) * (tb ? b[j * k + l] : b[l * n + j]);
          }
          EXPECT_NEAR(c[i * n + j], alpha * sum + beta * c0[i * n + j], 1e-12)
              << "ta " << ta << " tb " << tb;
        }
      }
    }
  }
}

TEST(Gemm, BetaZeroDoesNotReadC) {
  // BLAS semantics: with beta = 0, C's old contents (here NaN) are ignored.
  // [1 2] * [3; 4] = 1*3 + 2*4 = 11.
  const Vec a = {1, 2}, b = {3, 4};
  Vec c = {std::numeric_limits<double>::quiet_NaN()};
  Gemm<double>(false, false, 1, 1, 2, 1.0, a.data(), b.data(), 0.0, c.data());
  EXPECT_EQ(c[0], 11.0);
}

Conv2dArgs Conv(Index c, Index h, Index w, Index k, int r, int s, int pad) {
  Conv2dArgs a;
  a.n = 1, a.c = c, a.h = h, a.w = w, a.k = k, a.r = r, a.s = s;
  a.pad_h = pad, a.pad_w = pad;
  a.oh = h + 2 * pad - r + 1, a.ow = w + 2 * pad - s + 1;
  return a;
}

TEST(Conv2d, PointwiseEqualsMatrixProduct) {
  // A 1x1 convolution is y[n] (K x HW) = w (K x C) * x[n] (C x HW) + bias,
  // computed here by an explicit loop.
  Conv2dArgs a = Conv(3, 4, 5, 6, 1, 1, 0);
  a.n = 2;
  const Vec x = RandomVector(a.n * a.c * a.h * a.w, 10), w = RandomVector(a.k * a.c, 11);
  const Vec bias = RandomVector(a.k, 12);
  Vec y(a.n * a.k * a.h * a.w);
  Conv2dForward(a, x.data(), w.data(), bias.data(), y.data());
  const Index hw = a.h * a.w;
  for (Index b = 0; b < a.n; ++b) {
    for (Index k = 0; k < a.k; ++k) {
      for (Index p = 0; p < hw; ++p) {
        double sum = bias[k];
        for (Index c = 0; c < a.c; ++c) sum += w[k * a.c + c] * x[(b * a.c + c) * hw + p];
        EXPECT_NEAR(y[(b * a.k + k) * hw + p], sum, 1e-12);
      }
    }
  }
}

TEST(Conv2d, HandMadeThreeByThree) {
  // x = [1 2 3; 4 5 6; 7 8 9].
  const Vec x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  {
    // 2x2 kernel of ones, no padding: sums of each 2x2 block,
    // 1+2+4+5 = 12, 2+3+5+6 = 16, 4+5+7+8 = 24, 5+6+8+9 = 28.
    const Conv2dArgs a = Conv(1, 3, 3, 1, 2, 2, 0);
    const Vec w(4, 1.0);
    Vec y(4);
    Conv2dForward(a, x.data(), w.data(), static_cast<const double*>(nullptr), y.data());
    EXPECT_EQ(y, (Vec{12, 16, 24, 28}));
  }
  {
    // 3x3 kernel of ones, padding 1, bias 0.5: neighbourhood sums plus 0.5.
    // Corner (0,0): 1+2+4+5 = 12; edge (0,1): 1+2+3+4+5+6 = 21; centre: 45.
    const Conv2dArgs a = Conv(1, 3, 3, 1, 3, 3, 1);
    const Vec w(9, 1.0), bias = {0.5};
    Vec y(9);
    Conv2dForward(a, x.data(), w.data(), bias.data(), y.data());
    EXPECT_EQ(y, (Vec{12.5, 21.5, 16.5, 27.5, 45.5, 33.5, 24.5, 39.5, 28.5}));
  }
  {
    // Kernel [0 0 0; 0 0 0; 0 0 1] with padding 1 shifts the image up-left:
    // y[i][j] = x[i+1][j+1], zero past the edge.
    const Conv2dArgs a = Conv(1, 3, 3, 1, 3, 3, 1);
    const Vec w = {0, 0, 0, 0, 0, 0, 0, 0, 1};
    Vec y(9);
    Conv2dForward(a, x.data(), w.data(), static_cast<const double*>(nullptr), y.data());
    EXPECT_EQ(y, (Vec{5, 6, 0, 8, 9, 0, 0, 0, 0}));
  }
}

// Convolutions run im2col + GEMM over chunks of samples (cpu_conv.cc: at
// most 256 Ki floats of columns per chunk). These shapes need (8 x 9 + 8) x
// 35 x 35 = 98,000 floats per sample, so 3 samples go as a chunk of 2 and
// one of 1; the reference is the convolution's definition, summed directly
// in double.
TEST(Conv2d, ChunksOfSamplesMatchTheDefinition) {
  for (int stride : {1, 2}) {
    Conv2dArgs a;
    a.n = 3, a.c = 8, a.k = 8, a.r = a.s = 3, a.pad_h = a.pad_w = 1;
    a.stride_h = a.stride_w = stride;
    a.h = a.w = 35 * stride;
    a.oh = a.ow = 35;
    const Index in = a.n * a.c * a.h * a.w, out = a.n * a.k * a.oh * a.ow, wn = a.k * a.c * 9;
    const std::vector<double> x = testing::RandomVector(static_cast<std::size_t>(in), 1);
    const std::vector<double> w = testing::RandomVector(static_cast<std::size_t>(wn), 2);
    const std::vector<double> dy = testing::RandomVector(static_cast<std::size_t>(out), 3);
    std::vector<double> y(static_cast<std::size_t>(out)), dx(static_cast<std::size_t>(in), 0.0),
        dw(static_cast<std::size_t>(wn), 0.0);
    Conv2dForward(a, x.data(), w.data(), static_cast<const double*>(nullptr), y.data());
    Conv2dBackward(a, x.data(), w.data(), dy.data(), dx.data(), dw.data(),
                   static_cast<double*>(nullptr));
    std::vector<double> ry(y.size(), 0.0), rdx(dx.size(), 0.0), rdw(dw.size(), 0.0);
    for (Index b = 0; b < a.n; ++b)
      for (Index k = 0; k < a.k; ++k)
        for (Index oy = 0; oy < a.oh; ++oy)
          for (Index ox = 0; ox < a.ow; ++ox) {
            const auto o = static_cast<std::size_t>(((b * a.k + k) * a.oh + oy) * a.ow + ox);
            for (Index c = 0; c < a.c; ++c)
              for (int kr = 0; kr < 3; ++kr)
                for (int ks = 0; ks < 3; ++ks) {
                  const Index iy = oy * stride - 1 + kr, ix = ox * stride - 1 + ks;
                  if (iy < 0 || iy >= a.h || ix < 0 || ix >= a.w) continue;
                  const auto i = static_cast<std::size_t>(((b * a.c + c) * a.h + iy) * a.w + ix);
                  const auto wi = static_cast<std::size_t>(((k * a.c + c) * 3 + kr) * 3 + ks);
                  ry[o] += w[wi] * x[i];
                  rdx[i] += w[wi] * dy[o];
                  rdw[wi] += x[i] * dy[o];
                }
          }
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ry[i], 1e-9) << "y " << i;
    for (std::size_t i = 0; i < dx.size(); ++i) ASSERT_NEAR(dx[i], rdx[i], 1e-9) << "dx " << i;
    for (std::size_t i = 0; i < dw.size(); ++i) ASSERT_NEAR(dw[i], rdw[i], 1e-8) << "dw " << i;
  }
}

TEST(Conv2d, GroupsSeeOnlyTheirChannels) {
  // groups = 2, C = 2, K = 2, 1x1 kernels of weight 1: output channel g is
  // input channel g (each group has one input channel).
  Conv2dArgs a = Conv(2, 2, 2, 2, 1, 1, 0);
  a.groups = 2;
  const Vec x = {1, 2, 3, 4, 10, 20, 30, 40}, w = {1, 1};
  Vec y(8);
  Conv2dForward(a, x.data(), w.data(), static_cast<const double*>(nullptr), y.data());
  EXPECT_EQ(y, x);
}

Pool2dArgs Pool(Index h, Index w, int window, int stride, int pad, Index oh, Index ow) {
  Pool2dArgs a;
  a.h = h, a.w = w, a.r = window, a.s = window, a.stride_h = stride, a.stride_w = stride;
  a.pad_h = pad, a.pad_w = pad, a.oh = oh, a.ow = ow;
  return a;
}

TEST(Pool2d, MaxOfKnownGrid) {
  // x = 0..15 row-major in 4x4; 2x2 windows, stride 2: the bottom-right of
  // each window wins: 5, 7, 13, 15.
  const Vec x = Iota(16);
  Vec y(4);
  MaxPoolForward(Pool(4, 4, 2, 2, 0, 2, 2), x.data(), y.data());
  EXPECT_EQ(y, (Vec{5, 7, 13, 15}));
  // 3x3 windows, stride 2, padding 1, ceil mode: OH = ceil((4+2-3)/2)+1 = 3,
  // but the third window starts at 2*2-1 = 3 < 4, so it stays. Windows cover
  // rows/cols {0,1}, {1,2,3}, {3}: maxima at (1,1)=5, (1,3)=7, (1,3)=7, ...
  Vec z(9);
  MaxPoolForward(Pool(4, 4, 3, 2, 1, 3, 3), x.data(), z.data());
  EXPECT_EQ(z, (Vec{5, 7, 7, 13, 15, 15, 13, 15, 15}));
}

TEST(Pool2d, MaxGradientGoesToFirstMaximum) {
  // All-equal window: the first element (row-major) takes the gradient.
  const Vec x(4, 1.0), dy = {3.0};
  Vec dx(4, 0.0);
  MaxPoolBackward(Pool(2, 2, 2, 2, 0, 1, 1), x.data(), dy.data(), dx.data());
  EXPECT_EQ(dx, (Vec{3, 0, 0, 0}));
}

TEST(Pool2d, AverageDividesByInBoundsCount) {
  // x = 0..15 in 4x4; 3x3 windows, stride 1, padding 1. Corner (0,0) covers
  // {0,1,4,5}: mean 2.5 (divided by 4, not 9). Edge (0,1) covers
  // {0,1,2,4,5,6}: 18/6 = 3. Centre (1,1): {0,1,2,4,5,6,8,9,10} = 45/9 = 5.
  const Vec x = Iota(16);
  Vec y(16);
  AvgPoolForward(Pool(4, 4, 3, 1, 1, 4, 4), x.data(), y.data());
  EXPECT_DOUBLE_EQ(y[0], 2.5);
  EXPECT_DOUBLE_EQ(y[1], 3.0);
  EXPECT_DOUBLE_EQ(y[5], 5.0);
}

TEST(Softmax, EqualLogitsGiveUniform) {
  // softmax of n equal logits is 1/n each; causal row i has i+1 visible
  // columns, each 1/(i+1), and zeros after.
  const Index rows = 4, cols = 4;
  const Vec x(rows * cols, 2.5);
  Vec y(x.size());
  SoftmaxForward<double>(rows, cols, false, x.data(), y.data());
  for (double p : y) EXPECT_DOUBLE_EQ(p, 0.25);
  SoftmaxForward<double>(rows, cols, true, x.data(), y.data());
  for (Index i = 0; i < rows; ++i) {
    for (Index j = 0; j < cols; ++j) {
      EXPECT_DOUBLE_EQ(y[i * cols + j], j <= i ? 1.0 / static_cast<double>(i + 1) : 0.0);
    }
  }
}

TEST(Softmax, LargeLogitsDoNotOverflow) {
  // softmax(1000, 1000 + ln 3) = (1/4, 3/4): shifted by the max before exp.
  const Vec x = {1000.0, 1000.0 + std::log(3.0)};
  Vec y(2);
  SoftmaxForward<double>(1, 2, false, x.data(), y.data());
  EXPECT_NEAR(y[0], 0.25, 1e-12);
  EXPECT_NEAR(y[1], 0.75, 1e-12);
}

TEST(SoftmaxCrossEntropy, UniformProbabilitiesGiveLogClasses) {
  // Equal logits: p = 1/classes, loss = -log(1/classes) = log(classes).
  const Index rows = 3, classes = 10;
  const Vec logits(rows * classes, -0.7), labels = {0, 9, 4};
  Vec probs(logits.size()), loss(rows);
  SoftmaxCrossEntropyForward(rows, classes, logits.data(), labels.data(), probs.data(),
                             loss.data());
  for (double l : loss) EXPECT_NEAR(l, std::log(10.0), 1e-12);
  for (double p : probs) EXPECT_NEAR(p, 0.1, 1e-12);
}

TEST(SoftmaxCrossEntropy, ConfidentWrongAnswerStaysFinite) {
  // Logits (0, 800), label 0: loss = logsumexp - 0 = 800 + log(1 + e^-800)
  // = 800 in double; computing -log(p) would give -log(0) = inf.
  const Vec logits = {0.0, 800.0}, labels = {0};
  Vec probs(2), loss(1);
  SoftmaxCrossEntropyForward<double>(1, 2, logits.data(), labels.data(), probs.data(),
                                     loss.data());
  EXPECT_DOUBLE_EQ(loss[0], 800.0);
}

TEST(LayerNorm, OutputHasMeanZeroVarianceOne) {
  // gamma = 1, beta = 0: y = (x - mean) / sqrt(var + eps) has mean 0 and
  // variance var / (var + eps) = 1 - O(eps / var).
  const Index rows = 3, cols = 11;
  const double eps = 1e-12;
  const Vec x = RandomVector(rows * cols, 20, -3, 5);
  const Vec gamma(cols, 1.0), beta(cols, 0.0);
  Vec y(x.size()), mean(rows), rstd(rows);
  LayerNormForward(rows, cols, eps, x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                   rstd.data());
  for (Index i = 0; i < rows; ++i) {
    double sum = 0, sq = 0;
    for (Index j = 0; j < cols; ++j) sum += y[i * cols + j];
    for (Index j = 0; j < cols; ++j) sq += y[i * cols + j] * y[i * cols + j];
    EXPECT_NEAR(sum / cols, 0.0, 1e-12);
    EXPECT_NEAR(sq / cols, 1.0, 1e-9);
  }
}

TEST(BatchNorm, EveryChannelHasMeanZeroVarianceOne) {
  // As layer norm, per channel over (n, spatial); gamma/beta then apply:
  // with gamma = 2, beta = 1 the channel mean is 1 and variance 4.
  const Index n = 3, c = 2, spatial = 4;
  const Vec x = RandomVector(n * c * spatial, 21, -1, 3);
  const Vec gamma = {1.0, 2.0}, beta = {0.0, 1.0};
  Vec y(x.size()), mean(c), rstd(c);
  BatchNormForward(n, c, spatial, 1e-12, x.data(), gamma.data(), beta.data(), y.data(),
                   mean.data(), rstd.data());
  for (Index ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (Index b = 0; b < n; ++b) {
      for (Index s = 0; s < spatial; ++s) sum += y[(b * c + ch) * spatial + s];
    }
    const double mu = sum / (n * spatial);
    for (Index b = 0; b < n; ++b) {
      for (Index s = 0; s < spatial; ++s) {
        const double d = y[(b * c + ch) * spatial + s] - mu;
        sq += d * d;
      }
    }
    EXPECT_NEAR(mu, beta[ch], 1e-12);
    EXPECT_NEAR(sq / (n * spatial), gamma[ch] * gamma[ch], 1e-9);
  }
}

TEST(Lrn, HandComputedValues) {
  // Two channels, one pixel, radius 1 (each window sees both channels),
  // bias 1, alpha 0.5, beta 0.5: x = (1, 2), d = 1 + 0.5 * (1 + 4) = 3.5,
  // y = x / sqrt(3.5).
  LrnArgs a;
  a.c = 2, a.radius = 1, a.bias = 1.0f, a.alpha = 0.5f, a.beta = 0.5f;
  const Vec x = {1, 2};
  Vec y(2);
  LrnForward(a, x.data(), y.data());
  EXPECT_NEAR(y[0], 1 / std::sqrt(3.5), 1e-12);
  EXPECT_NEAR(y[1], 2 / std::sqrt(3.5), 1e-12);
  // Radius 0: each channel alone, d_c = 1 + 0.5 x_c^2: y = (1/sqrt(1.5), 2/sqrt(3)).
  a.radius = 0;
  LrnForward(a, x.data(), y.data());
  EXPECT_NEAR(y[0], 1 / std::sqrt(1.5), 1e-12);
  EXPECT_NEAR(y[1], 2 / std::sqrt(3.0), 1e-12);
  // beta 0.75 (computed with square roots) and 0.6 (with pow): d = 3.5 as
  // above, y = x * 3.5^-beta.
  a.radius = 1;
  for (float beta : {0.75f, 0.6f}) {
    a.beta = beta;
    LrnForward(a, x.data(), y.data());
    EXPECT_NEAR(y[0], std::pow(3.5, -static_cast<double>(beta)), 1e-12) << beta;
    EXPECT_NEAR(y[1], 2 * std::pow(3.5, -static_cast<double>(beta)), 1e-12) << beta;
  }
}

TEST(Activations, KnownValues) {
  // GELU (tanh form): gelu(0) = 0; gelu(1) = 0.5 (1 + tanh(sqrt(2/pi) *
  // 1.044715)) = 0.5 (1 + tanh(0.8335565...)) = 0.8411919906...;
  // gelu(-1) = -1 + gelu(1) (gelu(x) - gelu(-x) = x).
  const Vec x = {0.0, 1.0, -1.0};
  Vec y(3);
  GeluForward<double>(3, x.data(), y.data());
  const double gelu1 = 0.5 * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * 1.044715));
  EXPECT_EQ(y[0], 0.0);
  EXPECT_NEAR(y[1], gelu1, 1e-15);
  EXPECT_NEAR(y[1], 0.8411919906, 1e-10);
  EXPECT_NEAR(y[2], gelu1 - 1.0, 1e-15);
  // ReLU zeroes negatives; tanh(atanh(0.5)) = 0.5.
  ReluForward<double>(3, x.data(), y.data());
  EXPECT_EQ(y, (Vec{0, 1, 0}));
  const Vec t = {std::atanh(0.5)};
  TanhForward<double>(1, t.data(), y.data());
  EXPECT_NEAR(y[0], 0.5, 1e-15);
}

TEST(Dropout, KeepsOneMinusRateAndScales) {
  // Each element is kept with probability 1 - rate = 0.75; over 100,000
  // draws the kept fraction is 0.75 +- 4 sigma, sigma = sqrt(0.75 * 0.25 /
  // 1e5) = 0.00137. Kept values are x / 0.75; masks match CounterUniform.
  const Index count = 100000;
  const float rate = 0.25f;
  const Vec x(count, 3.0);
  Vec mask(count), y(count);
  DropoutForward<double>(count, rate, 42, 1000, x.data(), mask.data(), y.data());
  Index kept = 0;
  for (Index i = 0; i < count; ++i) {
    const bool keep = CounterUniform(42, 1000 + static_cast<std::uint64_t>(i)) >= rate;
    ASSERT_EQ(mask[i] != 0.0, keep) << i;
    if (keep) {
      ++kept;
      EXPECT_NEAR(y[i], 3.0 / 0.75, 1e-6);
    } else {
      EXPECT_EQ(y[i], 0.0);
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / count, 0.75, 4 * 0.00137);
  // rate 0: mask 1, y = x exactly.
  DropoutForward<double>(count, 0.0f, 42, 0, x.data(), mask.data(), y.data());
  EXPECT_EQ(y, x);
  // rate 1: everything dropped (a uniform in [0, 1) is never >= 1), mask 0.
  DropoutForward<double>(count, 1.0f, 42, 0, x.data(), mask.data(), y.data());
  EXPECT_EQ(mask, Vec(count, 0.0));
  EXPECT_EQ(y, Vec(count, 0.0));
}

TEST(Embedding, CopiesTableRows) {
  // table row r = (10 r, 10 r + 1); ids (2, 0, 2) pick rows 2, 0, 2.
  const Vec table = {0, 1, 10, 11, 20, 21}, ids = {2, 0, 2};
  Vec y(6);
  EmbeddingForward<double>(3, 2, ids.data(), table.data(), y.data());
  EXPECT_EQ(y, (Vec{20, 21, 0, 1, 20, 21}));
}

TEST(Optimizers, SgdHandComputed) {
  // p = 2, g = 0.5, lr = 0.1, weight decay 0.1:
  // p - lr (g + wd p) = 2 - 0.1 (0.5 + 0.2) = 1.93.
  const Vec g = {0.5};
  Vec p = {2.0};
  SgdStep<double>(1, 0.1, 0.1, g.data(), p.data());
  EXPECT_NEAR(p[0], 1.93, 1e-15);
}

TEST(Optimizers, MomentumHandComputed) {
  // lr 0.1, momentum 0.9, g = 1 twice from v = 0, p = 1:
  //   step 1: v = 1,   p = 1 - 0.1 = 0.9;
  //   step 2: v = 1.9, p = 0.9 - 0.19 = 0.71.
  const Vec g = {1.0};
  Vec v = {0.0}, p = {1.0};
  MomentumStep<double>(1, 0.1, 0.9, g.data(), v.data(), p.data());
  EXPECT_NEAR(v[0], 1.0, 1e-15);
  EXPECT_NEAR(p[0], 0.9, 1e-15);
  MomentumStep<double>(1, 0.1, 0.9, g.data(), v.data(), p.data());
  EXPECT_NEAR(v[0], 1.9, 1e-15);
  EXPECT_NEAR(p[0], 0.71, 1e-15);
}

TEST(Optimizers, AdamFirstStepMovesByLearningRate) {
  // Step t = 1 from m = v = 0: m = (1 - b1) g, so m_hat = m / (1 - b1) = g;
  // likewise v_hat = g^2. The step is lr * g / (|g| + eps): every parameter
  // moves by lr (times |g| / (|g| + eps) = 1 - O(1e-8)) against g's sign.
  const Index count = 9;
  const double lr = 1e-3, eps = 1e-8;
  const Vec g = testing::AwayFromZero(count, 30);
  const Vec p0 = RandomVector(count, 31);
  Vec m(count, 0.0), v(count, 0.0), p = p0;
  AdamStep<double>(count, lr, 0.9, 0.999, eps, 1, g.data(), m.data(), v.data(), p.data());
  for (Index i = 0; i < count; ++i) {
    const double expected = lr * std::abs(g[i]) / (std::abs(g[i]) + eps);
    EXPECT_NEAR(std::abs(p0[i] - p[i]), expected, 1e-15) << i;
    EXPECT_EQ(p[i] < p0[i], g[i] > 0) << i;
  }
}

}  // namespace
}  // namespace dtsim::exec::cpu
