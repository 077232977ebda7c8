#include "sim/network/pcie_ring.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace dtsim::sim {
namespace {

// Round numbers so the expected loads read off directly: 10 GB/s GPU links
// and uplinks, 8 GB/s HCA link, 5 GB/s QPI, 4 GB/s network.
PcieNodeSpec Spec(bool p2p) {
  PcieNodeSpec s;
  s.gpu_link_bytes_per_s = 10e9;
  s.hca_link_bytes_per_s = 8e9;
  s.qpi_bytes_per_s = 5e9;
  s.network_bytes_per_s = 4e9;
  s.peer_to_peer = p2p;
  return s;
}

TEST(PcieRingLoad, TwoGpusOnOneSwitchPeerToPeerUseOnlyTheirOwnLinks) {
  // g0 -> g1 and g1 -> g0: one stream on each GPU link and direction.
  const RingLoad l = PcieRingLoad(Spec(true), 1, 2);
  EXPECT_EQ(l.streams, 1);
  EXPECT_DOUBLE_EQ(l.seconds_per_byte, 1 / 10e9);
}

TEST(PcieRingLoad, StagedCopiesShareTheSwitchUplink) {
  // Both streams go up switch 0's uplink into host memory and back down it:
  // 2 streams per direction, half the link each.
  const RingLoad l = PcieRingLoad(Spec(false), 1, 2);
  EXPECT_EQ(l.streams, 2);
  EXPECT_DOUBLE_EQ(l.seconds_per_byte, 2 / 10e9);
  EXPECT_NE(l.bottleneck.find("switch 0 uplink"), std::string::npos) << l.bottleneck;
}

TEST(PcieRingLoad, EightGpusPeerToPeerAreBoundByTheQpi) {
  // Ring g0..g7: g3 -> g4 and g7 -> g0 cross sockets, one stream each way;
  // every uplink carries one stream per direction (1 / 10 GB/s), the QPI
  // one stream at 5 GB/s: 1 / 5e9 s per byte.
  const RingLoad l = PcieRingLoad(Spec(true), 1, 8);
  EXPECT_EQ(l.streams, 1);
  EXPECT_DOUBLE_EQ(l.seconds_per_byte, 1 / 5e9);
}

TEST(PcieRingLoad, TheHcaSwitchCarriesThreeStagedStreamsAcrossNodes) {
  // 2 nodes x 8 staged GPUs. Node 0's switch 3 (g6, g7, HCA) uplink up: g6
  // -> g7 staged, g7 -> node 1 into host memory, the HCA writing what node 1
  // sent: 3 streams on 10 GB/s = 3e-10 s/B, above the network's 1 / 4 GB/s.
  const RingLoad l = PcieRingLoad(Spec(false), 2, 8);
  EXPECT_EQ(l.streams, 3);
  EXPECT_DOUBLE_EQ(l.seconds_per_byte, 3 / 10e9);
  EXPECT_NE(l.bottleneck.find("switch 3 uplink"), std::string::npos) << l.bottleneck;
  // Peer to peer, the same switch carries 2 (g7 out, the HCA in): 2e-10,
  // so the network's 2.5e-10 s/B binds.
  const RingLoad p = PcieRingLoad(Spec(true), 2, 8);
  EXPECT_DOUBLE_EQ(p.seconds_per_byte, 1 / 4e9);
  EXPECT_NE(p.bottleneck.find("network"), std::string::npos) << p.bottleneck;
}

TEST(PcieRingLoad, RefusesMoreGpusThanTheNodeHolds) {
  EXPECT_THROW(PcieRingLoad(Spec(true), 1, 9), InternalError);
  EXPECT_THROW(PcieRingLoad(Spec(true), 1, 1), InternalError);
}

}  // namespace
}  // namespace dtsim::sim
