// Whole scenarios on both engines (Simulate with engine analytic and
// simgrid): stragglers and parameter servers, which the SimGrid engine maps
// onto host speeds, speed profiles and flows (sim/engine/simgrid_engine.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

using config::Scenario;

// ResNet-50 data parallel, one V100 per node on 25 GbE: the bucket
// all-reduces run one after another on the comm streams, so no two flows
// share a link and the engines differ only where stragglers are replayed.
Scenario DataParallel(int nodes) {
  Scenario s;
  s.name = "test";
  s.cluster.nodes = nodes;
  s.cluster.devices_per_node = 1;
  s.cluster.device = "V100-SXM2-32GB";
  s.cluster.intra_node_link = "nvlink2";
  s.cluster.network.link = "25GbE";
  s.workload.model.zoo_name = "resnet50";
  s.workload.batch_per_device = 32;
  s.workload.iterations = 4;
  return s;
}

// Synchronous parameter server: `workers` nodes, one server on a node of its
// own (the default placement) on 10 GbE.
Scenario ParameterServer(int workers) {
  Scenario s = DataParallel(workers);
  s.cluster.network.link = "10GbE";
  s.parallelism.strategy = config::Strategy::kParameterServer;
  return s;
}

struct BothEngines {
  Prediction analytic;
  Prediction simgrid;
  double step_diff = 0;  // |simgrid - analytic| / analytic step time
};

BothEngines RunBoth(Scenario s, const std::string& label) {
  BothEngines r;
  s.engine = "analytic";
  r.analytic = Simulate(s);
  s.engine = "simgrid";
  r.simgrid = Simulate(s);
  const double a = r.analytic.metrics.step_time_s, g = r.simgrid.metrics.step_time_s;
  r.step_diff = std::abs(g - a) / a;
  std::printf("%s: step analytic %.4f ms, simgrid %.4f ms (%+.3f%%)\n", label.c_str(), 1e3 * a,
              1e3 * g, 100 * (g - a) / a);
  return r;
}

TEST(SimgridScenarios, FixedStragglerIsHostSpeed) {
  // Rank 1 of 4 is twice as slow. Every all-reduce waits for it, so a step
  // lasts at least its compute, 2 x the one-device step T1 = batch /
  // single-device throughput; both engines replay the same slowdown.
  Scenario s = DataParallel(4);
  s.stragglers.slow_devices = {{{1}, 2.0}};
  const BothEngines r = RunBoth(s, "2x straggler on rank 1 of 4");
  EXPECT_LT(r.step_diff, 0.01);
  const double t1 = 32 / r.analytic.scaling.single_device_throughput_samples_per_s;
  EXPECT_GE(r.simgrid.metrics.step_time_s, 2 * t1 * (1 - 1e-9));
}

TEST(SimgridScenarios, InterferenceWindowsAreASpeedProfile) {
  // Rank 2 runs 3x slower during 10 ms of every 50 ms (a window every few
  // steps falls in its forward or backward pass): the analytic engine walks
  // the windows (StragglerModel::FinishTime), SimGrid changes the host's
  // speed at each window's edges.
  Scenario s = DataParallel(4);
  s.stragglers.interference_period_s = 0.05;
  s.stragglers.interference_duration_s = 0.01;
  s.stragglers.interference_slowdown = 3;
  s.stragglers.interference_ranks = {2};
  const BothEngines r = RunBoth(s, "interference on rank 2 of 4");
  EXPECT_LT(r.step_diff, 0.01);
  // The windows cost time: the step is longer than without them.
  Scenario calm = DataParallel(4);
  EXPECT_GT(r.analytic.metrics.step_time_s, Simulate(calm).metrics.step_time_s);
}

TEST(SimgridScenarios, NoiseIsDrawnAsTheAnalyticEngineDrawsIt) {
  // Counter-based draws per (seed, rank, iteration): both engines see the
  // same lognormal factors and the same delays, so they agree as without
  // noise.
  Scenario lognormal = DataParallel(4);
  lognormal.stragglers.noise = config::NoiseDistribution::kLognormal;
  lognormal.stragglers.sigma = 0.3;
  lognormal.stragglers.slow_devices = {{{0}, 1.5}};  // with a fixed factor on top
  Scenario exponential = DataParallel(4);
  exponential.stragglers.noise = config::NoiseDistribution::kExponential;
  exponential.stragglers.mean_s = 0.02;
  Scenario stall = DataParallel(4);
  stall.stragglers.noise = config::NoiseDistribution::kStall;
  stall.stragglers.probability = 0.3;
  stall.stragglers.delay_s = 0.05;
  for (const auto& [s, label] : {std::pair{lognormal, "lognormal"}, {exponential, "exponential"},
                                 {stall, "stall"}}) {
    const BothEngines r = RunBoth(s, label);
    EXPECT_LT(r.step_diff, 0.01) << label;
  }
}

