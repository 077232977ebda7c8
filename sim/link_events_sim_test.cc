// Link events in whole simulations (config::LinkEvent,
// sim/network/link_events.h).
#include <gtest/gtest.h>

#include "config/scenario.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

// ResNet-50 data parallelism on 4 nodes of 4 V100 over 25 GbE, `nics` NICs
// per node.
config::Scenario Cluster(int nics) {
  return config::ParseScenario(
      "cluster: {nodes: 4, devices_per_node: 4, device: V100-SXM2-32GB, intra_node_link: nvlink2,"
      " network: {link: 25GbE, nics_per_node: " + std::to_string(nics) + "}}\n"
      "workload: {model: resnet50, batch_per_device: 64, precision: fp16, iterations: 4}\n"
      "parallelism: {strategy: data, bucket_size: 25MiB}\n",
      "test.yaml");
}

config::LinkEvent Event(int node, double at, double duration, double bandwidth) {
  config::LinkEvent e;
  e.node = node;
  e.at_s = at;
  e.duration_s = duration;
  e.bandwidth = bandwidth;
  return e;
}

TEST(LinkEventsSim, EveryNodeReroutedToOneNicOfTwoRunsAsOneNic) {
  // Expected: the same cluster built with one NIC per node: rerouting the
  // traffic of a failed NIC of two leaves each node half its bandwidth.
  config::Scenario s = Cluster(2);
  for (int node = 0; node < 4; ++node) {
    config::LinkEvent e = Event(node, 0, 0, 0);
    e.when_down = config::LinkDownPolicy::kReroute;
    s.link_events.push_back(e);
  }
  const double one_nic = Simulate(Cluster(1)).metrics.step_time_s;
  const double two_nics = Simulate(Cluster(2)).metrics.step_time_s;
  ASSERT_LT(two_nics, one_nic);  // the network shows in the step
  EXPECT_NEAR(Simulate(s).metrics.step_time_s, one_nic, 1e-6 * one_nic);
}

TEST(LinkEventsSim, AnOutageDelaysOnlyTheStepItHitsByAtMostItsLength) {
  const Prediction base = Simulate(Cluster(1));
  const std::vector<double>& end = base.metrics.iteration_end_s;
  // Node 3's NIC down for 20 ms from the middle of step 2, then repaired.
  config::Scenario s = Cluster(1);
  const double at = (end[1] + end[2]) / 2;
  config::LinkEvent e = Event(3, at, 0.020, 0);
  s.link_events.push_back(e);
  const Prediction hit = Simulate(s);
  const std::vector<double>& hit_end = hit.metrics.iteration_end_s;
  EXPECT_DOUBLE_EQ(hit_end[0], end[0]);
  EXPECT_DOUBLE_EQ(hit_end[1], end[1]);
  const double delay = hit_end[2] - end[2];
  EXPECT_GT(delay, 0);
  EXPECT_LE(delay, 0.020 + 1e-9);
  // Later steps keep their own length.
  EXPECT_NEAR(hit_end[3] - hit_end[2], end[3] - end[2], 1e-9);
}

TEST(LinkEventsSim, ADevicePortSlowsTheRingThroughIt) {
  // The ring crosses device 1 of node 0's port with as many bytes per step
  // as each NIC, so the port slows the ring only once it is slower than a
  // NIC (25 GbE, 3.1 GB/s): at a tenth of NVLink 2 it is still faster, at
  // a hundredth (1.5 GB/s) slower.
  const double nominal = Simulate(Cluster(1)).metrics.step_time_s;
  for (const double fraction : {0.1, 0.01}) {
    config::Scenario s = Cluster(1);
    config::LinkEvent e = Event(0, 0, 0, fraction);
    e.device = 1;
    s.link_events.push_back(e);
    if (fraction == 0.1) {
      EXPECT_EQ(Simulate(s).metrics.step_time_s, nominal);
    } else {
      EXPECT_GT(Simulate(s).metrics.step_time_s, nominal);
    }
  }
}

}  // namespace
}  // namespace dtsim::sim
