#include "sim/simulator.h"

#include <gtest/gtest.h>

#include "sim/collectives.h"
#include "sim/report.h"

namespace dtsim::sim {
namespace {

config::Scenario Base(int nodes, int per_node) {
  config::Scenario s;
  s.name = "test";
  s.cluster.nodes = nodes;
  s.cluster.devices_per_node = per_node;
  s.cluster.device = "V100-SXM2-32GB";
  s.cluster.intra_node_link = "nvlink2";
  s.cluster.network.link = "25GbE";
  s.workload.model.zoo_name = "resnet50";
  s.workload.batch_per_device = 32;
  s.workload.iterations = 3;
  return s;
}

// A link so fast that communication costs (almost) nothing.
config::Scenario FreeComm(config::Scenario s) {
  hw::LinkSpec free_link;
  free_link.name = "free";
  free_link.bw_bytes_per_s = 1e30;
  free_link.latency_s = 0;
  s.cluster.custom_links.push_back(free_link);
  s.cluster.intra_node_link = "free";
  s.cluster.network.link = "free";
  s.cluster.network.collective_latency_s = 0;
  return s;
}

TEST(Simulator, FreeCommunicationScalesLinearly) {
  // With communication free, N devices do N times the work of one in the
  // same step time: throughput(N) = N x throughput(1), efficiency 1.
  const double one = Simulate(FreeComm(Base(1, 1))).metrics.throughput_samples_per_s;
  for (auto [nodes, per_node] : {std::pair{1, 2}, {2, 4}, {8, 8}}) {
    const Prediction p = Simulate(FreeComm(Base(nodes, per_node)));
    const int n = nodes * per_node;
    EXPECT_NEAR(p.metrics.throughput_samples_per_s, n * one, 1e-6 * n * one) << n;
    EXPECT_NEAR(p.scaling_efficiency, 1.0, 1e-6) << n;
  }
}

TEST(Simulator, OverlapLiesBetweenMaxAndSum) {
  // T_comp: step of one device (no communication). T_comm: the all-reduces
  // of one iteration back to back. Overlapped: max(T_comp, T_comm) <= T <=
  // T_comp + T_comm. Not overlapped: T = T_comp + T_comm (the optimizer and
  // all-reduces all wait for the end of backward).
  for (auto link : {"25GbE", "100GbE", "1GbE"}) {
    config::Scenario s = Base(2, 4);
    s.cluster.network.link = link;
    const Prediction p = Simulate(s);
    const double t_comp = p.plan.samples_per_iteration / 8.0 /
                          p.single_device_throughput_samples_per_s;
    double t_comm = 0;
    for (std::size_t c = 0; c < p.plan.collectives().size(); ++c)
      if (p.plan.collectives()[c].iteration == 0) t_comm += NsToSeconds(p.costs.collective_ns[c]);
    const double t = p.metrics.step_time_s;
    EXPECT_GE(t, std::max(t_comp, t_comm) * (1 - 1e-9)) << link;
    EXPECT_LE(t, (t_comp + t_comm) * (1 + 1e-9)) << link;

    s.parallelism.overlap = false;
    const double serial = Simulate(s).metrics.step_time_s;
    EXPECT_NEAR(serial, t_comp + t_comm, 1e-6 * serial) << link;
    EXPECT_LE(t, serial * (1 + 1e-9)) << link;
  }
}

TEST(Simulator, BreakdownAddsUpToTheStep) {
  const Prediction p = Simulate(Base(2, 4));
  const Breakdown& b = p.metrics.breakdown;
  EXPECT_NEAR(b.compute_s + b.exposed_comm_s + b.idle_s, p.metrics.step_time_s,
              1e-9 * p.metrics.step_time_s);
  EXPECT_GT(b.compute_s, 0);
  EXPECT_GT(b.exposed_comm_s, 0);  // 25 GbE cannot hide ResNet-50's 100 MB of gradients
}

TEST(Simulator, SameScenarioGivesIdenticalReport) {
  const config::Scenario s = Base(2, 2);
  EXPECT_EQ(ReportJson(s, Simulate(s)).dump(), ReportJson(s, Simulate(s)).dump());
}

}  // namespace
}  // namespace dtsim::sim
