// Parameter servers, asynchronous training, local SGD, stragglers: the
// properties issue 3 asks the simulator to hold.
#include <gtest/gtest.h>

#include "sim/simulator.h"
#include "sim/statistics.h"

namespace dtsim::sim {
namespace {

using config::Scenario;

Scenario Cluster(int nodes, int per_node, const char* link = "10GbE") {
  Scenario s;
  s.name = "test";
  s.cluster.nodes = nodes;
  s.cluster.devices_per_node = per_node;
  s.cluster.device = "V100-SXM2-32GB";
  s.cluster.intra_node_link = "nvlink2";
  s.cluster.network.link = link;
  s.workload.model.zoo_name = "resnet50";
  s.workload.batch_per_device = 32;
  s.workload.iterations = 4;
  return s;
}

Scenario Ps(int workers, int k = 0, bool async = false) {
  Scenario s = Cluster(workers, 1);
  s.parallelism.strategy = config::Strategy::kParameterServer;
  s.parallelism.sync = async ? config::SyncMode::kAsynchronous : config::SyncMode::kSynchronous;
  s.parallelism.parameter_server.replicas_to_aggregate = k;
  return s;
}

Scenario WithStalls(Scenario s, std::uint64_t seed) {
  // Heavy tail: 20% of worker steps stall for 400 ms.
  s.stragglers.noise = config::NoiseDistribution::kStall;
  s.stragglers.probability = 0.2;
  s.stragglers.delay_s = 0.4;
  s.seed = seed;
  s.workload.iterations = 12;
  return s;
}

TEST(ParameterServer, SyncStepIsBoundedByTheBusiestServerLink) {
  // One dedicated server on 10 GbE: every step n workers each push the whole
  // model (M bytes of fp32 gradients) into the server's link, so a step
  // takes at least n M / B however the rest overlaps.
  for (int n : {2, 4, 8}) {
    const Prediction p = Simulate(Ps(n));
    const double m = p.graph.Totals().params * 4.0;
    const double b = 10e9 / 8;
    EXPECT_GE(p.metrics.step_time_s, n * m / b) << n;
    // Pull and push are both n M over the server's link, one after the
    // other, plus compute: the bound is tight within a factor of 3.
    EXPECT_LE(p.metrics.step_time_s, 3 * (2 * n * m / b)) << n;
  }
}

TEST(ParameterServer, IncastGrowsWithWorkers) {
  // Workers share the server's link: on 10 GbE it is the bottleneck, and
  // each extra worker adds one model (M bytes) to pull and one to push
  // through it per step. The server answers every worker at once and the
  // answers share its uplink (Network::ReserveTransferGroup, as TCP flows
  // share a link), so every pull ends together and no push overlaps a
  // pull: a step is 2 n M / B plus compute, and t8 - t2 = 12 M / B.
  const Prediction p2 = Simulate(Ps(2));
  const Prediction p8 = Simulate(Ps(8));
  const double m = p2.graph.Totals().params * 4.0, b = 10e9 / 8;
  EXPECT_NEAR(p8.metrics.step_time_s - p2.metrics.step_time_s, 12 * m / b, 0.05 * 12 * m / b);
}

TEST(ParameterServer, BackupWorkersNeverHurtAndHelpUnderHeavyTails) {
  // k = n - 2 of n = 8: the two slowest updates are dropped each step.
  double total_all = 0, total_backup = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    Scenario s = WithStalls(Ps(8, 0), seed);
    s.cluster.network.link = "100GbE";
    const double all = Simulate(s).metrics.step_time_s;
    s.parallelism.parameter_server.replicas_to_aggregate = 6;
    const double backup = Simulate(s).metrics.step_time_s;
    EXPECT_LE(backup, all * (1 + 1e-9)) << "seed " << seed;
    total_all += all;
    total_backup += backup;
  }
  EXPECT_LT(total_backup, 0.9 * total_all);
}

TEST(ParameterServer, AsyncIsAtLeastAsFastAsSyncUnderStragglers) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    Scenario sync = WithStalls(Ps(4), seed);
    sync.cluster.network.link = "100GbE";
    Scenario async = sync;
    async.parallelism.sync = config::SyncMode::kAsynchronous;
    const Prediction ps = Simulate(sync), pa = Simulate(async);
    EXPECT_GE(pa.metrics.throughput_samples_per_s, ps.metrics.throughput_samples_per_s)
        << "seed " << seed;
    ASSERT_TRUE(pa.async.has_value());
    EXPECT_GT(pa.async->staleness.max, 0) << "several workers must interleave";
  }
}

