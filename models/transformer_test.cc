#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "common/error.h"
#include "models/zoo.h"

namespace dtsim::models {
namespace {

// Parameters of a GPT-style model with MLP width 4H and a tied head.
// Per layer:
//   LN1, LN2                      4H
//   qkv   H -> 3H (+ bias)        3H^2 + 3H
//   proj  H -> H  (+ bias)        H^2 + H
//   fc1   H -> 4H (+ bias)        4H^2 + 4H
//   fc2   4H -> H (+ bias)        4H^2 + H
//   total                         12H^2 + 13H
// Embeddings (V + P) H, final LN 2H, tied head 0:
//   params = 12 L H^2 + 13 L H + (V + P) H + 2H
std::int64_t ClosedFormParams(std::int64_t l, std::int64_t h, std::int64_t v, std::int64_t p) {
  return 12 * l * h * h + 13 * l * h + (v + p) * h + 2 * h;
}

TransformerConfig Config(int layers, int hidden, int heads, int sequence, int vocab) {
  TransformerConfig c;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.sequence = sequence;
  c.vocab = vocab;
  return c;
}

double SumOverPrefix(const ModelGraph& g, const std::string& prefix, double Op::*field) {
  double sum = 0;
  for (OpId v = 0; v < g.num_ops(); ++v)
    if (g.op(v).name.rfind(prefix, 0) == 0) sum += g.op(v).*field;
  return sum;
}

TEST(Transformer, ParamsMatchTheClosedForm) {
  const struct {
    int l, h, a, s, v;
  } cases[] = {{12, 768, 12, 1024, 50257},   {24, 1024, 16, 1024, 50257},
               {2, 64, 4, 32, 1000},         {96, 12288, 96, 2048, 50257},
               {3, 120, 5, 7, 11}};
  for (const auto& c : cases) {
    const ModelGraph g = BuildTransformer(Config(c.l, c.h, c.a, c.s, c.v));
    EXPECT_EQ(g.Totals().params, ClosedFormParams(c.l, c.h, c.v, c.s))
        << "L=" << c.l << " H=" << c.h;
  }
  // GPT-2 124M (HF transformers 'gpt2'), 1024 positions: 124,439,808.
  EXPECT_EQ(ClosedFormParams(12, 768, 50257, 1024), 124439808);
}

TEST(Transformer, UntiedHeadAndCustomWidthAddTheirWeights) {
  TransformerConfig c = Config(2, 64, 4, 32, 1000);
  c.tied_embeddings = false;
  EXPECT_EQ(BuildTransformer(c).Totals().params, ClosedFormParams(2, 64, 1000, 32) + 1000 * 64);
  // MLP width F: per layer 4H^2 + 2HF + F + 9H (as above with 4H -> F).
  c = Config(2, 64, 4, 32, 1000);
  c.ffn_hidden = 100;
  c.max_positions = 40;  // the position table has 40 rows
  const std::int64_t h = 64, f = 100;
  EXPECT_EQ(BuildTransformer(c).Totals().params,
            2 * (4 * h * h + 2 * h * f + f + 9 * h) + (1000 + 40) * h + 2 * h);
}

TEST(Transformer, ForwardFlopsMatchMegatronFormula) {
  // Narayanan et al. 2021 (Megatron-LM, SC21), Sec. 5.1: a training step is
  // 72 B s l h^2 (1 + s / (6h) + V / (12 h l)) FLOPs, i.e. 3 x forward, so
  //   forward per sample = 24 s l h^2 (1 + s / (6h) + V / (12 h l)).
  // It counts only the matrix products; norms, softmax and biases add < 1%.
  for (const auto& [l, h, a, s] : {std::tuple{12, 768, 12, 1024}, std::tuple{96, 12288, 96, 2048},
                                   std::tuple{24, 2048, 16, 2048}}) {
    const double v = 50257;
    const ModelGraph g = BuildTransformer(Config(l, h, a, s, static_cast<int>(v)));
    const double expected = 24.0 * s * l * double(h) * h * (1 + s / (6.0 * h) + v / (12.0 * h * l));
    EXPECT_NEAR(g.Totals().fwd_flops / expected, 1.0, 0.01) << "L=" << l << " H=" << h;
  }
}

TEST(Transformer, SavedActivationsPerLayerMatchKorthikanti) {
  // Korthikanti et al. 2022 ("Reducing Activation Recomputation"), Sec. 4.1:
  // a layer stores 34 s b h + 5 a s^2 b bytes in 16-bit with 1-byte dropout
  // masks. In elements per sample (b = 1), as this builder counts them:
  //   sequence x hidden tensors: LN1 in, qkv in, q, k, v, proj in, LN2 in,
  //     fc1 in (8), two dropout masks (2)                  -> 10 S H
  //   MLP tensors: GELU in, fc2 in                          -> 2 S F = 8 S H
  //   attention: softmax out, its dropout mask and output   -> 3 A S^2
  //   layer-norm statistics: mean and rstd of S rows, twice -> 4 S
  // (16 S H at 2 bytes + 2 S H masks at 1 byte = 34 S H bytes.)
  const std::int64_t l = 3, h = 64, a = 4, s = 32;
  const ModelGraph g = BuildTransformer(Config(l, h, a, s, 100));
  const double expected = 18.0 * s * h + 3.0 * a * s * s + 4.0 * s;
  for (int layer = 0; layer < l; ++layer) {
    EXPECT_DOUBLE_EQ(
        SumOverPrefix(g, "layer" + std::to_string(layer) + ".", &Op::saved_elements_per_sample),
        expected)
        << "layer " << layer;
  }
}

TEST(Transformer, AttentionShapesAndCounts) {
  const ModelGraph g = BuildTransformer(Config(1, 64, 4, 32, 100));
  EXPECT_EQ(g.op(1).name, "embed.tokens");  // ops in source order
  EXPECT_EQ(g.op(2).name, "embed.positions");
  const Op& scores = g.op(g.Find("layer0.attn.scores"));
  EXPECT_EQ(scores.output_shape, (Shape{4, 32, 32}));
  // A * S * S * D multiply-adds = S^2 H.
  EXPECT_DOUBLE_EQ(scores.fwd_flops, 2.0 * 32 * 32 * 64);
  EXPECT_EQ(g.op(g.Find("layer0.attn.context")).output_shape, (Shape{4, 32, 16}));
  EXPECT_EQ(g.op(g.Find("lm_head")).params, 0);  // tied
  EXPECT_DOUBLE_EQ(g.op(g.Find("lm_head")).fwd_flops, 2.0 * 32 * 64 * 100);
  EXPECT_EQ(g.op(g.num_ops() - 1).kind, OpKind::kSoftmaxCrossEntropy);
  for (OpId v = 0; v < g.num_ops(); ++v)
    for (OpId in : g.inputs(v)) EXPECT_LT(in, v);
}

TEST(Transformer, RecordsWhatRealExecutionNeeds) {
  // H = 64, A = 4: D = 16, softmax scale 1/sqrt(16) = 0.25 (Vaswani et al.
  // 2017, scaled dot-product attention).
  const ModelGraph g = BuildTransformer(Config(1, 64, 4, 32, 100));
  const Op& softmax = g.op(g.Find("layer0.attn.softmax"));
  EXPECT_TRUE(softmax.attrs.causal);  // GPT presets are decoders
  EXPECT_DOUBLE_EQ(softmax.attrs.scale, 0.25);
  EXPECT_EQ(g.op(g.Find("layer0.attn.q")).attrs.view, ViewKind::kSplitHeads);
  EXPECT_EQ(g.op(g.Find("layer0.attn.merge_heads")).attrs.view, ViewKind::kMergeHeads);
  const Op& k_slice = g.op(g.Find("layer0.attn.k_slice"));
  EXPECT_EQ(k_slice.attrs.view, ViewKind::kSlice);
  EXPECT_EQ(k_slice.attrs.axis, 1);
  EXPECT_EQ(k_slice.attrs.begin, 64);  // q occupies columns [0, 64)
  EXPECT_TRUE(g.op(g.Find("layer0.attn.scores")).attrs.transpose_b);
  EXPECT_EQ(g.op(g.Find("embed.positions")).attrs.ids, EmbeddingIds::kPositions);
  EXPECT_EQ(g.op(g.Find("lm_head")).attrs.tied_to,
            static_cast<std::int64_t>(g.Find("embed.tokens")));
  TransformerConfig encoder = Config(1, 64, 4, 32, 100);
  encoder.causal = false;
  EXPECT_FALSE(BuildTransformer(encoder).op(g.Find("layer0.attn.softmax")).attrs.causal);
}

TEST(Transformer, RejectsInconsistentConfigs) {
  EXPECT_THROW(BuildTransformer(Config(2, 100, 3, 16, 10)), UserError);  // 100 % 3
  EXPECT_THROW(BuildTransformer(Config(0, 64, 4, 16, 10)), UserError);
  EXPECT_THROW(BuildTransformer(Config(2, 64, 4, -1, 10)), UserError);
  TransformerConfig c = Config(2, 64, 4, 64, 10);
  c.max_positions = 32;  // shorter than the sequence
  try {
    BuildTransformer(c);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("max_positions"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtsim::models
