#include "sim/network/link_events.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace dtsim::sim {
namespace {

// Two nodes of one device each, 1 GB/s NICs, no latency: a transfer of
// 1 GB from node 0 to node 1 takes 1 s on the nominal network.
NetworkSpec TwoNodes() {
  NetworkSpec n;
  n.nodes = 2;
  n.devices_per_node = 1;
  n.intra_bw_bytes_per_s = 1e10;
  n.nic_bw_bytes_per_s = 1e9;
  return n;
}

config::ClusterConfig Cluster(int nics = 1) {
  config::ClusterConfig c;
  c.nodes = 2;
  c.network.nics_per_node = nics;
  return c;
}

config::LinkEvent NicEvent(int node, double at, double duration, double bandwidth) {
  config::LinkEvent e;
  e.node = node;
  e.at_s = at;
  e.duration_s = duration;
  e.bandwidth = bandwidth;
  return e;
}

SimTime TransferEnd(LinkEventTimeline& t, SimTime start, double bytes) {
  const auto price = [bytes](Network& n) { return n.TransferSeconds(0, 1, bytes); };
  Network nominal(TwoNodes());
  return t.End({0, 1, 0, 0}, start, SecondsToNs(price(nominal)), price);
}

TEST(LinkEvents, HalfBandwidthDuringPartOfATransferStretchesThatPart) {
  // 1 GB at 1 GB/s from t = 0; node 1's NIC at half bandwidth during
  // [0.5 s, 1.5 s): 0.5 GB by 0.5 s, then 0.5 GB/s: the rest (0.5 GB) takes
  // 1 s, so it ends at 1.5 s (by hand).
  LinkEventTimeline t(Network(TwoNodes()), {NicEvent(1, 0.5, 1.0, 0.5)}, Cluster());
  EXPECT_EQ(TransferEnd(t, 0, 1e9), SecondsToNs(1.5));
}

TEST(LinkEvents, ADownLinkStallsTheTransferUntilRepaired) {
  // Down during [0.2 s, 0.7 s): 0.2 GB before, nothing during, 0.8 GB after:
  // ends at 0.7 + 0.8 = 1.5 s.
  LinkEventTimeline t(Network(TwoNodes()), {NicEvent(0, 0.2, 0.5, 0.0)}, Cluster());
  EXPECT_EQ(TransferEnd(t, 0, 1e9), SecondsToNs(1.5));
}

TEST(LinkEvents, RerouteKeepsTheOtherNics) {
  // Down and rerouted with 4 NICs per node: 3/4 of the bandwidth from 0 on
  // for 10 s: 1 GB at 0.75 GB/s takes 4/3 s.
  config::LinkEvent e = NicEvent(0, 0, 10, 0.0);
  e.when_down = config::LinkDownPolicy::kReroute;
  LinkEventTimeline t(Network(TwoNodes()), {e}, Cluster(4));
  EXPECT_NEAR(static_cast<double>(TransferEnd(t, 0, 1e9)), 4e9 / 3, 1.0);
}

TEST(LinkEvents, WorkOutsideTheEventOrOffItsLinksIsNotSlowed) {
  LinkEventTimeline t(Network(TwoNodes()), {NicEvent(1, 5.0, 1.0, 0.1)}, Cluster());
  EXPECT_EQ(TransferEnd(t, 0, 1e9), SecondsToNs(1.0));  // over before the event
  // A transfer inside node 0 (device port only) does not cross node 1's NIC.
  const auto inside = [](Network& n) { return n.TransferSeconds(0, 0, 1e9); };
  EXPECT_EQ(t.End({9, 9, 0, 0}, SecondsToNs(5.0), 1000, inside), SecondsToNs(5.0) + 1000);
}

TEST(LinkEvents, OverlappingEventsOnOneLinkTakeTheLowerBandwidth) {
  // 0.5 and 0.25 over [0, 10 s): 0.25 GB/s, so 4 s for 1 GB.
  LinkEventTimeline t(Network(TwoNodes()),
                      {NicEvent(0, 0, 10, 0.5), NicEvent(0, 0, 10, 0.25)}, Cluster());
  EXPECT_EQ(TransferEnd(t, 0, 1e9), SecondsToNs(4.0));
}

}  // namespace
}  // namespace dtsim::sim
