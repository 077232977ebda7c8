#include "sim/cost/slowest_gpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace dtsim::sim {
namespace {

// Closed forms: E[max of 2] = 1 / sqrt(pi), E[max of 3] = 3 / (2 sqrt(pi))
// (David & Nagaraja, "Order Statistics", 3rd ed., §4.2).
TEST(SlowestGpu, ExpectedMaxMatchesClosedForms) {
  EXPECT_EQ(ExpectedMaxOfNormals(1), 0);
  EXPECT_NEAR(ExpectedMaxOfNormals(2), 1 / std::sqrt(M_PI), 1e-7);
  EXPECT_NEAR(ExpectedMaxOfNormals(3), 1.5 / std::sqrt(M_PI), 1e-7);
}

// Tabulated expected maxima (Harter 1961, "Expected values of normal order
// statistics", Biometrika 48: n = 10 1.538753, n = 100 2.507594).
TEST(SlowestGpu, ExpectedMaxMatchesHartersTable) {
  EXPECT_NEAR(ExpectedMaxOfNormals(10), 1.538753, 1e-6);
  EXPECT_NEAR(ExpectedMaxOfNormals(100), 2.507594, 1e-6);
}

// The quadrature against sampling: the mean of the maximum of n draws over
// many trials, within 4 standard errors, for random n up to 20,000.
TEST(SlowestGpu, ExpectedMaxAgreesWithSampling) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z;
  for (int n : {4, 37, 512, 20000}) {
    constexpr int kTrials = 4000;
    double sum = 0, sum2 = 0;
    for (int t = 0; t < kTrials; ++t) {
      double m = -1e9;
      for (int i = 0; i < n; ++i) m = std::max(m, z(rng));
      sum += m;
      sum2 += m * m;
    }
    const double mean = sum / kTrials;
    const double se = std::sqrt((sum2 / kTrials - mean * mean) / kTrials);
    EXPECT_NEAR(ExpectedMaxOfNormals(n), mean, 4 * se) << n;
  }
}

TEST(SlowestGpu, PaceGrowsWithTheGpusAndTheSpread) {
  EXPECT_EQ(SlowestGpuPace(0.015, 1), 1);
  EXPECT_EQ(SlowestGpuPace(0, 10000), 1);
  // 1.5% x E[max of 10] = 0.015 x 1.538753.
  EXPECT_NEAR(SlowestGpuPace(0.015, 10), 1 + 0.015 * 1.538753, 1e-8);
  double last = 1;
  for (std::int64_t n = 2; n <= (std::int64_t{1} << 20); n *= 2) {
    const double p = SlowestGpuPace(0.015, n);
    EXPECT_GT(p, last) << n;
    last = p;
  }
  EXPECT_LT(last, 1 + 0.015 * 5);  // E[max of 2^20] is about 4.9
}

TEST(SlowestGpu, DefaultSpreadIsHoppersOnly) {
  EXPECT_EQ(DefaultGpuSpeedSpread(hw::GpuArch::kHopper), 0.015);
  EXPECT_EQ(DefaultGpuSpeedSpread(hw::GpuArch::kAmpere), 0);
  EXPECT_EQ(DefaultGpuSpeedSpread(hw::GpuArch::kUnknown), 0);
}

}  // namespace
}  // namespace dtsim::sim