TEST(ParameterServer, OneAsyncWorkerHasNoStaleness) {
  const Prediction p = Simulate(Ps(1, 0, true));
  ASSERT_TRUE(p.async.has_value());
  EXPECT_EQ(p.async->staleness.max, 0);
  EXPECT_GT(p.async->staleness.n, 0);
  EXPECT_GT(p.async->global_steps_per_s, 0);
}

Scenario LocalSgd(int h) {
  Scenario s = Cluster(4, 2, "25GbE");
  s.parallelism.strategy = config::Strategy::kLocalSgd;
  s.parallelism.averaging_period = h;
  return s;
}

TEST(LocalSgd, PeriodOneIsDataParallelism) {
  const Prediction data = Simulate(Cluster(4, 2, "25GbE"));
  const Prediction h1 = Simulate(LocalSgd(1));
  EXPECT_DOUBLE_EQ(h1.metrics.step_time_s, data.metrics.step_time_s);
}

TEST(LocalSgd, ThroughputRisesWithPeriodAndIsBoundedByCompute) {
  double last = 0;
  for (int h : {1, 2, 5, 10, 20, 50}) {
    const Prediction p = Simulate(LocalSgd(h), {.fast = true});
    const double bound = 8 * p.single_device_throughput_samples_per_s;
    EXPECT_GT(p.metrics.throughput_samples_per_s, last) << "H=" << h;
    EXPECT_LE(p.metrics.throughput_samples_per_s, bound * (1 + 1e-9)) << "H=" << h;
    last = p.metrics.throughput_samples_per_s;
  }
  // Averaging every 50 steps hides almost all communication.
  EXPECT_GT(last, 0.95 * 8 * Simulate(LocalSgd(50)).single_device_throughput_samples_per_s);
}

TEST(LocalSgd, NetworkBytesPerSampleFallAsOneOverH) {
  // Ring all-reduce of M bytes moves 2 (N - 1) M bytes in all; averaging
  // every H steps of N x batch samples: 2 (N - 1) M / (H N batch) per sample.
  for (int h : {1, 10}) {
    const Prediction p = Simulate(LocalSgd(h));
    const double m = p.graph.Totals().params * 4.0;
    const double expected = 2.0 * 7 * m / (h * 8.0 * 32);
    EXPECT_NEAR(p.network_bytes_per_sample, expected, 1e-9 * expected) << "H=" << h;
  }
}

TEST(FastPath, MatchesTheFullSimulation) {
  // The composed one-worker simulation gives the full simulation's figures.
  for (Scenario s : {Cluster(2, 4, "25GbE"), LocalSgd(1), LocalSgd(4), LocalSgd(7)}) {
    const Prediction full = Simulate(s);
    const Prediction fast = Simulate(s, {.fast = true});
    EXPECT_NEAR(fast.metrics.step_time_s, full.metrics.step_time_s, 1e-9)
        << config::StrategyName(s.parallelism.strategy) << " H=" << s.parallelism.averaging_period;
    EXPECT_NEAR(fast.metrics.breakdown.exposed_comm_s, full.metrics.breakdown.exposed_comm_s, 1e-9);
    EXPECT_NEAR(fast.network_bytes_per_sample, full.network_bytes_per_sample,
                1e-9 * full.network_bytes_per_sample);
  }
}

TEST(Stragglers, SlowDeviceSetsThePaceOfSynchronousTraining) {
  // The bucket effect: one worker 1.5x slower makes the whole step about
  // 1.5x longer in compute.
  Scenario s = Cluster(1, 4, "25GbE");
  const double base = Simulate(s).metrics.step_time_s;
  s.stragglers.slow_devices.push_back({{2}, 1.5});
  const Prediction slow = Simulate(s);
  EXPECT_GT(slow.metrics.step_time_s, 1.4 * base);
  EXPECT_LE(slow.metrics.step_time_s, 1.5 * base * (1 + 1e-6));
}

TEST(Stragglers, ConfidenceIntervalShrinksWithRepeats) {
  auto ci = [](int repeats) {
    std::vector<double> steps;
    for (int i = 0; i < repeats; ++i) {
      Scenario s = Cluster(1, 4, "100GbE");
      s.workload.model.zoo_name = "cifar10-cnn";
      s.stragglers.noise = config::NoiseDistribution::kLognormal;
      s.stragglers.sigma = 0.3;
      s.seed = static_cast<std::uint64_t>(i + 1);
      steps.push_back(Simulate(s).metrics.step_time_s);
    }
    return Summarize(steps).ci95_half_width;
  };
  EXPECT_LT(ci(32), ci(4));
}

}  // namespace
}  // namespace dtsim::sim
