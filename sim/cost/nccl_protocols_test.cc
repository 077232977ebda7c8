// NCCL's protocol choice: small collectives take LL, large ones Simple (or
// LL128 where it is on); every value from the table in nccl_protocols.h.
#include "sim/cost/nccl_protocols.h"

#include <gtest/gtest.h>

#include <string>

#include "config/scenario.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

TEST(NcclProtocols, SmallTakesLlLargeTakesSimple) {
  // 8 GPUs in a node, ring: 14 hops at 0.47 us (L = 6.58 us), W the bytes.
  // A tiny all-reduce (W = 1 us): LL = 6.6 + 6.58 + 2 = 15.18 us; Simple =
  // 8.4 + 6.58 x 3.4 / 0.6 + 1 = 46.7 us.
  const NcclProtocolTime small = NcclCollectiveTime(6.58e-6, 1e-6, false, false);
  EXPECT_STREQ(small.protocol, "LL");
  EXPECT_NEAR(small.seconds, 6.6e-6 + 6.58e-6 + 2e-6, 1e-12);
  // 10 ms of bandwidth: LL would take 20 ms; Simple 8.4 + 37.3 us + 10 ms.
  const NcclProtocolTime large = NcclCollectiveTime(6.58e-6, 10e-3, false, false);
  EXPECT_STREQ(large.protocol, "Simple");
  EXPECT_NEAR(large.seconds, 8.4e-6 + 6.58e-6 * 3.4 / 0.6 + 10e-3, 1e-12);
  // With LL128 on, a 100 us bandwidth part: LL128 = 14 + 6.58 x 1.9 / 0.6
  // + 100 x 128 / 120 = 141.5 us beats Simple (145.7) and LL (213.2).
  const NcclProtocolTime mid = NcclCollectiveTime(6.58e-6, 100e-6, false, true);
  EXPECT_STREQ(mid.protocol, "LL128");
  EXPECT_NEAR(mid.seconds, 14e-6 + 6.58e-6 * 1.9 / 0.6 + 100e-6 * 128 / 120, 1e-12);
  // Across nodes the network's hop ratios apply: Simple's hop is 14 / 2.7.
  const NcclProtocolTime net = NcclCollectiveTime(27e-6, 10e-3, true, false);
  EXPECT_NEAR(net.seconds, 8.4e-6 + 27e-6 * 14.0 / 2.7 + 10e-3, 1e-12);
}

TEST(NcclProtocols, NeverCheaperThanTheIdealModelsBandwidthAndLatency) {
  // The ideal model charges collective_latency (8.4 us) + L + W: NCCL's best
  // protocol pays either more latency or less bandwidth, so for any L, W the
  // protocols cost at least min(6.6 + L + 2W, 8.4 + L + W).
  for (double w : {0.0, 1e-6, 1e-4, 1e-2})
    for (double l : {0.0, 1e-6, 1e-4}) {
      const double t = NcclCollectiveTime(l, w, false, true).seconds;
      EXPECT_GE(t + 1e-15, std::min(6.6e-6 + l + 2 * w, 8.4e-6 + l + w));
    }
}

TEST(NcclProtocols, ScenarioKeyPricesTheCollectives) {
  config::Scenario s;
  s.cluster.nodes = 1;
  s.cluster.devices_per_node = 8;
  s.cluster.device = "A100-SXM4-80GB";
  s.cluster.intra_node_link = "nvswitch-a100";
  s.workload.model.zoo_name = "cifar10-cnn";
  s.workload.batch_per_device = 32;
  s.workload.iterations = 3;
  const Prediction ideal = Simulate(s);
  s.cluster.network.protocols = "nccl";
  const Prediction nccl = Simulate(s);
  ASSERT_EQ(ideal.costs.collective_ns.size(), nccl.costs.collective_ns.size());
  for (std::size_t c = 0; c < ideal.costs.collective_ns.size(); ++c)
    EXPECT_NE(ideal.costs.collective_ns[c], nccl.costs.collective_ns[c]);
  s.engine = "simgrid";
  EXPECT_THROW(Simulate(s), UserError);
}

}  // namespace
}  // namespace dtsim::sim
