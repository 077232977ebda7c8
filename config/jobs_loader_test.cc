#include <gtest/gtest.h>

#include <string>

#include "config/loader_test_util.h"
#include "config/scenario.h"

namespace dtsim::config {
namespace {

// A 4-node cluster of 2 devices each on the SimGrid engine (line numbers
// below count from this header's first line, 1).
const std::string kHeader =
    "engine: simgrid\n"                                   // 1
    "cluster:\n"                                          // 2
    "  nodes: 4\n"                                        // 3
    "  devices_per_node: 2\n"                             // 4
    "  network: {topology: fat_tree, nodes_per_leaf: 2, oversubscription: 2}\n"  // 5
    "jobs:\n";                                            // 6

TEST(JobsLoader, ReadsJobsOnTheSharedCluster) {
  const Scenario s = ParseScenario(kHeader +
                                       "  - name: a\n"
                                       "    nodes: [0, 2]\n"
                                       "    workload: {model: resnet50, batch_per_device: 16}\n"
                                       "  - name: b\n"
                                       "    start: 2 s\n"
                                       "    nodes: 2\n"
                                       "    workload: {model: bert-base, batch_per_device: 8}\n",
                                   "test.yaml");
  ASSERT_EQ(s.jobs.size(), 2u);
  EXPECT_EQ(s.cluster.nodes, 4);
  const Job& a = s.jobs[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.start_s, 0);
  EXPECT_EQ(a.nodes, (std::vector<int>{0, 2}));
  EXPECT_EQ(a.scenario.name, "a");
  EXPECT_EQ(a.scenario.engine, "simgrid");
  EXPECT_EQ(a.scenario.cluster.nodes, 2);
  EXPECT_EQ(a.scenario.cluster.devices_per_node, 2);
  EXPECT_EQ(a.scenario.cluster.network.topology, Topology::kFatTree);
  EXPECT_EQ(a.scenario.workload.batch_per_device, 16);
  // A count takes the first nodes no earlier job took, in order.
  const Job& b = s.jobs[1];
  EXPECT_EQ(b.start_s, 2);
  EXPECT_EQ(b.nodes, (std::vector<int>{1, 3}));
  EXPECT_EQ(b.scenario.workload.model.zoo_name, "bert-base");
  EXPECT_EQ(b.scenario.workload.batch_per_device, 8);
}

TEST(JobsLoader, RefusesOverlapsAndTooManyNodes) {
  EXPECT_TRUE(FailsAt(kHeader +
                          "  - {name: a, nodes: [0, 1], workload: {model: resnet50}}\n"  // 7
                          "  - {name: b, nodes: [1, 2], workload: {model: resnet50}}\n",  // 8
                      8, "node 1 is already another job's"));
  EXPECT_TRUE(FailsAt(kHeader + "  - {name: a, nodes: [0, 4], workload: {model: resnet50}}\n", 7,
                      "expected an integer"));
  EXPECT_TRUE(FailsAt(kHeader +
                          "  - {name: a, nodes: 3, workload: {model: resnet50}}\n"
                          "  - {name: b, nodes: 2, workload: {model: resnet50}}\n",
                      8, "node(s) earlier jobs left free"));
  EXPECT_TRUE(FailsAt(kHeader +
                          "  - {name: a, nodes: 1, workload: {model: resnet50}}\n"
                          "  - {name: a, nodes: 1, workload: {model: resnet50}}\n",
                      8, "named twice"));
}

TEST(JobsLoader, RefusesKeysThatDoNotApply) {
  // A key a job does not have.
  EXPECT_TRUE(FailsAt(kHeader + "  - {name: a, nodes: 1, seed: 3, workload: {model: resnet50}}\n",
                      7, "seed"));
  // One job's keys at the top level.
  EXPECT_TRUE(FailsAt("workload: {model: resnet50}\n" + kHeader +
                          "  - {name: a, nodes: 1, workload: {model: resnet50}}\n",
                      1, "each job gives its own workload"));
  // The analytic engine does not share links between jobs.
  EXPECT_TRUE(FailsAt("engine: analytic\ncluster: {nodes: 2}\njobs:\n"
                      "  - {name: a, nodes: 1, workload: {model: resnet50}}\n",
                      1, "engine: simgrid only"));
  // Parameter servers are not merged.
  EXPECT_TRUE(FailsAt(kHeader +
                          "  - name: a\n"
                          "    nodes: 1\n"
                          "    workload: {model: resnet50}\n"
                          "    parallelism: {strategy: parameter_server}\n",
                      10, "parameter servers"));
  // Jobs are cut from a cluster of one kind of node.
  EXPECT_TRUE(FailsAt("engine: simgrid\n"
                      "cluster:\n"
                      "  node_groups:\n"
                      "    - {name: a, nodes: 1, device: A100-SXM4-80GB}\n"
                      "    - {name: h, nodes: 1, device: H100-SXM}\n"
                      "jobs:\n"  // 6
                      "  - {name: a, nodes: 1, workload: {model: resnet50}}\n",
                      6, "node groups"));
  // A job's own keys are checked as a scenario's, where the file gives them.
  EXPECT_TRUE(FailsAt(kHeader + "  - name: a\n    nodes: 1\n    workload: {model: nosuchmodel}\n",
                      9, "nosuchmodel"));
}

TEST(JobsLoader, OnlyTheJobsHaveModels) {
  const Scenario s = ParseScenario(kHeader + "  - {name: a, nodes: 1, workload: {model: resnet50}}\n",
                                   "test.yaml");
  // Commands that take one job's model (plan, exec, search, profile) refuse it.
  EXPECT_THROW(BuildWorkloadModel(s), UserError);
  EXPECT_EQ(BuildWorkloadModel(s.jobs[0].scenario).name(), "resnet50");
}

}  // namespace
}  // namespace dtsim::config
