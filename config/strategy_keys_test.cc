#include "config/strategy_keys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/loader_test_util.h"

namespace dtsim::config {
namespace {

// Issue 10 item 3: under hybrid, batch_per_device was accepted and ignored.
TEST(StrategyKeysTest, HybridRejectsBatchPerDeviceAtTheKey) {
  EXPECT_TRUE(FailsAt(R"(cluster: {nodes: 1, devices_per_node: 8}
workload:
  model: gpt2
  batch_per_device: 64
parallelism:
  strategy: hybrid
  pipeline_parallel: 2
)",
                      4,
                      "strategy 'hybrid' does not use workload.batch_per_device (its batch is "
                      "parallelism.global_batch"));
}

// Issue 10 item 3: under data, pipeline_parallel was accepted and ignored.
TEST(StrategyKeysTest, DataRejectsPipelineKeys) {
  EXPECT_TRUE(FailsAt("parallelism:\n  strategy: data\n  pipeline_parallel: 4\n", 3,
                      "strategy 'data' does not use parallelism.pipeline_parallel"));
  // The default strategy is data.
  EXPECT_TRUE(FailsAt("parallelism:\n  tensor_parallel: 2\n", 2,
                      "strategy 'data' does not use parallelism.tensor_parallel"));
  EXPECT_TRUE(FailsAt("parallelism:\n  micro_batch_size: 2\n", 2, "micro_batch_size"));
  EXPECT_TRUE(FailsAt("parallelism:\n  averaging_period: 4\n", 2,
                      "only local_sgd averages parameters"));
  EXPECT_TRUE(FailsAt("parallelism:\n  parameter_server: {servers: 2}\n", 2,
                      "strategy 'data' does not use parallelism.parameter_server"));
}

TEST(StrategyKeysTest, ServersRejectAllReduceKeys) {
  for (const char* key : {"algorithm: tree", "bucket_size: 4MiB", "zero_stage: 1"}) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(FailsAt("parallelism:\n  strategy: parameter_server\n  " + std::string(key) +
                            "\n",
                        3, "strategy 'parameter_server' does not use parallelism."));
  }
  // Servers pushing gradients overlap their pushes with the backward (issue
  // 13); pushing parameters (local SGD over servers) they cannot.
  EXPECT_NO_THROW(ParseScenario("parallelism:\n  strategy: parameter_server\n  overlap: false\n",
                                "t.yaml"));
  EXPECT_TRUE(FailsAt("parallelism:\n  strategy: parameter_server\n  parameter_server: {payload: "
                      "parameters}\n  overlap: false\n",
                      4, "does not use parallelism.overlap"));
  // local_sgd averages through the servers or by all-reduce.
  EXPECT_TRUE(FailsAt(
      "parallelism:\n  strategy: local_sgd\n  averaging: parameter_server\n  algorithm: tree\n", 4,
      "strategy 'local_sgd' with averaging 'parameter_server' does not use "
      "parallelism.algorithm"));
  EXPECT_NO_THROW(ParseScenario(
      "parallelism:\n  strategy: local_sgd\n  averaging_period: 4\n  algorithm: tree\n"
      "  bucket_size: 4MiB\n",
      "t.yaml"));
  EXPECT_NO_THROW(ParseScenario(
      "parallelism:\n  strategy: local_sgd\n  averaging: parameter_server\n"
      "  parameter_server: {servers: 2}\n",
      "t.yaml"));
}

TEST(StrategyKeysTest, PipelineKeysBelongToTheirSchedule) {
  const std::string hybrid =
      "cluster: {nodes: 1, devices_per_node: 8}\nworkload: {model: gpt2}\n"
      "parallelism:\n  strategy: hybrid\n  pipeline_parallel: 2\n";
  EXPECT_TRUE(FailsAt(hybrid + "  virtual_stages: 2\n", 6,
                      "only the interleaved schedule of strategy hybrid has virtual stages"));
  EXPECT_NO_THROW(
      ParseScenario(hybrid + "  schedule: interleaved\n  virtual_stages: 2\n", "t.yaml"));
  EXPECT_TRUE(FailsAt(hybrid + "  stage_layers: [7, 7]\n  partition: even_layers\n", 7,
                      "partition has no effect when parallelism.stage_layers"));
  // Model parallelism runs batch_per_device as one batch through GPipe.
  const std::string model =
      "cluster: {nodes: 1, devices_per_node: 4}\nworkload: {model: gpt2, batch_per_device: 8}\n"
      "parallelism:\n  strategy: model\n";
  EXPECT_NO_THROW(ParseScenario(model + "  pipeline_parallel: 4\n  recompute: true\n", "t.yaml"));
  EXPECT_TRUE(FailsAt(model + "  micro_batch_size: 2\n", 5,
                      "strategy 'model' does not use parallelism.micro_batch_size"));
  EXPECT_TRUE(FailsAt(model + "  schedule: 1f1b\n", 5, "GPipe"));
}

TEST(StrategyKeysTest, SimgridSectionNeedsTheSimgridEngine) {
  EXPECT_TRUE(FailsAt("simgrid: {max_step_repeats: 4}\n", 1,
                      "engine 'analytic' does not use the simgrid section"));
  EXPECT_NO_THROW(ParseScenario("engine: simgrid\nsimgrid: {max_step_repeats: 4}\n", "t.yaml"));
}

TEST(StrategyKeysTest, UnusedKeysAreCollectedWhenAsked) {
  // A sweep's point loads and says which keys it ignores.
  std::vector<UnusedKey> unused;
  const Scenario s = ParseScenarioNode(
      YAML::Load("parallelism:\n  strategy: data\n  pipeline_parallel: 4\n  "
                 "averaging_period: 3\n"),
      "t.yaml", &unused);
  EXPECT_EQ(s.parallelism.strategy, Strategy::kData);
  ASSERT_EQ(unused.size(), 2u);
  EXPECT_EQ(unused[0].path, "parallelism.pipeline_parallel");
  EXPECT_EQ(unused[0].where.line, 3);
  EXPECT_EQ(unused[1].path, "parallelism.averaging_period");
}

TEST(StrategyKeysTest, KeysEveryStrategyUses) {
  Scenario s;
  for (Strategy st : {Strategy::kData, Strategy::kParameterServer, Strategy::kLocalSgd,
                      Strategy::kHybrid, Strategy::kModel}) {
    s.parallelism.strategy = st;
    for (const char* path : {"workload.model", "workload.iterations", "workload.precision",
                             "parallelism.strategy", "parallelism.recompute",
                             "parallelism.optimizer", "stragglers", "failures", "outputs"}) {
      EXPECT_EQ(UnusedKeyReason(s, path), "") << StrategyName(st) << " " << path;
    }
  }
}

}  // namespace
}  // namespace dtsim::config
