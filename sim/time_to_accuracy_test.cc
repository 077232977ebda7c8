#include "sim/time_to_accuracy.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dtsim::sim {
namespace {

TEST(TimeToAccuracy, StepsToTargetInterpolatesTheCrossing) {
  const LossPoints c{{0, 10, 20}, {2.0, 1.5, 0.5}};
  // Crossing 1.0 between steps 10 (1.5) and 20 (0.5): 10 + 0.5 / 1.0 x 10.
  EXPECT_DOUBLE_EQ(*StepsToTarget(c, 1.0), 15);
  EXPECT_DOUBLE_EQ(*StepsToTarget(c, 0.5), 20);
  EXPECT_DOUBLE_EQ(*StepsToTarget(c, 2.5), 0);
  EXPECT_FALSE(StepsToTarget(c, 0.4).has_value());
}

TEST(TimeToAccuracy, SeedsGiveAMeanAndAStudentBand) {
  // Three seeds reach the target at 10, 12 and 14 updates: mean 12, sample
  // sd 2, half-width t(0.975, 2) x 2 / sqrt(3) = 4.303 x 1.1547 = 4.969.
  const std::vector<LossPoints> seeds = {{{0, 10}, {1, 0}}, {{0, 12}, {1, 0}}, {{0, 14}, {1, 0}}};
  const StepsEstimate e = EstimateSteps(seeds, 0.0);
  ASSERT_TRUE(e.valid());
  EXPECT_DOUBLE_EQ(e.mean, 12);
  EXPECT_NEAR(e.high - e.mean, 4.303 * 2 / std::sqrt(3.0), 1e-3);
  // A seed that never reaches the target: no estimate at all.
  std::vector<LossPoints> one_short = seeds;
  one_short[1].loss = {1, 0.5};
  const StepsEstimate none = EstimateSteps(one_short, 0.0);
  EXPECT_FALSE(none.valid());
  EXPECT_EQ(none.reached, 2);
}

TEST(TimeToAccuracy, WorkersFitIsAPowerLaw) {
  // updates = 100 x W^0.5 at 2, 4 and 8 workers, each +-5%: the fit is exact,
  // 16 workers extrapolate to 400 with the measured relative band.
  std::vector<StepsEstimate> est;
  for (int w : {2, 4, 8}) {
    StepsEstimate e;
    e.seeds = e.reached = 3;
    e.mean = 100 * std::sqrt(w);
    e.low = e.mean / 1.05;
    e.high = e.mean * 1.05;
    est.push_back(e);
  }
  const WorkersFit fit({2, 4, 8}, est);
  EXPECT_NEAR(fit.slope(), 0.5, 1e-12);
  const StepsEstimate at16 = fit.At(16);
  EXPECT_NEAR(at16.mean, 400, 1e-9);
  EXPECT_TRUE(at16.extrapolated && at16.fitted);
  EXPECT_NEAR(at16.high / at16.mean, 1.05, 1e-9);  // residuals 0: the measured band
  const StepsEstimate at4 = fit.At(4);
  EXPECT_FALSE(at4.fitted);
  EXPECT_DOUBLE_EQ(at4.mean, 200);
  EXPECT_FALSE(fit.At(6).extrapolated);
}

}  // namespace
}  // namespace dtsim::sim
