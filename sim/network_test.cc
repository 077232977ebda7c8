#include "sim/network.h"

#include <gtest/gtest.h>

namespace dtsim::sim {
namespace {

NetworkSpec TwoNodes() {
  NetworkSpec s;
  s.nodes = 2;
  s.devices_per_node = 2;
  s.intra_bw_bytes_per_s = 100e9;
  s.intra_latency_s = 1e-6;
  s.nic_bw_bytes_per_s = 10e9;
  s.net_latency_s = 10e-6;
  return s;
}

TEST(Network, SingleTransferIsLatencyPlusBytesOverBandwidth) {
  Network net(TwoNodes());
  const Transfer intra[] = {{0, 1, 1e6}};
  EXPECT_DOUBLE_EQ(net.StepSeconds(intra), 1e-6 + 1e6 / 100e9);
  const Transfer inter[] = {{0, 2, 1e6}};
  EXPECT_DOUBLE_EQ(net.StepSeconds(inter), 10e-6 + 1e6 / 10e9);
}

TEST(Network, FlowsIntoOneNicShareIt) {
  // Ranks 0 and 1 (node 0) both send to node 1: 2 MB cross node 0's NIC.
  Network net(TwoNodes());
  const Transfer incast[] = {{0, 2, 1e6}, {1, 3, 1e6}};
  EXPECT_DOUBLE_EQ(net.StepSeconds(incast), 10e-6 + 2e6 / 10e9);
  // Opposite directions do not share: links are full duplex.
  const Transfer duplex[] = {{0, 2, 1e6}, {2, 0, 1e6}};
  EXPECT_DOUBLE_EQ(net.StepSeconds(duplex), 10e-6 + 1e6 / 10e9);
}

TEST(Network, SelfTransferIsFreeAndScratchIsReset) {
  Network net(TwoNodes());
  const Transfer self[] = {{1, 1, 1e9}};
  EXPECT_EQ(net.StepSeconds(self), 0.0);
  const Transfer one[] = {{0, 2, 1e6}};
  const double first = net.StepSeconds(one);
  EXPECT_DOUBLE_EQ(net.StepSeconds(one), first);  // no load left over from the last step
}

TEST(Network, SpineLatencyOnlyAcrossLeaves) {
  NetworkSpec s = TwoNodes();
  s.nodes = 4;
  s.fat_tree = true;
  s.nodes_per_leaf = 2;
  s.spine_latency_s = 3e-6;
  Network net(s);
  const Transfer same_leaf[] = {{0, 2, 0}};
  const Transfer cross[] = {{0, 4, 0}};
  EXPECT_DOUBLE_EQ(net.StepSeconds(same_leaf), 10e-6);
  EXPECT_DOUBLE_EQ(net.StepSeconds(cross), 13e-6);
}

}  // namespace
}  // namespace dtsim::sim
