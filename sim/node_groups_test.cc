// Mixed clusters in whole simulations (config::ClusterConfig::node_groups,
// sim/node_groups.h).
#include "sim/node_groups.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "config/scenario.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

// Two nodes of one device each: group `slow` (V100) and group `fast`
// (H100), joined by NICs of 1 GB/s (slow) and 2 GB/s (fast) with no
// latency and no fixed cost per collective. Data parallelism in one
// gradient bucket, all-reduced after the whole backward (overlap false).
std::string TwoGroups(const std::string& parallelism_extra = "") {
  return "cluster:\n"
         "  devices_per_node: 1\n"
         "  links:\n"
         "    - {name: nic-1GBps, bandwidth: 1GBps, latency: 0s}\n"
         "    - {name: nic-2GBps, bandwidth: 2GBps, latency: 0s}\n"
         "  network: {link: nic-1GBps, collective_latency: 0s}\n"
         "  node_groups:\n"
         "    - {name: slow, nodes: 1, device: V100-SXM2-32GB, intra_node_link: nvlink2}\n"
         "    - {name: fast, nodes: 1, device: H100-SXM, intra_node_link: nvlink4, link: "
         "nic-2GBps}\n"
         "workload: {model: resnet50, batch_per_device: 32, precision: fp16, iterations: 3}\n"
         "parallelism: {strategy: data, bucket_size: 1GiB, overlap: false" +
         parallelism_extra + "}\n";
}

// One device of the cluster alone (no network traffic), as a plain scenario.
double AloneStep(const std::string& device, int batch) {
  return Simulate(config::ParseScenario(
                      "cluster: {nodes: 1, devices_per_node: 1, device: " + device + "}\n"
                      "workload: {model: resnet50, batch_per_device: " + std::to_string(batch) +
                          ", precision: fp16, iterations: 3}\n"
                      "parallelism: {strategy: data}\n",
                      "alone.yaml"))
      .metrics.step_time_s;
}

TEST(NodeGroups, StepIsTheSlowerGroupsComputePlusTheAllReduce) {
  const Prediction p = Simulate(config::ParseScenario(TwoGroups(), "two.yaml"));
  // Each device alone runs forward, backward and the optimizer step:
  // t_slow (V100) > t_fast (H100). With overlap false the all-reduce starts
  // when the slower backward ends and both optimizer steps wait for it, so
  //   step = t_slow + all-reduce.
  // The all-reduce: a ring of N = 2 ranks is 2 (N - 1) = 2 steps, each rank
  // sending bytes / N to the other; both transfers of a step cross node
  // slow's NIC (1 GB/s, up or down) and node fast's (2 GB/s), so a step
  // takes (bytes / 2) / 1 GB/s and the ring
  //   2 x (bytes / 2) / 1e9 = bytes / 1e9 seconds
  // (latencies and the fixed cost per collective are 0).
  const double slow = AloneStep("V100-SXM2-32GB", 32);
  const double fast = AloneStep("H100-SXM", 32);
  ASSERT_GT(slow, fast);
  double bytes = 0;
  for (const plan::GradientBucket& b : p.plan.buckets) bytes += b.bytes;
  ASSERT_EQ(p.plan.buckets.size(), 1u);
  const double all_reduce = bytes / 1e9;
  EXPECT_NEAR(p.metrics.step_time_s, slow + all_reduce, 1e-6 * (slow + all_reduce));
  // Every worker simulated; each group's own compute, and the fast one waits.
  EXPECT_EQ(p.layout.materialized_workers, 2);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[0].name, "slow");
  EXPECT_EQ(p.groups[1].first_rank, 1);
  EXPECT_NEAR(p.groups[0].single_device_step_s, slow, 1e-9 * slow);
  EXPECT_NEAR(p.groups[1].single_device_step_s, fast, 1e-9 * fast);
  EXPECT_LT(p.groups[1].compute_s, p.groups[0].compute_s);
  // Both take the step and wait for the same all-reduce: what the fast
  // device does not compute, it idles.
  EXPECT_NEAR(p.groups[1].idle_s - p.groups[0].idle_s, p.groups[0].compute_s - p.groups[1].compute_s,
              1e-6 * p.metrics.step_time_s);
}

