// Memory of the routed experts under expert parallelism (MemoryInputs::
// expert_parallel), by hand.
#include <gtest/gtest.h>

#include "models/zoo.h"
#include "sim/memory.h"

namespace dtsim::sim {
namespace {

// Mixtral 8x7B, one MoE layer's experts (fc1 8 x 4096 x 28672 =
// 939,524,096 params, fc2 8 x 14336 x 4096 = 469,762,048; 1,409,286,144 in
// all), bf16 with fp32 master weights and Adam (4 + 8 = 12 bytes of
// optimizer state a parameter), d = 16, ep = 8, ZeRO-1:
//   experts held    1,409,286,144 / 8 = 176,160,768
//   parameters      2 bytes each = 352,321,536
//   gradients       2 bytes each = 352,321,536
//   optimizer       12 bytes each, sharded over d / ep = 2: 1,056,964,608
TEST(MoeMemory, ExpertStateDividesByEpAndZeroShardsOverTheExpertDataGroup) {
  models::ModelGraph g = models::BuildZooModel("mixtral-8x7b");
  g.SetDType(models::DType::kBf16);
  MemoryInputs in;
  in.graph = &g;
  in.ops = {g.Find("layer0.experts.fc1"), g.Find("layer0.experts.fc2")};
  in.data_parallel = 16;
  in.expert_parallel = 8;
  in.zero_stage = 1;
  in.mixed_precision = true;
  in.micro_batches_in_flight = 0;  // state only
  const MemoryBreakdown m = DeviceMemory(in);
  EXPECT_DOUBLE_EQ(m.params_bytes, 352'321'536);
  EXPECT_DOUBLE_EQ(m.grads_bytes, 352'321'536);
  EXPECT_DOUBLE_EQ(m.optimizer_bytes, 1'056'964'608);
  // The attention of the same layer stays data-parallel: ZeRO over all 16.
  // qkv 4096 x 6144 + proj 4096 x 4096 = 41,943,040 params x 12 / 16.
  in.ops = {g.Find("layer0.attn.qkv"), g.Find("layer0.attn.proj")};
  EXPECT_DOUBLE_EQ(DeviceMemory(in).optimizer_bytes, 41'943'040.0 * 12 / 16);
}

// The routed rows' activations of the rank holding the busiest expert: with
// skew 2 and ep = 8 = E the rank keeps 2x the balanced rows' activations.
TEST(MoeMemory, SkewRaisesTheBusiestRanksActivations) {
  models::TransformerConfig c;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.sequence = 32;
  c.vocab = 1000;
  c.mlp = models::MlpKind::kSwiglu;
  c.experts = 8;
  c.top_k = 2;
  const models::ModelGraph balanced = models::BuildTransformer(c);
  c.expert_load_skew = 2;
  const models::ModelGraph skewed = models::BuildTransformer(c);
  MemoryInputs in;
  in.data_parallel = 8;
  in.expert_parallel = 8;
  const auto activations = [&](const models::ModelGraph& g) {
    in.graph = &g;
    in.ops = {g.Find("layer0.experts.silu")};
    return DeviceMemory(in).activations_bytes;
  };
  EXPECT_GT(activations(balanced), 0);
  EXPECT_DOUBLE_EQ(activations(skewed), 2 * activations(balanced));
}

}  // namespace
}  // namespace dtsim::sim
