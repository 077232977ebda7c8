// Mixture-of-experts transformers: totals against the released configs,
// per-layer counts by hand, and the model-file keys.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "models/zoo.h"

namespace dtsim::models {
namespace {

// Mixtral 8x7B (HF mistralai/Mixtral-8x7B-v0.1 config.json: hidden 4096,
// 32 layers, 32 heads, 8 kv heads of 128, intermediate 14336, 8 experts,
// top-2, vocab 32000, untied, RMSNorm, no biases). Per layer:
//   attention  qkv 4096 x (4096 + 2 x 1024) = 25,165,824
//              proj 4096 x 4096             = 16,777,216
//   norms      2 x 4096                     =      8,192
//   router     4096 x 8                     =     32,768
//   experts    8 x (4096 x 2 x 14336 + 14336 x 4096) = 1,409,286,144
//   layer                                   = 1,451,270,144
// 32 layers 46,440,644,608 + token table and LM head 2 x 32000 x 4096 =
// 262,144,000 + final norm 4096 = 46,702,792,704 (Mistral AI: 46.7 B).
// Active: the experts count 2 of 8, 352,321,536 a layer: 394,305,536 x 32 +
// 262,148,096 = 12,879,925,248 (Mistral AI: 12.9 B).
TEST(Moe, MixtralTotalsMatchTheReleasedConfig) {
  const ModelGraph g = BuildZooModel("mixtral-8x7b");
  const GraphTotals t = g.Totals();
  EXPECT_EQ(t.params, 46'702'792'704);
  EXPECT_EQ(t.active_params, 12'879'925'248);
  EXPECT_NEAR(t.params / 1e9, 46.7, 0.05);
  EXPECT_NEAR(t.active_params / 1e9, 12.9, 0.05);
}

// DeepSeekMoE 16B (HF deepseek-ai/deepseek-moe-16b-base config.json: hidden
// 2048, 28 layers, 16 heads, intermediate 10944, moe_intermediate 1408, 64
// routed experts, 2 shared, top-6, first_k_dense_replace 1, vocab 102400,
// untied). Attention 4 x 2048^2 = 16,777,216 and norms 4096 a layer;
//   layer 0 (dense)  + 2048 x 2 x 10944 + 10944 x 2048 = 67,239,936
//                    -> 84,021,248
//   layers 1..27     router 2048 x 64 = 131,072
//                    experts 64 x 3 x 2048 x 1408 = 553,648,128
//                    shared 3 x 2048 x 2816 = 17,301,504
//                    -> 587,862,016 each, 15,872,274,432 in all
//   tables 2 x 102400 x 2048 = 419,430,400, final norm 2048
// = 16,375,728,128 (Dai et al. 2024: 16.4 B). Active: 6 of 64 experts,
// 51,904,512 a layer: 86,118,400 x 27 + 84,021,248 + 419,432,448 =
// 2,828,650,496 (Dai et al.: 2.8 B).
TEST(Moe, DeepSeekMoeTotalsMatchTheReleasedConfig) {
  const ModelGraph g = BuildZooModel("deepseek-moe-16b");
  const GraphTotals t = g.Totals();
  EXPECT_EQ(t.params, 16'375'728'128);
  EXPECT_EQ(t.active_params, 2'828'650'496);
  // The first layer is dense, the others have experts.
  EXPECT_EQ(g.Find("layer0.mlp.router"), g.num_ops());
  EXPECT_LT(g.Find("layer1.mlp.router"), g.num_ops());
  EXPECT_LT(g.Find("layer1.shared.fc1"), g.num_ops());
}

TransformerConfig SmallMoe() {
  TransformerConfig c;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.sequence = 32;
  c.vocab = 1000;
  c.ffn_hidden = 128;
  c.mlp = MlpKind::kSwiglu;
  c.bias = false;
  c.experts = 8;
  c.top_k = 2;
  return c;
}

// One layer's expert ops, S = 32, H = 64, F = 128, E = 8, k = 2:
//   dispatch   (R, H) with R = k S = 64 rows
//   fc1        params 8 x 64 x 256 = 131,072; fwd 2 x 64 x 64 x 256 = 2,097,152
//              (the FLOPs of k = 2 experts per token, not of 8)
//   fc2        params 8 x 128 x 64 = 65,536;  fwd 2 x 64 x 128 x 64 = 1,048,576
//   combine    (S, H), fwd 2 R H = 8,192
TEST(Moe, ExpertOpsCountAllExpertsParamsButRoutedFlops) {
  const ModelGraph g = BuildTransformer(SmallMoe());
  const Op& dispatch = g.op(g.Find("layer0.mlp.dispatch"));
  EXPECT_EQ(dispatch.output_shape, (Shape{64, 64}));
  EXPECT_EQ(dispatch.attrs.view, ViewKind::kDispatch);
  const Op& fc1 = g.op(g.Find("layer0.experts.fc1"));
  EXPECT_EQ(fc1.params, 131'072);
  EXPECT_DOUBLE_EQ(fc1.fwd_flops, 2'097'152);
  EXPECT_EQ(fc1.attrs.experts, 8);
  EXPECT_EQ(fc1.attrs.top_k, 2);
  const Op& fc2 = g.op(g.Find("layer0.experts.fc2"));
  EXPECT_EQ(fc2.params, 65'536);
  EXPECT_DOUBLE_EQ(fc2.fwd_flops, 1'048'576);
  const Op& combine = g.op(g.Find("layer0.mlp.combine"));
  EXPECT_EQ(combine.output_shape, (Shape{32, 64}));
  EXPECT_DOUBLE_EQ(combine.fwd_flops, 8'192);
  const Op& router = g.op(g.Find("layer0.mlp.router"));
  EXPECT_EQ(router.params, 64 * 8);
}

// A capacity factor of 1.25 pads each expert's buffer: R = ceil(1.25 x 2 x
// 32) = 80 rows, and the experts' FLOPs grow with them (params do not).
TEST(Moe, CapacityFactorScalesTheRoutedRows) {
  TransformerConfig c = SmallMoe();
  c.capacity_factor = 1.25;
  const ModelGraph g = BuildTransformer(c);
  EXPECT_EQ(g.op(g.Find("layer0.mlp.dispatch")).output_shape, (Shape{80, 64}));
  EXPECT_EQ(g.op(g.Find("layer0.experts.fc1")).params, 131'072);
  EXPECT_DOUBLE_EQ(g.op(g.Find("layer0.experts.fc1")).fwd_flops, 2.0 * 80 * 64 * 256);
}

TEST(Moe, RefusesInconsistentExperts) {
  TransformerConfig c = SmallMoe();
  c.top_k = 9;
  EXPECT_THROW(BuildTransformer(c), UserError);
  c = SmallMoe();
  c.expert_load_skew = 5;  // above E / k = 4
  EXPECT_THROW(BuildTransformer(c), UserError);
  c = SmallMoe();
  c.dense_layers = 2;  // every layer dense
  EXPECT_THROW(BuildTransformer(c), UserError);
}

TEST(Moe, ModelFileKeys) {
  const ModelGraph g = ParseModelYaml(
      "transformer: {layers: 2, hidden: 64, heads: 4, sequence: 32, vocab: 1000, ffn_hidden: 128,\n"
      "              mlp: swiglu, bias: false, experts: 8, top_k: 2}\n",
      "m.yaml");
  EXPECT_EQ(g.Totals().params, BuildTransformer(SmallMoe()).Totals().params);
  try {
    ParseModelYaml("transformer: {layers: 2, hidden: 64, heads: 4, sequence: 32, vocab: 1000,\n"
                   "              top_k: 2}\n",
                   "m.yaml");
    FAIL() << "top_k without experts accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("m.yaml:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("experts is 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtsim::models