TEST(NodeGroups, BalancingBySpeedKeepsTheGlobalBatchAndShortensTheStep) {
  const Prediction even = Simulate(config::ParseScenario(TwoGroups(), "two.yaml"));
  const Prediction balanced =
      Simulate(config::ParseScenario(TwoGroups(", balance_batch: by_speed"), "two.yaml"));
  // Global batch 2 x 32 = 64 either way; shares in proportion to the speeds
  // 32 / t_slow and 32 / t_fast: x_slow = 64 t_fast / (t_slow + t_fast),
  // rounded down, the sample left over to the larger fraction.
  EXPECT_EQ(balanced.plan.samples_per_iteration, 64);
  const double t_slow = even.groups[0].single_device_step_s;
  const double t_fast = even.groups[1].single_device_step_s;
  const double x_slow = 64 * t_fast / (t_slow + t_fast);
  const double x_fast = 64 - x_slow;
  EXPECT_LE(std::abs(balanced.groups[0].min_batch_per_device - x_slow), 1.0);
  EXPECT_LE(std::abs(balanced.groups[1].min_batch_per_device - x_fast), 1.0);
  EXPECT_EQ(balanced.groups[0].samples_per_step + balanced.groups[1].samples_per_step, 64);
  EXPECT_LT(balanced.metrics.step_time_s, even.metrics.step_time_s);
}

TEST(NodeGroups, RankBatchesShareTheGlobalBatchByLargestRemainder) {
  config::Scenario s = config::ParseScenario(TwoGroups(", balance_batch: by_speed"), "two.yaml");
  // Speeds 32 / 3 and 32 / 1: shares 64 x 1/4 = 16 and 64 x 3/4 = 48, whole.
  EXPECT_EQ(RankBatches(s, {3.0, 1.0}), (std::vector<int>{16, 48}));
  // Speeds in the ratio 1 : 2: shares 21.33 and 42.67, floors 21 and 42; the
  // sample left over goes to the larger fraction (0.67).
  EXPECT_EQ(RankBatches(s, {2.0, 1.0}), (std::vector<int>{21, 43}));
  // A device that would get under one sample is refused at the key.
  try {
    RankBatches(s, {1000.0, 1.0});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("less than one sample"), std::string::npos) << e.what();
  }
  s.parallelism.balance_batch = config::BatchBalance::kEven;
  EXPECT_TRUE(RankBatches(s, {3.0, 1.0}).empty());
}

TEST(NodeGroups, EachNodeHasItsGroupsLinks) {
  const config::Scenario s = config::ParseScenario(TwoGroups(), "two.yaml");
  const NetworkSpec spec = MakeNetworkSpec(s, config::ScenarioCatalog(s));
  // 1 NIC per node (the cluster's default) of 1 GB/s and 2 GB/s.
  ASSERT_EQ(spec.node_nic_bw_bytes_per_s.size(), 2u);
  EXPECT_DOUBLE_EQ(spec.NicBw(0), 1e9);
  EXPECT_DOUBLE_EQ(spec.NicBw(1), 2e9);
  Network network(spec);
  EXPECT_DOUBLE_EQ(network.TransferSeconds(0, 1, 1e9), 1.0);  // the slower NIC binds
}

TEST(NodeGroups, PipelinesOnNodeGroupsAreRefusedAtTheGroups) {
  config::Scenario s = config::ParseScenario(TwoGroups(), "two.yaml");
  s.parallelism.strategy = config::Strategy::kModel;
  s.parallelism.hybrid.pipeline_parallel = 2;
  try {
    Simulate(s);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("two.yaml:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not simulated"), std::string::npos) << e.what();
  }
}

TEST(NodeGroups, ParameterServersOnAMixedClusterPriceEachWorkerOnItsDevice) {
  config::Scenario s = config::ParseScenario(TwoGroups(), "two.yaml");
  s.parallelism.strategy = config::Strategy::kParameterServer;
  const Prediction p = Simulate(s);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_LT(p.groups[1].compute_s, p.groups[0].compute_s);
}

}  // namespace
}  // namespace dtsim::sim
