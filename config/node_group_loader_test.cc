// cluster.node_groups (config/node_group_loader.cc) and
// parallelism.balance_batch.
#include <gtest/gtest.h>

#include <string>

#include "config/loader_test_util.h"
#include "config/scenario.h"

namespace dtsim::config {
namespace {

// Line 1 is "cluster:"; the groups start on line 6.
const std::string kCluster = R"(cluster:
  devices_per_node: 8
  device: A100-SXM4-80GB
  network: {link: ib-hdr, nics_per_node: 4}
  node_groups:
)";

TEST(NodeGroupLoaderTest, GroupsTakeTheClustersKeysForWhatTheyLeaveOut) {
  const Scenario s = ParseScenario(kCluster + R"(    - {name: a100, nodes: 2}
    - {name: h100, nodes: 3, device: h100-sxm, intra_node_link: nvlink4, nics_per_node: 8,
       link: ib-ndr}
)",
                                   "test.yaml");
  const ClusterConfig& c = s.cluster;
  ASSERT_EQ(c.node_groups.size(), 2u);
  const NodeGroup& a = c.node_groups[0];
  EXPECT_EQ(a.name, "a100");
  EXPECT_EQ(a.nodes, 2);
  EXPECT_EQ(a.devices_per_node, 8);
  EXPECT_EQ(a.device, "A100-SXM4-80GB");
  EXPECT_EQ(a.intra_node_link, ClusterConfig{}.intra_node_link);
  EXPECT_EQ(a.nics_per_node, 4);
  EXPECT_EQ(a.link, "ib-hdr");
  const NodeGroup& h = c.node_groups[1];
  EXPECT_EQ(h.device, "H100-SXM");  // the catalog's spelling
  EXPECT_EQ(h.intra_node_link, "nvlink4");
  EXPECT_EQ(h.nics_per_node, 8);
  EXPECT_EQ(h.link, "ib-ndr");
  EXPECT_EQ(h.where.line, 7);
  // The cluster: 2 + 3 nodes of 8, the first group's device.
  EXPECT_EQ(c.nodes, 5);
  EXPECT_EQ(c.num_devices(), 40);
  EXPECT_EQ(c.device, "A100-SXM4-80GB");
  EXPECT_EQ(c.GroupOfNode(1), &c.node_groups[0]);
  EXPECT_EQ(c.GroupOfNode(2), &c.node_groups[1]);
  EXPECT_EQ(c.GroupOfNode(5), nullptr);
  EXPECT_EQ(c.NicsOfNode(4), 8);
  EXPECT_EQ(s.parallelism.balance_batch, BatchBalance::kEven);
}

TEST(NodeGroupLoaderTest, BadGroupsAreRefusedAtTheirKey) {
  EXPECT_TRUE(FailsAt("cluster:\n  nodes: 2\n  node_groups:\n    - {name: a, nodes: 1}\n", 2,
                      "cluster.nodes and cluster.node_groups are exclusive"));
  EXPECT_TRUE(FailsAt(kCluster + "    - {name: a, nodes: 1}\n    - {name: A, nodes: 1}\n", 7,
                      "node group 'A' is defined twice"));
  EXPECT_TRUE(FailsAt(kCluster + "    - {name: a, nodes: 1}\n    - {name: b, nodes: 1, "
                                 "devices_per_node: 4}\n",
                      7, "groups with different devices_per_node are not simulated yet"));
  EXPECT_TRUE(FailsAt(kCluster + "    - {name: a, nodes: 1, device: cpu-host}\n", 6,
                      "parameter_server with device: cpu-host and placement: dedicated"));
  EXPECT_TRUE(FailsAt(kCluster + "    - {name: a, nodes: 1, device: A99}\n", 6,
                      "unknown device 'A99'"));
  EXPECT_TRUE(FailsAt(kCluster + "    - {name: a}\n", 6, "nodes"));
  EXPECT_TRUE(FailsAt(kCluster + "    - {name: a, nodes: 1, gpus: 8}\n", 6, "unknown key 'gpus'"));
  EXPECT_TRUE(FailsAt(kCluster + "    []\n", 6, "at least one node group"));
}

TEST(NodeGroupLoaderTest, BalanceBatchNeedsGroupsAndADataParallelAllReduce) {
  const std::string groups = kCluster + "    - {name: a, nodes: 1}\n    - {name: b, nodes: 1, "
                                        "device: H100-SXM}\n";
  EXPECT_EQ(ParseScenario(groups + "parallelism: {strategy: data, balance_batch: by_speed}\n",
                          "test.yaml")
                .parallelism.balance_batch,
            BatchBalance::kBySpeed);
  EXPECT_TRUE(FailsAt("parallelism:\n  balance_batch: by_speed\n", 2,
                      "has no effect without cluster.node_groups"));
  EXPECT_TRUE(FailsAt(groups + "parallelism:\n  strategy: parameter_server\n  balance_batch: "
                               "by_speed\n",
                      10, "does not use parallelism.balance_batch"));
  EXPECT_TRUE(FailsAt(groups + "parallelism:\n  balance_batch: fastest\n", 9, "by_speed"));
}

}  // namespace
}  // namespace dtsim::config
