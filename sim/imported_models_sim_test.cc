// Pipelines and recomputation on ONNX-imported models (models/onnx_import.h)
// as on their zoo twins: layer units come from torch.onnx's scoped names
// and attention's core from the graph's structure (plan/layers.h), so a
// 4-stage split, full and selective recomputation give the twin's step
// time and per-stage memory. Issue 44 item 1: the imports were one unit
// (26% scaling efficiency, a stage of 0 GiB, recomputation saving nothing,
// selective refused).
#include <gtest/gtest.h>

#include <string>

#include "config/scenario.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

Prediction PredictPlan(const std::string& model, const std::string& recompute, int micro_batch) {
  const std::string yaml =
      "cluster: {nodes: 1, devices_per_node: 4, device: V100-SXM2-32GB, intra_node_link: nvlink2}\n"
      "workload:\n  model: " + model + "\n  precision: fp16\n"
      "parallelism:\n  strategy: hybrid\n  pipeline_parallel: 4\n  micro_batch_size: " +
      std::to_string(micro_batch) + "\n  global_batch: 64\n  recompute: " + recompute + "\n";
  return Simulate(config::ParseScenario(yaml, "imported.yaml"));
}

void ExpectTwins(const std::string& imported, const std::string& twin, const std::string& recompute,
                 int micro_batch) {
  const Prediction a = PredictPlan(imported, recompute, micro_batch);
  const Prediction b = PredictPlan(twin, recompute, micro_batch);
  ASSERT_TRUE(a.does_not_fit.empty() && b.does_not_fit.empty());
  EXPECT_NEAR(a.metrics.step_time_s / b.metrics.step_time_s, 1.0, 0.02) << imported << " " << recompute;
  ASSERT_EQ(a.memory.stages.size(), b.memory.stages.size());
  for (std::size_t s = 0; s < a.memory.stages.size(); ++s)
    EXPECT_NEAR(a.memory.stages[s].Total() / b.memory.stages[s].Total(), 1.0, 0.02)
        << imported << " " << recompute << " stage " << s;
}

// GPT-2 small at 128 tokens (models/testdata/onnx/manifest.json: torch.onnx
// export of Hugging Face's GPT2LMHeadModel config, training mode) and the
// same blocks through the transformer keys.
TEST(ImportedModels, Gpt2SplitsAndRecomputesAsItsTwin) {
  const std::string onnx = "{file: models/testdata/onnx/gpt2_small_train_op17.onnx}";
  const std::string twin = "{transformer: {layers: 12, hidden: 768, heads: 12, sequence: 128, vocab: 50257}}";
  for (const char* recompute : {"false", "full", "selective"}) ExpectTwins(onnx, twin, recompute, 4);
  // Full recomputation keeps less than none (it kept the same before).
  EXPECT_LT(PredictPlan(onnx, "full", 4).memory.stages[0].activations_bytes,
            0.5 * PredictPlan(onnx, "false", 4).memory.stages[0].activations_bytes);
}

// torchvision's ResNet-50 (training mode) and the zoo's.
TEST(ImportedModels, Resnet50SplitsAndRecomputesAsItsTwin) {
  const std::string onnx = "{file: models/testdata/onnx/resnet50_train_op17.onnx}";
  for (const char* recompute : {"false", "full"}) ExpectTwins(onnx, "resnet50", recompute, 8);
}

}  // namespace
}  // namespace dtsim::sim
