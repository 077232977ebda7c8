#include "sim/plan_size.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

// Simulating `yaml` (as "p.yaml") must be refused with a UserError on `line`
// that says `says`, before any plan is built.
::testing::AssertionResult RefusedAt(const std::string& yaml, int line, const std::string& says) {
  try {
    Simulate(config::ParseScenario(yaml, "p.yaml"));
  } catch (const UserError& e) {
    const std::string what = e.what();
    if (e.where().line != line) {
      return ::testing::AssertionFailure() << "expected line " << line << ", got:\n" << what;
    }
    if (what.find(says) == std::string::npos) {
      return ::testing::AssertionFailure() << "expected '" << says << "' in:\n" << what;
    }
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "not refused:\n" << yaml;
}

// Issue 10 item 13: each of these ended in std::bad_alloc (or ran for hours).
TEST(PlanSizeTest, SizesWithoutBoundsAreRefusedWithTheNumber) {
  // At the cluster section (its first key).
  EXPECT_TRUE(RefusedAt("cluster:\n  nodes: 1000000\n  devices_per_node: 1000\n", 2,
                        "the cluster has 1000000000 devices, more than the 1048576"));
  // ResNet-50 (the default model), 8 ranks: 10^6 iterations.
  EXPECT_TRUE(RefusedAt("cluster: {devices_per_node: 8}\nworkload:\n  iterations: 1000000\n", 3,
                        "8 ranks x 1000000 iterations"));
  EXPECT_TRUE(RefusedAt(R"(cluster: {nodes: 8}
parallelism:
  strategy: parameter_server
  parameter_server: {servers: 2000000000}
)",
                        4, "more than the 20.0 M dtsim simulates"));
  // H = 2^31 - 1: one warm-up iteration and one round of H.
  EXPECT_TRUE(RefusedAt(R"(cluster: {nodes: 2}
parallelism:
  strategy: local_sgd
  averaging_period: 2147483647
)",
                        4, "2 ranks x 2147483648 iterations"));
  // PipeDream: all 8,008 devices are materialized (8,007 replicas of the
  // first stage, 1 of the second), 65,536 iterations.
  EXPECT_TRUE(RefusedAt(R"(cluster: {nodes: 1001, devices_per_node: 8}
workload: {model: mnist-mlp, iterations: 65536}
parallelism:
  strategy: hybrid
  schedule: pipedream
  pipeline_parallel: 2
  stage_replicas: [8007, 1]
  micro_batch_size: 8
)",
                        2, "8008 ranks x 65536 iterations"));
}

// A round of a PipeDream schedule is lcm(replicas) minibatches: replicas
// [7, 9] make 63 minibatches an iteration, each a forward and two backward
// tasks per op: 2 iterations x 63 x 3 x ops at least.
TEST(PlanSizeTest, PipeDreamRoundsScaleTheEstimate) {
  const config::Scenario s = config::ParseScenario(R"(cluster: {nodes: 2, devices_per_node: 8}
workload: {model: mnist-mlp, iterations: 2}
parallelism: {strategy: hybrid, schedule: pipedream, pipeline_parallel: 2, stage_replicas: [7, 9],
              micro_batch_size: 8}
)", "p.yaml");
  const models::ModelGraph graph = config::BuildWorkloadModel(s);
  const auto ops = static_cast<std::int64_t>(graph.num_ops());
  EXPECT_GE(EstimatePlanTasks(s, graph), 2 * 63 * 3 * ops);
  // The replicas PipeDream's planner chooses are checked the same way.
  EXPECT_THROW(CheckPipeDreamPlanSize(s, graph, {1048575, 1048573}), UserError);
  EXPECT_NO_THROW(CheckPipeDreamPlanSize(s, graph, {7, 9}));
}

TEST(PlanSizeTest, EstimateCoversTheBuiltPlan) {
  // The estimate is an upper bound of the tasks the simulator builds.
  for (const char* yaml :
       {"cluster: {nodes: 2, devices_per_node: 4}\nworkload: {model: resnet50}\n",
        "cluster: {nodes: 1, devices_per_node: 4}\nworkload: {model: gpt2}\n"
        "parallelism: {strategy: hybrid, pipeline_parallel: 2, global_batch: 16}\n",
        // Every rank materialized (a straggler), tensor and sequence
        // parallelism, full and selective recomputation.
        "cluster: {nodes: 1, devices_per_node: 8}\nworkload: {model: gpt2}\n"
        "parallelism: {strategy: hybrid, tensor_parallel: 2, pipeline_parallel: 2, "
        "global_batch: 8, sequence_parallel: true, recompute: true}\n"
        "stragglers: {slow_devices: [{ranks: [1], factor: 2}]}\n",
        "cluster: {nodes: 1, devices_per_node: 8}\nworkload: {model: gpt2}\n"
        "parallelism: {strategy: hybrid, tensor_parallel: 4, pipeline_parallel: 2, "
        "global_batch: 4, schedule: interleaved, virtual_stages: 2, recompute: selective}\n",
        "cluster: {nodes: 4}\nparallelism: {strategy: parameter_server, "
        "parameter_server: {servers: 2}}\n",
        "cluster: {nodes: 1, devices_per_node: 4}\nworkload: {model: mnist-mlp}\n"
        "parallelism: {strategy: hybrid, schedule: pipedream, pipeline_parallel: 2, "
        "stage_replicas: [3, 1], micro_batch_size: 8}\n"}) {
    SCOPED_TRACE(yaml);
    const config::Scenario s = config::ParseScenario(yaml, "p.yaml");
    const models::ModelGraph graph = config::BuildWorkloadModel(s);
    const Prediction p = Simulate(s, SimulateOptions{.graph = &graph});
    EXPECT_GE(EstimatePlanTasks(s, graph), static_cast<std::int64_t>(p.plan.tasks().size()));
    EXPECT_LE(EstimatePlanTasks(s, graph), kMaxPlanTasks);
  }
}

// Issue 44 item 8: node groups and link events materialize every worker, but
// the guard counted trace_max_ranks of them: a mixed A100/H100 cluster of
// 65,536 nodes (524,288 ResNet-50 ranks x 5 iterations) ended in
// std::bad_alloc instead of this refusal.
TEST(PlanSizeTest, NodeGroupsAndLinkEventsCountEveryWorker) {
  EXPECT_TRUE(RefusedAt(R"(cluster:
  devices_per_node: 8
  node_groups:
    - {name: a100, nodes: 32768, device: A100-SXM4-80GB, intra_node_link: nvswitch-a100}
    - {name: h100, nodes: 32768, device: H100-SXM, intra_node_link: nvlink4}
workload: {model: resnet50, iterations: 5}
)",
                        2, "524288 ranks x 5 iterations"));
  const config::Scenario events = config::ParseScenario(R"(cluster: {nodes: 4096, devices_per_node: 8}
workload: {model: resnet50, iterations: 2}
link_events: [{at: 0ms, node: 1, bandwidth: 0.5}]
)",
                                                        "p.yaml");
  config::Scenario alike = events;
  alike.link_events.clear();
  // Every worker against the first trace_max_ranks (the old count for both).
  EXPECT_EQ(EstimatePlanTasks(events, config::BuildWorkloadModel(events)),
            EstimatePlanTasks(alike, config::BuildWorkloadModel(alike)) * 32768 /
                alike.outputs.trace_max_ranks);
}

}  // namespace
}  // namespace dtsim::sim
