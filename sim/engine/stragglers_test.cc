#include "sim/engine/stragglers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace dtsim::sim {
namespace {

using config::NoiseDistribution;
using config::StragglerConfig;

constexpr SimTime kMs = 1'000'000;  // ns
constexpr SimTime kS = kNsPerSecond;

StragglerConfig Lognormal(double sigma) {
  StragglerConfig c;
  c.noise = NoiseDistribution::kLognormal;
  c.sigma = sigma;
  return c;
}

StragglerConfig Exponential(double mean_s) {
  StragglerConfig c;
  c.noise = NoiseDistribution::kExponential;
  c.mean_s = mean_s;
  return c;
}

StragglerConfig Stall(double probability, double delay_s) {
  StragglerConfig c;
  c.noise = NoiseDistribution::kStall;
  c.probability = probability;
  c.delay_s = delay_s;
  return c;
}

// Interference every `period_s` for `duration_s`, `slowdown` x slower.
StragglerConfig Interference(double period_s, double duration_s, double slowdown,
                             std::vector<int> ranks = {}) {
  StragglerConfig c;
  c.interference_period_s = period_s;
  c.interference_duration_s = duration_s;
  c.interference_slowdown = slowdown;
  c.interference_ranks = std::move(ranks);
  return c;
}

TEST(StragglerModelTest, TrivialModelChangesNothing) {
  for (const StragglerConfig& c :
       {StragglerConfig{}, Lognormal(0), Exponential(0), Stall(0, 1), Stall(0.5, 0),
        Interference(10, 0, 2), Interference(10, 1, 1)}) {
    const StragglerModel m(c, 1, 4);
    EXPECT_TRUE(m.Trivial());
    EXPECT_FALSE(m.HasInterference());
    for (int rank = 0; rank < 4; ++rank) {
      for (int it = 0; it < 10; ++it) {
        EXPECT_EQ(m.ComputeFactor(rank, it), 1.0);
        EXPECT_EQ(m.ExtraDelayNs(rank, it), 0);
        EXPECT_EQ(m.FinishTime(rank, 123 * kMs + it, 7 * kMs), 130 * kMs + it);
        EXPECT_EQ(m.TaskEnd(rank, it, 5, 1000), 1005);
      }
    }
  }
  EXPECT_FALSE(StragglerModel(Lognormal(0.1), 1, 4).Trivial());
  EXPECT_FALSE(StragglerModel(Interference(10, 1, 2), 1, 4).Trivial());
}

TEST(StragglerModelTest, SlowDevicesHaveFixedFactors) {
  StragglerConfig c;
  c.slow_devices = {{{3}, 1.5}, {{0, 2}, 2.0}};
  const StragglerModel m(c, 1, 4);
  EXPECT_FALSE(m.Trivial());
  for (int it = 0; it < 5; ++it) {
    EXPECT_EQ(m.ComputeFactor(0, it), 2.0);
    EXPECT_EQ(m.ComputeFactor(1, it), 1.0);
    EXPECT_EQ(m.ComputeFactor(2, it), 2.0);
    EXPECT_EQ(m.ComputeFactor(3, it), 1.5);
    EXPECT_EQ(m.ExtraDelayNs(3, it), 0);
  }
  // 1000 ns of work at 1.5x, no interference: ends 1500 ns after its start.
  EXPECT_EQ(m.ScaledWorkNs(3, 0, 1000), 1500);
  EXPECT_EQ(m.TaskEnd(3, 0, 40, 1000), 1540);
}

TEST(StragglerModelTest, RanksOutsideTheClusterAreUserErrors) {
  StragglerConfig c;
  c.slow_devices = {{{8}, 1.5}};
  EXPECT_THROW(StragglerModel(c, 1, 8), UserError);
  EXPECT_EQ(StragglerRanksProblem(c, 8),
            "stragglers.slow_devices: rank 8 is not in the cluster (ranks 0-7)");
  EXPECT_EQ(StragglerRanksProblem(c, 9), "");
  EXPECT_THROW(StragglerModel(Interference(1, 0.5, 2, {0, 4}), 1, 4), UserError);
}

TEST(StragglerModelTest, DrawsAreDeterministicAndIndependentOfCallOrder) {
  StragglerConfig c = Lognormal(0.3);
  c.slow_devices = {{{1}, 1.25}};
  const StragglerModel a(c, 42, 8), b(c, 42, 8), other_seed(c, 43, 8);
  const StragglerModel ea(Exponential(0.01), 42, 8), eb(Exponential(0.01), 42, 8);
  // a forward, b backward: same values.
  std::vector<double> forward;
  std::vector<SimTime> forward_delay;
  for (int rank = 0; rank < 8; ++rank) {
    for (int it = 0; it < 50; ++it) {
      forward.push_back(a.ComputeFactor(rank, it));
      forward_delay.push_back(ea.ExtraDelayNs(rank, it));
    }
  }
  int differ = 0;
  for (int rank = 7; rank >= 0; --rank) {
    for (int it = 49; it >= 0; --it) {
      const std::size_t i = static_cast<std::size_t>(rank * 50 + it);
      EXPECT_EQ(b.ComputeFactor(rank, it), forward[i]);
      EXPECT_EQ(eb.ExtraDelayNs(rank, it), forward_delay[i]);
      // Asking again, in any order, gives the same value too.
      EXPECT_EQ(a.ComputeFactor(rank, it), forward[i]);
      if (other_seed.ComputeFactor(rank, it) != forward[i]) ++differ;
    }
  }
  EXPECT_EQ(differ, 400);  // another seed, other draws
  // Every compute task of one rank-iteration shares the factor; iterations differ.
  EXPECT_NE(a.ComputeFactor(0, 0), a.ComputeFactor(0, 1));
  EXPECT_NE(a.ComputeFactor(0, 0), a.ComputeFactor(1, 0));
}

// Sample means against the closed forms, within 4 standard errors
// (a false alarm once in ~16000 runs; the draws are fixed by the seed anyway).
constexpr int kRanks = 100;
constexpr int kIterations = 1000;  // 10^5 draws

TEST(StragglerModelTest, LognormalMeanMatchesClosedForm) {
  // z ~ N(0, 1), F = exp(sigma z):
  //   E[F] = exp(sigma^2 / 2),  Var[F] = (exp(sigma^2) - 1) exp(sigma^2)
  // sigma = 0.2: E = 1.020201, sd = 0.206098, SE over 10^5 draws = 6.52e-4.
  const double sigma = 0.2;
  const StragglerModel m(Lognormal(sigma), 7, kRanks);
  double sum = 0, sum_log = 0, sum_log2 = 0;
  for (int rank = 0; rank < kRanks; ++rank) {
    for (int it = 0; it < kIterations; ++it) {
      const double f = m.ComputeFactor(rank, it);
      sum += f;
      sum_log += std::log(f);
      sum_log2 += std::log(f) * std::log(f);
    }
  }
  const double n = double{kRanks} * kIterations;
  const double mean = std::exp(sigma * sigma / 2);
  const double sd = std::sqrt((std::exp(sigma * sigma) - 1) * std::exp(sigma * sigma));
  EXPECT_NEAR(sum / n, mean, 4 * sd / std::sqrt(n));
  // ln F = sigma z: mean 0 (SE sigma / sqrt(n)) and standard deviation sigma
  // (SE of the variance sigma^2 sqrt(2 / n) for a normal sample).
  EXPECT_NEAR(sum_log / n, 0.0, 4 * sigma / std::sqrt(n));
  EXPECT_NEAR(sum_log2 / n, sigma * sigma, 4 * sigma * sigma * std::sqrt(2 / n));
}

TEST(StragglerModelTest, LognormalMultipliesTheFixedFactor) {
  StragglerConfig c = Lognormal(0.1);
  c.slow_devices = {{{0}, 1.5}};
  const StragglerModel slow(c, 3, 2), plain(Lognormal(0.1), 3, 2);
  for (int it = 0; it < 100; ++it) {
    EXPECT_DOUBLE_EQ(slow.ComputeFactor(0, it), 1.5 * plain.ComputeFactor(0, it));
    EXPECT_DOUBLE_EQ(slow.ComputeFactor(1, it), plain.ComputeFactor(1, it));
  }
}

TEST(StragglerModelTest, ExponentialMeanMatchesClosedForm) {
  // Exp(mean): E = mean, sd = mean. mean = 5 ms: SE over 10^5 draws = 15.8 us.
  const double mean_s = 5e-3;
  const StragglerModel m(Exponential(mean_s), 11, kRanks);
  double sum = 0;
  SimTime smallest = 1 * kS;
  for (int rank = 0; rank < kRanks; ++rank) {
    for (int it = 0; it < kIterations; ++it) {
      const SimTime d = m.ExtraDelayNs(rank, it);
      sum += NsToSeconds(d);
      smallest = std::min(smallest, d);
    }
  }
  const double n = double{kRanks} * kIterations;
  EXPECT_NEAR(sum / n, mean_s, 4 * mean_s / std::sqrt(n));
  EXPECT_GE(smallest, 0);
  EXPECT_LT(smallest, 1 * kMs);  // P(all 10^5 draws > 1 ms) = exp(-2e4)
  for (int it = 0; it < 10; ++it) EXPECT_EQ(m.ComputeFactor(0, it), 1.0);
}

TEST(StragglerModelTest, StallFrequencyMatchesProbability) {
  // Bernoulli(p): the count of stalls over n steps has mean n p and
  // sd sqrt(n p (1 - p)); p = 0.02, n = 10^5: 2000 +- 44.3.
  const double p = 0.02;
  const StragglerModel m(Stall(p, 0.3), 5, kRanks);
  int stalls = 0;
  for (int rank = 0; rank < kRanks; ++rank) {
    for (int it = 0; it < kIterations; ++it) {
      const SimTime d = m.ExtraDelayNs(rank, it);
      if (d != 0) {
        EXPECT_EQ(d, 300 * kMs);
        ++stalls;
      }
    }
  }
  const double n = double{kRanks} * kIterations;
  EXPECT_NEAR(stalls, n * p, 4 * std::sqrt(n * p * (1 - p)));
  // p = 1 stalls every step.
  const StragglerModel always(Stall(1, 0.3), 5, 2);
  for (int it = 0; it < 100; ++it) EXPECT_EQ(always.ExtraDelayNs(1, it), 300 * kMs);
}

// Windows [10k, 10k + 1) s at half speed (P = 10 s, D = 1 s, s = 2). One whole
// period does D / s + (P - D) = 9.5 s of work.
class InterferenceTest : public ::testing::Test {
 protected:
  StragglerModel model_{Interference(10, 1, 2, {0, 2}), 1, 4};
};

TEST_F(InterferenceTest, TaskFullyInsideAWindow) {
  // 0.3 s of work from 20.2 s, all inside [20, 21): 0.6 s of wall time.
  EXPECT_EQ(model_.FinishTime(0, 20'200 * kMs, 300 * kMs), 20'800 * kMs);
  // Ending exactly at the window's end: 0.4 s of work from 20.2 s takes 0.8 s.
  EXPECT_EQ(model_.FinishTime(0, 20'200 * kMs, 400 * kMs), 21 * kS);
}

TEST_F(InterferenceTest, TaskStraddlingAWindowEdge) {
  // From 20.5 s, 1 s of work: 0.5 s of window do 0.25 s, the remaining
  // 0.75 s run at full speed from 21 s: ends at 21.75 s.
  EXPECT_EQ(model_.FinishTime(0, 20'500 * kMs, 1 * kS), 21'750 * kMs);
  // From 9.5 s, 1 s of work: 0.5 s at full speed, then 0.5 s of work in the
  // window from 10 s takes 1 s: ends at 11 s.
  EXPECT_EQ(model_.FinishTime(2, 9'500 * kMs, 1 * kS), 11 * kS);
  // Outside any window: full speed.
  EXPECT_EQ(model_.FinishTime(0, 12 * kS, 3 * kS), 15 * kS);
}

TEST_F(InterferenceTest, TaskSpanningSeveralWindows) {
  // From 5 s, 30 s of work:
  //   [5, 10)   5 s            (25 left)
  //   [10, 20)  0.5 + 9 = 9.5  (15.5 left)
  //   [20, 30)  9.5            (6 left)
  //   [30, 31)  0.5            (5.5 left), then full speed to 36.5 s.
  // Three windows cost 1 s of wall time for 0.5 s of work each: 31.5 s in all.
  EXPECT_EQ(model_.FinishTime(0, 5 * kS, 30 * kS), 36'500 * kMs);
  // Exactly whole periods from a period's start: 3 x 9.5 s of work from 0 s.
  EXPECT_EQ(model_.FinishTime(0, 0, 28'500 * kMs), 30 * kS);
  // A long task: 1000 periods and a bit, skipped at once.
  EXPECT_EQ(model_.FinishTime(0, 0, 9'500 * kS + 250 * kMs), 10'000 * kS + 500 * kMs);
}

TEST_F(InterferenceTest, OnlyTheListedRanks) {
  EXPECT_TRUE(model_.HasInterference());
  EXPECT_FALSE(model_.Trivial());
  EXPECT_EQ(model_.FinishTime(1, 20'200 * kMs, 300 * kMs), 20'500 * kMs);
  EXPECT_EQ(model_.FinishTime(3, 5 * kS, 30 * kS), 35 * kS);
  EXPECT_EQ(model_.ComputeFactor(0, 0), 1.0);  // interference is not a factor
}

TEST(StragglerModelTest, WindowAsLongAsThePeriodIsAConstantSlowdown) {
  const StragglerModel m(Interference(1, 1, 3), 1, 1);
  EXPECT_EQ(m.FinishTime(0, 0, 2 * kS), 6 * kS);
  EXPECT_EQ(m.FinishTime(0, 1'500 * kMs, 1'000 * kMs), 4'500 * kMs);
}

// The reference: advance one nanosecond at a time, doing 1 ns of work outside
// windows and 1/s inside, until `work` is done.
SimTime ReferenceFinish(SimTime period, SimTime window, double s, SimTime start, SimTime work) {
  double done = 0;
  SimTime t = start;
  while (done < static_cast<double>(work) - 1e-9) {
    done += t % period < window ? 1.0 / s : 1.0;
    ++t;
  }
  return t;
}

TEST(StragglerModelTest, FinishTimeMatchesAStepByStepReference) {
  // P = 100 ns, D = 30 ns, s = 2.5: many windows per task.
  const StragglerModel m(Interference(100e-9, 30e-9, 2.5), 1, 1);
  for (SimTime start = 0; start < 250; start += 7) {
    for (SimTime work = 0; work < 700; work += 13) {
      // The reference ends on whole nanoseconds; FinishTime rounds.
      EXPECT_NEAR(m.FinishTime(0, start, work), ReferenceFinish(100, 30, 2.5, start, work), 1)
          << "start " << start << " work " << work;
    }
  }
}

}  // namespace
}  // namespace dtsim::sim
