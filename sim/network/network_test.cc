#include "sim/network/network.h"

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

TEST(Network, ReservedTransfersIntoOneLinkQueue) {
  // Ranks 0 and 1 (node 0) and rank 2 (node 1) each send 1 MB to rank 3
  // (node 1) at t = 0. Rank 2's transfer stays in the node (100 GB/s); the
  // two from node 0 share node 1's NIC (10 GB/s) one after the other:
  // arrivals at 100 us + latency and 200 us + latency.
  Network net(TwoNodes());
  EXPECT_EQ(net.ReserveTransfer(0, 3, 1e6, 0), 100'000 + 10'000);
  EXPECT_EQ(net.ReserveTransfer(1, 3, 1e6, 0), 200'000 + 10'000);
  EXPECT_EQ(net.ReserveTransfer(2, 3, 1e6, 0), 10'000 + 1'000);
  // Later transfers find the link free again.
  EXPECT_EQ(net.ReserveTransfer(0, 3, 1e6, 1'000'000), 1'100'000 + 10'000);
  EXPECT_DOUBLE_EQ(net.TransferSeconds(0, 3, 1e6), 10e-6 + 1e6 / 10e9);
}

TEST(Network, TransfersFromOneSenderAtOnceShareItsLink) {
  // Two nodes behind 1 GB/s NICs, one device each, 1 us between nodes; a
  // third endpoint (a server machine) sends to both at once. Processor
  // sharing: equal transfers of 1 MB (1 ms alone) both end at 2 ms; 1 MB
  // and 3 MB end at 2 ms (2 x 1 ms) and 4 ms (1 + 3 ms), then the latency.
  NetworkSpec spec;
  spec.nodes = 2;
  spec.devices_per_node = 1;
  spec.intra_bw_bytes_per_s = 1e12;
  spec.nic_bw_bytes_per_s = 1e9;
  spec.net_latency_s = 1e-6;
  spec.extra_endpoint_nodes = {2};
  Network net(spec);
  const std::vector<int> dst = {0, 1};
  std::vector<SimTime> ends(2);
  net.ReserveTransferGroup(2, dst, std::vector<double>{1e6, 1e6}, 0, ends);
  EXPECT_EQ(ends[0], 2'001'000);
  EXPECT_EQ(ends[1], 2'001'000);
  // The sender's link is busy until the group is done: the next group
  // starts at 2 ms.
  net.ReserveTransferGroup(2, dst, std::vector<double>{3e6, 1e6}, 0, ends);
  EXPECT_EQ(ends[1], 2'000'000 + 2'001'000);
  EXPECT_EQ(ends[0], 2'000'000 + 4'001'000);
  // One transfer is a plain reservation.
  Network fresh(spec);
  std::vector<SimTime> one(1);
  fresh.ReserveTransferGroup(2, std::vector<int>{0}, std::vector<double>{1e6}, 0, one);
  EXPECT_EQ(one[0], 1'001'000);
}

TEST(Network, ExtraEndpointsAddServerNodes) {
  NetworkSpec s = TwoNodes();
  s.extra_endpoint_nodes = {2, 0};  // a dedicated server node, and one on node 0
  Network net(s);
  EXPECT_EQ(net.num_ranks(), 6);
  EXPECT_EQ(net.num_nodes(), 3);
  EXPECT_EQ(net.NodeOf(4), 2);
  EXPECT_EQ(net.NodeOf(5), 0);
  EXPECT_DOUBLE_EQ(net.TransferSeconds(0, 4, 1e6), 10e-6 + 1e6 / 10e9);  // over the NICs
  EXPECT_DOUBLE_EQ(net.TransferSeconds(0, 5, 1e6), 1e-6 + 1e6 / 100e9);  // inside node 0
}

}  // namespace
}  // namespace dtsim::sim
