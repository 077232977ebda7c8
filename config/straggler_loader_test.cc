// The `stragglers:` and `failures:` sections (config/straggler_loader.cc,
// docs/scenario.md).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "config/loader_test_util.h"
#include "config/scenario.h"

namespace dtsim::config {
namespace {

// ------------------------------------------------------------- stragglers

TEST(StragglerLoaderTest, AbsentSectionsAreEmpty) {
  const Scenario s = ParseScenario("name: x\n", "test.yaml");
  EXPECT_TRUE(s.stragglers.Empty());
  EXPECT_FALSE(s.failures.Enabled());
}

TEST(StragglerLoaderTest, FullSection) {
  const Scenario s = ParseScenario(R"(cluster: {nodes: 2, devices_per_node: 4}
stragglers:
  slow_devices:
    - {ranks: [3], factor: 1.5}
    - {ranks: [5, 6], factor: 2}
  noise: {distribution: lognormal, sigma: 0.2}
  interference: {period: 10s, duration: 1s, slowdown: 2, ranks: [0, 1]}
)",
                                   "test.yaml");
  const StragglerConfig& c = s.stragglers;
  ASSERT_EQ(c.slow_devices.size(), 2u);
  EXPECT_EQ(c.slow_devices[0].ranks, std::vector<int>{3});
  EXPECT_DOUBLE_EQ(c.slow_devices[0].factor, 1.5);
  EXPECT_EQ(c.slow_devices[1].ranks, (std::vector<int>{5, 6}));
  EXPECT_DOUBLE_EQ(c.slow_devices[1].factor, 2.0);
  EXPECT_EQ(c.noise, NoiseDistribution::kLognormal);
  EXPECT_DOUBLE_EQ(c.sigma, 0.2);
  EXPECT_DOUBLE_EQ(c.interference_period_s, 10.0);
  EXPECT_DOUBLE_EQ(c.interference_duration_s, 1.0);
  EXPECT_DOUBLE_EQ(c.interference_slowdown, 2.0);
  EXPECT_EQ(c.interference_ranks, (std::vector<int>{0, 1}));
  EXPECT_FALSE(c.Empty());
}

TEST(StragglerLoaderTest, NoiseDistributions) {
  StragglerConfig c =
      ParseScenario("stragglers:\n  noise: {distribution: exponential, mean: 5ms}\n", "t.yaml")
          .stragglers;
  EXPECT_EQ(c.noise, NoiseDistribution::kExponential);
  EXPECT_DOUBLE_EQ(c.mean_s, 5e-3);

  c = ParseScenario(
          "stragglers:\n  noise: {distribution: stall, probability: 0.02, delay: 300ms}\n",
          "t.yaml")
          .stragglers;
  EXPECT_EQ(c.noise, NoiseDistribution::kStall);
  EXPECT_DOUBLE_EQ(c.probability, 0.02);
  EXPECT_DOUBLE_EQ(c.delay_s, 0.3);

  // Names ignore case, like every enum value.
  c = ParseScenario("stragglers:\n  noise: {distribution: None}\n", "t.yaml").stragglers;
  EXPECT_EQ(c.noise, NoiseDistribution::kNone);
  EXPECT_TRUE(c.Empty());
}

TEST(StragglerLoaderTest, InterferenceRanksDefaultToAll) {
  const StragglerConfig c =
      ParseScenario("stragglers:\n  interference: {period: 1min, duration: 0s, slowdown: 1}\n",
                    "t.yaml")
          .stragglers;
  EXPECT_DOUBLE_EQ(c.interference_period_s, 60.0);
  EXPECT_DOUBLE_EQ(c.interference_duration_s, 0.0);
  EXPECT_TRUE(c.interference_ranks.empty());
}

TEST(StragglerLoaderTest, UnknownKeys) {
  EXPECT_TRUE(FailsAt("stragglers:\n  slow_device: []\n", 2,
                      "unknown key 'slow_device' in 'stragglers'\n  hint: did you mean "
                      "'slow_devices'?"));
  EXPECT_TRUE(FailsAt("stragglers:\n  slow_devices:\n    - {ranks: [1], factor: 2, why: old}\n",
                      3, "unknown key 'why' in 'stragglers.slow_devices[0]'"));
  EXPECT_TRUE(FailsAt("stragglers:\n  interference: {period: 1s, duration: 1s, slowdown: 2, "
                      "rank: [1]}\n",
                      2, "did you mean 'ranks'?"));
  EXPECT_TRUE(FailsAt("failures:\n  mtbf: 1h\n  checkpoint_every: 1h\n", 3,
                      "unknown key 'checkpoint_every' in 'failures'"));
}

TEST(StragglerLoaderTest, NoiseKeysDependOnTheDistribution) {
  // sigma belongs to lognormal, not to exponential.
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: exponential, sigma: 0.2}\n", 2,
                      "unknown key 'sigma' in 'stragglers.noise'\n  hint: allowed keys: "
                      "distribution, mean"));
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: gamma, k: 2}\n", 2,
                      "unknown noise distribution 'gamma'\n  hint: accepted values: none, "
                      "lognormal, exponential, stall"));
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {sigma: 0.2}\n", 2,
                      "stragglers.noise: missing required key 'distribution'"));
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: lognormal\n", 2, "expected a mapping"));
}