TEST(SimgridScenarios, OneWorkerOneServerAgree) {
  // One worker and one dedicated server: pull, compute, push, apply, one
  // transfer at a time, so link reservation (analytic) and flow sharing
  // (SimGrid) price the same alpha-beta transfers; synchronous and
  // asynchronous (each push applied on its own) alike.
  Scenario async = ParameterServer(1);
  async.parallelism.sync = config::SyncMode::kAsynchronous;
  for (const auto& [s, label] : {std::pair{ParameterServer(1), "parameter server, 1 worker"},
                                 {async, "asynchronous parameter server, 1 worker"}}) {
    const BothEngines r = RunBoth(s, label);
    EXPECT_LT(r.step_diff, 0.01) << label;
  }
}

TEST(SimgridScenarios, IncastIntoOneServerLinkAgreesAcrossEngines) {
  // Eight workers, one server: every step the 8 pulls leave through the
  // server's NIC and the 8 pushes come in through it, each M bytes (the
  // model's fp32 gradients, ~102 MB) at B = 1.25 GB/s, M / B ~ 82 ms.
  //   SimGrid (max-min sharing): the 8 pulls share the link and all arrive
  //     at 8 M / B; the workers compute together and their pushes share the
  //     link for another 8 M / B. Step ~ 16 M / B + compute.
  //   analytic: the server sends its 8 answers at the same instant, so they
  //     share its link too (Network::ReserveTransferGroup) and arrive at
  //     8 M / B; the pushes, from 8 senders, queue first come first served
  //     on the other direction and the last arrives 8 M / B later. The same
  //     16 M / B + compute. (Before the answers shared the link, they were
  //     served one after another, worker i's compute and push overlapped
  //     the later pulls, and the analytic step was 7 M / B shorter.)
  const BothEngines r = RunBoth(ParameterServer(8), "parameter server, 8 workers (incast)");
  const double m = r.analytic.graph.Totals().params * 4.0;
  const double b = 10e9 / 8;
  const double a = r.analytic.metrics.step_time_s, g = r.simgrid.metrics.step_time_s;
  EXPECT_NEAR(a, g, 0.01 * g);
  EXPECT_GE(a, 16 * m / b);
  EXPECT_GE(g, 16 * m / b);
}

TEST(SimgridScenarios, MixedClusterAgreesAcrossEngines) {
  // Two node groups (sim/node_groups.h): 2 V100 nodes on one 25 GbE NIC and
  // 2 A100 nodes on two, one device each. Each ring step sends one chunk per
  // node, each over its own NIC pair, at the pace of the slower NIC (25
  // GbE) on both engines, and the A100s wait for the V100s: the engines
  // see the same per-node links and devices, so they agree.
  Scenario s = DataParallel(4);
  config::NodeGroup slow;
  slow.name = "v100";
  slow.nodes = 2;
  slow.device = "V100-SXM2-32GB";
  slow.intra_node_link = "nvlink2";
  slow.link = "25GbE";
  config::NodeGroup fast = slow;
  fast.name = "a100";
  fast.device = "A100-SXM4-80GB";
  fast.intra_node_link = "nvlink3";
  fast.nics_per_node = 2;
  s.cluster.node_groups = {slow, fast};
  const BothEngines r = RunBoth(s, "mixed V100 + A100, data parallel");
  EXPECT_LT(r.step_diff, 0.01);
  ASSERT_EQ(r.simgrid.groups.size(), 2u);
  EXPECT_LT(r.simgrid.groups[1].compute_s, r.simgrid.groups[0].compute_s);
  EXPECT_GT(r.simgrid.groups[1].idle_s, r.simgrid.groups[0].idle_s);
}

}  // namespace
}  // namespace dtsim::sim
