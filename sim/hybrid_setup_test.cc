#include "sim/hybrid_setup.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

// Simulates `yaml` (as "h.yaml") and expects an InfeasiblePlan on `line`
// whose message contains `says`.
::testing::AssertionResult InfeasibleAt(const std::string& yaml, int line,
                                        const std::string& says) {
  try {
    Simulate(config::ParseScenario(yaml, "h.yaml"));
  } catch (const InfeasiblePlan& e) {
    const std::string what = e.what();
    if (e.where().file != "h.yaml" || e.where().line != line) {
      return ::testing::AssertionFailure() << "expected line " << line << ", got:\n" << what;
    }
    if (what.find(says) == std::string::npos) {
      return ::testing::AssertionFailure() << "expected '" << says << "' in:\n" << what;
    }
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no InfeasiblePlan for:\n" << yaml;
}

// Issue 10 item 4: tensor_parallel 5 on GPT-2 (12 heads, hidden 768) ran and
// reported 180 samples/s. Neither 12 nor 768 is a multiple of 5.
TEST(HybridSetupTest, TensorParallelMustDivideHeadsHiddenAndMlp) {
  EXPECT_TRUE(InfeasibleAt(R"(cluster: {nodes: 1, devices_per_node: 5}
workload: {model: gpt2}
parallelism:
  strategy: hybrid
  tensor_parallel: 5
)",
                           5, "5 tensor ranks cannot share the 768 hidden size"));
  // 12 heads over 8 ranks: the hidden size 768 divides, the heads do not.
  EXPECT_TRUE(InfeasibleAt(R"(cluster: {nodes: 1, devices_per_node: 8}
workload: {model: gpt2}
parallelism: {strategy: hybrid, tensor_parallel: 8}
)",
                           3, "cannot share the 12 attention heads"));
  // Heads and hidden divide by 4, an MLP of 3002 columns does not.
  EXPECT_TRUE(InfeasibleAt(R"(cluster: {nodes: 1, devices_per_node: 4}
workload:
  model: {transformer: {layers: 2, hidden: 768, heads: 12, sequence: 128, vocab: 1000, ffn_hidden: 3002}}
parallelism:
  strategy: hybrid
  tensor_parallel: 4
)",
                           6, "cannot share the 3002 MLP width (ffn_hidden)"));
  // The vocabulary need not divide (Megatron pads it): GPT-2's 50257 over 4.
  EXPECT_NO_THROW(Simulate(config::ParseScenario(
      "cluster: {nodes: 1, devices_per_node: 4}\nworkload: {model: gpt2}\n"
      "parallelism: {strategy: hybrid, tensor_parallel: 4}\n",
      "h.yaml")));
}

// Megatron-LM gives each tensor rank whole key/value heads too
// (num_query_groups % t == 0): 2 kv heads over 4 ranks are refused, over 2
// they run (each rank holds 1 kv head and 4 query heads).
TEST(HybridSetupTest, TensorParallelMustDivideKeyValueHeads) {
  EXPECT_TRUE(InfeasibleAt(R"(cluster: {nodes: 1, devices_per_node: 4}
workload:
  model: {transformer: {layers: 2, hidden: 256, heads: 8, kv_heads: 2, sequence: 128, vocab: 1000}}
parallelism:
  strategy: hybrid
  tensor_parallel: 4
)",
                           6, "cannot share the 2 key/value heads (kv_heads)"));
  // Flash attention needs bf16/fp16 and an Ampere-or-later GPU here.
  EXPECT_NO_THROW(Simulate(config::ParseScenario(
      "cluster: {nodes: 1, devices_per_node: 2, device: A100-SXM4-80GB}\n"
      "workload:\n  model: {transformer: {layers: 2, hidden: 256, heads: 8, kv_heads: 2, "
      "sequence: 128, vocab: 1000, mlp: swiglu, attention: flash}}\n  precision: bf16\n"
      "parallelism: {strategy: hybrid, tensor_parallel: 2, sequence_parallel: true}\n",
      "h.yaml")));
}

TEST(HybridSetupTest, TensorParallelNeedsATransformer) {
  EXPECT_TRUE(InfeasibleAt(R"(cluster: {nodes: 1, devices_per_node: 2}
workload: {model: resnet50}
parallelism: {strategy: hybrid, tensor_parallel: 2}
)",
                           3, "has no layer that tensor parallelism splits"));
}

TEST(HybridSetupTest, LayersAndMicroBatchesMustDivide) {
  // GPT-2 has 12 blocks plus embedding and head units: fewer than 32 chunks.
  EXPECT_TRUE(InfeasibleAt(R"(cluster: {nodes: 4, devices_per_node: 8}
workload: {model: gpt2}
parallelism: {strategy: hybrid, pipeline_parallel: 32}
)",
                           3, "fewer than the 32 pipeline chunks"));
  // Megatron's even split: 12 blocks over 5 stages.
  EXPECT_TRUE(InfeasibleAt(R"(cluster: {nodes: 1, devices_per_node: 5}
workload: {model: gpt2}
parallelism:
  strategy: hybrid
  pipeline_parallel: 5
  partition: even_layers
)",
                           5, "cannot split 12 transformer layers evenly over 5"));
  // Interleaving needs micro-batches in multiples of p: 3 over p = 2.
  EXPECT_TRUE(InfeasibleAt(R"(cluster: {nodes: 1, devices_per_node: 2}
workload: {model: gpt2}
parallelism:
  strategy: hybrid
  pipeline_parallel: 2
  schedule: interleaved
  virtual_stages: 2
  global_batch: 3
)",
                           8, "micro-batches per replica (3) divisible by pipeline_parallel (2)"));
  // Model parallelism: 3 stages over 8 devices.
  EXPECT_TRUE(InfeasibleAt(R"(cluster: {nodes: 1, devices_per_node: 8}
workload: {model: gpt2}
parallelism: {strategy: model, pipeline_parallel: 3}
)",
                           3, "does not divide the 8 devices"));
}

TEST(HybridSetupTest, ScenariosBuiltInCodeStillGetTheCheck) {
  // No file: the error names no position, but it is still InfeasiblePlan.
  config::Scenario s;
  s.cluster.devices_per_node = 5;
  s.workload.model.zoo_name = "gpt2";
  s.parallelism.strategy = config::Strategy::kHybrid;
  s.parallelism.hybrid.tensor_parallel = 5;
  EXPECT_THROW(Simulate(s), InfeasiblePlan);
}

}  // namespace
}  // namespace dtsim::sim