TEST(StragglerLoaderTest, MissingParameters) {
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: lognormal}\n", 2,
                      "missing required key 'sigma'"));
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: stall, probability: 0.1}\n", 2,
                      "missing required key 'delay'"));
  EXPECT_TRUE(FailsAt("stragglers:\n  slow_devices: [{ranks: [1]}]\n", 2,
                      "stragglers.slow_devices[0]: missing required key 'factor'"));
  EXPECT_TRUE(FailsAt("stragglers:\n  interference: {period: 10s, slowdown: 2}\n", 2,
                      "missing required key 'duration'"));
}

TEST(StragglerLoaderTest, TimesNeedUnits) {
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: exponential, mean: 5}\n", 2,
                      "stragglers.noise.mean: the time '5' has no unit"));
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: stall, probability: 0.1, "
                      "delay: 300}\n",
                      2, "the time '300' has no unit"));
  EXPECT_TRUE(FailsAt("stragglers:\n  interference:\n    period: 10\n    duration: 1s\n"
                      "    slowdown: 2\n",
                      3, "stragglers.interference.period: the time '10' has no unit"));
  EXPECT_TRUE(FailsAt("failures:\n  mtbf: 20000\n", 2, "failures.mtbf: the time '20000' has no "
                                                       "unit"));
  EXPECT_TRUE(FailsAt("failures:\n  mtbf: 1h\n  restart_cost: 5\n", 3, "has no unit"));
}

TEST(StragglerLoaderTest, RangesAreChecked) {
  EXPECT_TRUE(FailsAt("stragglers:\n  slow_devices:\n    - {ranks: [3], factor: 0.5}\n", 3,
                      "stragglers.slow_devices[0].factor: expected a number >= 1, got '0.5'"));
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: lognormal, sigma: -0.1}\n", 2,
                      "stragglers.noise.sigma: expected a sigma >= 0, got '-0.1'"));
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: stall, probability: 1.5, "
                      "delay: 1s}\n",
                      2, "expected a probability in [0, 1], got '1.5'"));
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: exponential, mean: -5ms}\n", 2,
                      "negative time"));
  EXPECT_TRUE(FailsAt("stragglers:\n  interference: {period: 0s, duration: 0s, slowdown: 2}\n",
                      2, "stragglers.interference.period: expected a time > 0"));
  EXPECT_TRUE(FailsAt("stragglers:\n  interference:\n    period: 1s\n    duration: 2s\n"
                      "    slowdown: 2\n",
                      4, "the duration '2s' is longer than the period '1s'"));
  EXPECT_TRUE(FailsAt("stragglers:\n  interference: {period: 1s, duration: 1s, slowdown: 0.9}\n",
                      2, "stragglers.interference.slowdown: expected a number >= 1"));
}

// Issue 10 item 18: extreme straggler values ended as exit 1 "internal
// error" (the clock overflowed); they are refused at the value.
TEST(StragglerLoaderTest, ExtremeValuesAreRefused) {
  EXPECT_TRUE(FailsAt("stragglers:\n  slow_devices: [{ranks: [0], factor: 1e300}]\n", 2,
                      "factor: expected a number <= 1000, got '1e300'"));
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: lognormal, sigma: 40}\n", 2,
                      "stragglers.noise.sigma: expected a sigma <= 2, got '40'"));
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: exponential, mean: 1e300s}\n", 2,
                      "stragglers.noise.mean: the time '1e300s' is more than"));
  EXPECT_TRUE(FailsAt("stragglers:\n  noise: {distribution: stall, probability: 1, "
                      "delay: 1e20h}\n",
                      2, "stragglers.noise.delay: the time '1e20h' is more than"));
  EXPECT_TRUE(FailsAt("stragglers:\n  interference: {period: 1s, duration: 1s, slowdown: 1e300}\n",
                      2, "slowdown: expected a number <= 1000"));
  EXPECT_TRUE(FailsAt("stragglers:\n  interference: {period: 1e300s, duration: 1s, slowdown: 2}\n",
                      2, "stragglers.interference.period: the time '1e300s' is more than"));
  // The bounds themselves load.
  EXPECT_NO_THROW(ParseScenario(
      "stragglers:\n  slow_devices: [{ranks: [0], factor: 1000}]\n"
      "  noise: {distribution: lognormal, sigma: 2}\n",
      "t.yaml"));
}

