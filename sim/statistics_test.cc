#include "sim/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/engine/random.h"

namespace dtsim::sim {
namespace {

// x = {2, 4, 4, 4, 5, 5, 7, 9}, n = 8, worked by hand:
//   mean = 40 / 8 = 5
//   squared deviations 9 + 1 + 1 + 1 + 0 + 0 + 4 + 16 = 32
//   s = sqrt(32 / 7) = 2.138090
//   half-width = t(0.975, 7) s / sqrt(8) = 2.365 x 2.138090 / 2.828427 = 1.787772
//   p50: h = 7 x 0.5 = 3.5, between x[3] = 4 and x[4] = 5: 4.5
//   p99: h = 7 x 0.99 = 6.93, x[6] + 0.93 (x[7] - x[6]) = 7 + 0.93 x 2 = 8.86
TEST(StatisticsTest, SmallSampleByHand) {
  const std::vector<double> x = {5, 4, 9, 2, 4, 7, 4, 5};  // unsorted on purpose
  EXPECT_DOUBLE_EQ(Mean(x), 5.0);
  EXPECT_NEAR(SampleStdDev(x), std::sqrt(32.0 / 7), 1e-12);
  EXPECT_NEAR(ConfidenceHalfWidth95(x), 2.365 * std::sqrt(32.0 / 7) / std::sqrt(8.0), 1e-12);
  EXPECT_NEAR(ConfidenceHalfWidth95(x), 1.787772, 1e-6);
  EXPECT_DOUBLE_EQ(Percentile(x, 50), 4.5);
  EXPECT_NEAR(Percentile(x, 99), 8.86, 1e-12);
  EXPECT_DOUBLE_EQ(Percentile(x, 0), 2.0);
  EXPECT_DOUBLE_EQ(Percentile(x, 100), 9.0);

  const Summary s = Summarize(x);
  EXPECT_EQ(s.n, 8);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.stddev, SampleStdDev(x));
  EXPECT_DOUBLE_EQ(s.ci95_half_width, ConfidenceHalfWidth95(x));
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.p50, 4.5);
  EXPECT_NEAR(s.p99, 8.86, 1e-12);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
}

// x = {1, 3}: mean 2, s = sqrt(((1-2)^2 + (3-2)^2) / 1) = sqrt(2),
// half-width = 12.706 x sqrt(2) / sqrt(2) = 12.706: two runs say little.
TEST(StatisticsTest, TwoSamples) {
  const std::vector<double> x = {1, 3};
  EXPECT_DOUBLE_EQ(SampleStdDev(x), std::sqrt(2.0));
  EXPECT_NEAR(ConfidenceHalfWidth95(x), 12.706, 1e-12);
  EXPECT_DOUBLE_EQ(Percentile(x, 50), 2.0);
}

TEST(StatisticsTest, SingleSampleHasNoSpread) {
  const std::vector<double> x = {3.5};
  const Summary s = Summarize(x);
  EXPECT_EQ(s.n, 1);
  EXPECT_DOUBLE_EQ(s.mean, 3.5);
  EXPECT_DOUBLE_EQ(s.stddev, 0.0);
  EXPECT_DOUBLE_EQ(s.ci95_half_width, 0.0);
  EXPECT_DOUBLE_EQ(s.p50, 3.5);
  EXPECT_DOUBLE_EQ(s.p99, 3.5);
}

