#include <gtest/gtest.h>

#include "config/loader_test_util.h"
#include "config/scenario.h"

namespace dtsim::config {
namespace {

// Two nodes of four devices, two NICs each.
const std::string kCluster =
    "cluster: {nodes: 2, devices_per_node: 4, network: {nics_per_node: 2}}\n"
    "link_events:\n";

TEST(LinkEventLoader, ReadsEveryKey) {
  const Scenario s = ParseScenario(kCluster +
                                       "  - {at: 300ms, node: 1, bandwidth: 0, when_down: reroute,"
                                       " duration: 250ms}\n"
                                       "  - {at: 1s, node: 0, device: 3, bandwidth: 0.5}\n",
                                   "test.yaml");
  ASSERT_EQ(s.link_events.size(), 2u);
  const LinkEvent& a = s.link_events[0];
  EXPECT_DOUBLE_EQ(a.at_s, 0.3);
  EXPECT_DOUBLE_EQ(a.duration_s, 0.25);
  EXPECT_EQ(a.node, 1);
  EXPECT_EQ(a.device, -1);
  EXPECT_EQ(a.when_down, LinkDownPolicy::kReroute);
  EXPECT_EQ(a.where.line, 3);
  const LinkEvent& b = s.link_events[1];
  EXPECT_EQ(b.device, 3);
  EXPECT_DOUBLE_EQ(b.bandwidth, 0.5);
  EXPECT_EQ(b.duration_s, 0);  // until the end of the run
}

TEST(LinkEventLoader, RefusesLinksTheClusterLacks) {
  EXPECT_TRUE(FailsAt(kCluster + "  - {at: 0s, node: 2, bandwidth: 0.5}\n", 3,
                      "the cluster has 2 nodes (0-1), got 2"));
  EXPECT_TRUE(FailsAt(kCluster + "  - {at: 0s, node: 0, device: 4, bandwidth: 0.5}\n", 3,
                      "4 device per nodes (0-3), got 4"));
  EXPECT_TRUE(FailsAt(kCluster + "  - {at: 0s, device: 1, bandwidth: 0.5}\n", 3,
                      "expected either node"));
  EXPECT_TRUE(FailsAt(kCluster + "  - {at: 0s, leaf: 0, bandwidth: 0.5}\n", 3,
                      "leaf needs cluster.network.topology: fat_tree"));
  EXPECT_TRUE(FailsAt(kCluster + "  - {at: 0s, node: 0, leaf: 0, bandwidth: 0.5}\n", 3,
                      "expected either node"));
}

TEST(LinkEventLoader, RefusesEventsThatCannotEnd) {
  EXPECT_TRUE(FailsAt(kCluster + "  - {at: 0s, node: 0, bandwidth: 1}\n", 3,
                      "expected a fraction of the nominal bandwidth in [0, 1)"));
  EXPECT_TRUE(FailsAt(kCluster + "  - {at: 0s, node: 0, bandwidth: 0}\n", 3,
                      "never repaired stalls the run forever"));
  EXPECT_TRUE(FailsAt(kCluster + "  - {at: 0s, node: 0, bandwidth: 0.5, when_down: wait}\n", 3,
                      "when_down is for a link that is down"));
  EXPECT_TRUE(FailsAt(kCluster +
                          "  - {at: 0s, node: 0, device: 1, bandwidth: 0, when_down: reroute,"
                          " duration: 1s}\n",
                      3, "has no other beside it"));
  EXPECT_TRUE(FailsAt(kCluster + "  - {at: 5, node: 0, bandwidth: 0.5}\n", 3, "unit"));
}

}  // namespace
}  // namespace dtsim::config