TEST(StragglerLoaderTest, BadRanks) {
  EXPECT_TRUE(FailsAt("stragglers:\n  slow_devices:\n    - {ranks: [], factor: 2}\n", 3,
                      "expected a non-empty list of ranks"));
  EXPECT_TRUE(FailsAt("stragglers:\n  slow_devices:\n    - {ranks: [-1], factor: 2}\n", 3,
                      "stragglers.slow_devices[0].ranks[0]: expected an integer >= 0"));
  EXPECT_TRUE(FailsAt("stragglers:\n  slow_devices:\n    - {ranks: 3, factor: 2}\n", 3,
                      "expected a non-empty list of ranks, got '3'"));
  // A rank in two entries would have two factors.
  EXPECT_TRUE(FailsAt(R"(stragglers:
  slow_devices:
    - {ranks: [1, 2], factor: 2}
    - {ranks: [2], factor: 3}
)",
                      4, "stragglers.slow_devices[1].ranks[0]: rank 2 is listed twice"));
  EXPECT_TRUE(FailsAt("stragglers:\n  interference: {period: 1s, duration: 1s, slowdown: 2, "
                      "ranks: [0, 0]}\n",
                      2, "rank 0 is listed twice"));
}

// --------------------------------------------------------------- failures

TEST(FailureLoaderTest, FullSection) {
  const FailureConfig f = ParseScenario(R"(failures:
  mtbf: 20000h
  scope: node
  checkpoint_interval: 1h
  checkpoint_cost: 1min
  restart_cost: 5min
  horizon: 720h
)",
                                        "test.yaml")
                              .failures;
  EXPECT_TRUE(f.Enabled());
  EXPECT_DOUBLE_EQ(f.mtbf_s, 20000 * 3600.0);
  EXPECT_EQ(f.scope, FailureScope::kNode);
  EXPECT_DOUBLE_EQ(f.checkpoint_interval_s, 3600.0);
  EXPECT_DOUBLE_EQ(f.checkpoint_cost_s, 60.0);
  EXPECT_DOUBLE_EQ(f.restart_cost_s, 300.0);
  EXPECT_DOUBLE_EQ(f.horizon_s, 720 * 3600.0);
}

TEST(FailureLoaderTest, DefaultsBesideMtbf) {
  const FailureConfig f = ParseScenario("failures: {mtbf: 5000h}\n", "test.yaml").failures;
  const FailureConfig defaults;
  EXPECT_DOUBLE_EQ(f.mtbf_s, 5000 * 3600.0);
  EXPECT_EQ(f.scope, FailureScope::kDevice);
  EXPECT_EQ(f.checkpoint_interval_s, defaults.checkpoint_interval_s);
  EXPECT_EQ(f.checkpoint_cost_s, defaults.checkpoint_cost_s);
  EXPECT_EQ(f.restart_cost_s, defaults.restart_cost_s);
  EXPECT_EQ(f.horizon_s, defaults.horizon_s);
}

TEST(FailureLoaderTest, BadValues) {
  // A failures section without an MTBF would simulate nothing.
  EXPECT_TRUE(FailsAt("failures:\n  scope: device\n", 2,
                      "failures: missing required key 'mtbf'"));
  EXPECT_TRUE(FailsAt("failures:\n  mtbf: 0h\n", 2, "failures.mtbf: expected a time > 0"));
  EXPECT_TRUE(FailsAt("failures:\n  mtbf: 1h\n  scope: rack\n", 3,
                      "unknown failure scope 'rack'\n  hint: accepted values: device, node"));
  EXPECT_TRUE(FailsAt("failures:\n  mtbf: 1h\n  checkpoint_interval: 0s\n", 3,
                      "failures.checkpoint_interval: expected a time > 0"));
  EXPECT_TRUE(FailsAt("failures:\n  mtbf: 1h\n  horizon: 0s\n", 3,
                      "failures.horizon: expected a time > 0"));
  EXPECT_TRUE(FailsAt("failures:\n  mtbf: 1h\n  checkpoint_cost: -1s\n", 3, "negative time"));
  EXPECT_TRUE(FailsAt("failures: 20000h\n", 1, "failures: expected a mapping"));
}

// The examples of docs/scenario.md's `stragglers:` and `failures:` sections
// load (every yaml block that starts with one of these keys).
TEST(StragglerLoaderTest, DocumentationExamplesLoad) {
  std::ifstream in("docs/scenario.md");
  ASSERT_TRUE(in) << "run from the repository root";
  std::string line, block;
  bool inside = false;
  int loaded = 0;
  while (std::getline(in, line)) {
    if (!inside && line == "```yaml") {
      inside = true;
      block.clear();
    } else if (inside && line == "```") {
      inside = false;
      if (block.rfind("stragglers:", 0) == 0 || block.rfind("failures:", 0) == 0) {
        SCOPED_TRACE(block);
        // The examples name ranks up to 7: give them an 8-GPU cluster.
        const Scenario s =
            ParseScenario("cluster: {nodes: 2, devices_per_node: 4}\n" + block, "docs/scenario.md");
        EXPECT_TRUE(!s.stragglers.Empty() || s.failures.Enabled());
        ++loaded;
      }
    } else if (inside) {
      block += line + "\n";
    }
  }
  EXPECT_EQ(loaded, 2);
}

TEST(StragglerLoaderTest, RanksMustBeInTheCluster) {
  try {
    ParseScenario("cluster: {nodes: 2}\nstragglers:\n  slow_devices: [{ranks: [2], factor: 2}]\n",
                  "test.yaml");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().line, 3);  // the stragglers section's value
    EXPECT_NE(e.message().find("rank 2 is not in the cluster (ranks 0-1)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dtsim::config