// SummarizeCounted against Summarize of the written-out samples (the
// reference), and one averaging round by hand: nine steps of a = 1 and one
// of b = 3, n = 10: p95 at h = 9 x 0.95 = 8.55, a + 0.55 (b - a) = 2.1;
// p99 at h = 8.91: 1 + 0.91 x 2 = 2.82; p50 = 1; mean 1.2.
TEST(StatisticsTest, CountedSamplesSummarizeAsWrittenOut) {
  const std::vector<double> round_values = {3, 1};
  const std::vector<std::int64_t> round_counts = {1, 9};
  const Summary r = SummarizeCounted(round_values, round_counts);
  EXPECT_EQ(r.n, 10);
  EXPECT_DOUBLE_EQ(r.p50, 1.0);
  EXPECT_NEAR(r.p95, 2.1, 1e-12);
  EXPECT_NEAR(r.p99, 2.82, 1e-12);
  EXPECT_NEAR(r.mean, 1.2, 1e-12);
  EXPECT_DOUBLE_EQ(r.max, 3.0);
  const std::vector<std::vector<double>> values = {{1, 3}, {5, 2, 9, 4}, {7}, {2, 2, 8}};
  const std::vector<std::vector<std::int64_t>> counts = {{9, 1}, {3, 0, 1, 4}, {5}, {1, 2, 30}};
  for (std::size_t c = 0; c < values.size(); ++c) {
    std::vector<double> written;
    for (std::size_t i = 0; i < values[c].size(); ++i)
      written.insert(written.end(), static_cast<std::size_t>(counts[c][i]), values[c][i]);
    const Summary a = SummarizeCounted(values[c], counts[c]), b = Summarize(written);
    EXPECT_EQ(a.n, b.n) << c;
    EXPECT_NEAR(a.mean, b.mean, 1e-12) << c;
    EXPECT_NEAR(a.stddev, b.stddev, 1e-12) << c;
    EXPECT_NEAR(a.ci95_half_width, b.ci95_half_width, 1e-12) << c;
    EXPECT_DOUBLE_EQ(a.min, b.min) << c;
    EXPECT_NEAR(a.p50, b.p50, 1e-12) << c;
    EXPECT_NEAR(a.p95, b.p95, 1e-12) << c;
    EXPECT_NEAR(a.p99, b.p99, 1e-12) << c;
    EXPECT_DOUBLE_EQ(a.max, b.max) << c;
  }
}

TEST(StatisticsTest, StudentQuantiles) {
  // The table's ends (NIST/SEMATECH 1.3.6.7.2).
  EXPECT_DOUBLE_EQ(StudentT975(1), 12.706);
  EXPECT_DOUBLE_EQ(StudentT975(10), 2.228);
  EXPECT_DOUBLE_EQ(StudentT975(30), 2.042);
  // Beyond the table, the expansion against the same table's rows
  // (40: 2.021, 60: 2.000, 100: 1.984) and the normal limit.
  EXPECT_NEAR(StudentT975(40), 2.021, 5e-4);
  EXPECT_NEAR(StudentT975(60), 2.000, 5e-4);
  EXPECT_NEAR(StudentT975(100), 1.984, 5e-4);
  EXPECT_NEAR(StudentT975(1000000), 1.959964, 1e-5);
  // Decreasing in dof, with no step where the table hands over.
  for (int dof = 1; dof < 200; ++dof) EXPECT_GT(StudentT975(dof), StudentT975(dof + 1)) << dof;
  EXPECT_LT(StudentT975(30) - StudentT975(31), 0.004);
}

// The half-width is t s / sqrt(n): for draws of one distribution s settles
// near sigma and t near 1.96, so quadrupling n roughly halves it.
TEST(StatisticsTest, HalfWidthShrinksAsOneOverSqrtN) {
  auto half_width = [](int n) {
    std::vector<double> x;
    for (int i = 0; i < n; ++i) {
      x.push_back(StandardNormalFromBits(CounterHash(7, static_cast<std::uint64_t>(i), 0, 1),
                                         CounterHash(7, static_cast<std::uint64_t>(i), 0, 2)));
    }
    return ConfidenceHalfWidth95(x);
  };
  const double h100 = half_width(100), h400 = half_width(400), h1600 = half_width(1600);
  // For N(0, 1) draws the half-width is about 1.96 / sqrt(n).
  EXPECT_NEAR(h1600, 1.96 / 40, 0.1 * 1.96 / 40);
  EXPECT_NEAR(h100 / h400, 2.0, 0.3);
  EXPECT_NEAR(h400 / h1600, 2.0, 0.3);
}

}  // namespace
}  // namespace dtsim::sim
