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

// A Llama-style block set on a small model: SwiGLU, RMSNorm, rotary,
// grouped-query attention, no biases, no dropout, untied head.
TransformerConfig SmallLlama() {
  TransformerConfig c = Config(2, 64, 4, 32, 1000);
  c.kv_heads = 2;
  c.ffn_hidden = 96;
  c.mlp = MlpKind::kSwiglu;
  c.norm = NormKind::kRmsNorm;
  c.positions = PositionKind::kRotary;
  c.bias = false;
  c.dropout = false;
  c.tied_embeddings = false;
  return c;
}

bool Has(const ModelGraph& g, const std::string& name) {
  for (OpId v = 0; v < g.num_ops(); ++v)
    if (g.op(v).name == name) return true;
  return false;
}

int CountKind(const ModelGraph& g, OpKind kind) {
  int n = 0;
  for (OpId v = 0; v < g.num_ops(); ++v) n += g.op(v).kind == kind;
  return n;
}

TEST(Transformer, LlamaBlocksMatchTheirClosedForm) {
  // Hugging Face LlamaForCausalLM with D = H / A, G kv heads, F
  // intermediate_size, untied head, no biases:
  //   per layer  q_proj, o_proj 2 H^2; k_proj, v_proj 2 H G D;
  //              gate, up, down 3 H F; input and post-attention RMSNorm 2H
  //   outside    embed_tokens V H, lm_head V H, final norm H
  const std::int64_t l = 2, h = 64, g = 2, d = 16, f = 96, v = 1000;
  const ModelGraph llama = BuildTransformer(SmallLlama());
  EXPECT_EQ(llama.Totals().params,
            l * (2 * h * h + 2 * h * g * d + 3 * h * f + 2 * h) + 2 * v * h + h);
  // No position table, no dropout; q and k rotated in each layer.
  EXPECT_FALSE(Has(llama, "embed.positions"));
  EXPECT_EQ(CountKind(llama, OpKind::kDropout), 0);
  EXPECT_EQ(CountKind(llama, OpKind::kRotary), 2 * l);
  EXPECT_EQ(CountKind(llama, OpKind::kRmsNorm), 2 * l + 1);
  EXPECT_EQ(CountKind(llama, OpKind::kLayerNorm), 0);
  // Eager attention with G < A repeats k and v to the A query heads.
  EXPECT_EQ(llama.op(llama.Find("layer0.attn.k")).output_shape, (Shape{2, 32, 16}));
  EXPECT_EQ(llama.op(llama.Find("layer0.attn.k_repeat")).output_shape, (Shape{4, 32, 16}));
  // SwiGLU: fc1 holds gate and up (2F), fc2 reads F.
  EXPECT_EQ(llama.op(llama.Find("layer0.mlp.fc1")).output_shape, (Shape{32, 2 * f}));
  EXPECT_EQ(llama.op(llama.Find("layer0.mlp.fc2")).input_shapes[0], (Shape{32, f}));
  EXPECT_EQ(llama.op(llama.Find("layer0.mlp.silu")).kind, OpKind::kSilu);
}

TEST(Transformer, EachBlockKeyChangesTheModel) {
  // Each key flipped alone from GPT-2's defaults changes the parameters by
  // its own term (H = 64, A = 4, D = 16, F = 4H = 256, L = 2):
  const std::int64_t l = 2, h = 64, f = 256, s = 32;
  const ModelGraph base = BuildTransformer(Config(2, 64, 4, 32, 1000));
  auto params = [](const TransformerConfig& c) { return BuildTransformer(c).Totals().params; };
  TransformerConfig c = Config(2, 64, 4, 32, 1000);
  c.mlp = MlpKind::kSwiglu;  // + a second H x F matrix and bias F per layer
  c.ffn_hidden = 256;
  EXPECT_EQ(params(c) - base.Totals().params, l * (h * f + f));
  c.mlp = MlpKind::kGeglu;  // same weights, GELU on the gate
  EXPECT_EQ(params(c) - base.Totals().params, l * (h * f + f));
  EXPECT_TRUE(Has(BuildTransformer(c), "layer0.mlp.gelu"));
  c = Config(2, 64, 4, 32, 1000);
  c.norm = NormKind::kRmsNorm;  // no shift: H fewer per norm, 2L + 1 norms
  EXPECT_EQ(base.Totals().params - params(c), (2 * l + 1) * h);
  c = Config(2, 64, 4, 32, 1000);
  c.positions = PositionKind::kRotary;  // no S x H position table
  EXPECT_EQ(base.Totals().params - params(c), s * h);
  c = Config(2, 64, 4, 32, 1000);
  c.kv_heads = 1;  // k and v: 3 heads fewer each, weights and biases
  EXPECT_EQ(base.Totals().params - params(c), l * 2 * 3 * 16 * (h + 1));
  c = Config(2, 64, 4, 32, 1000);
  c.bias = false;  // qkv 3H, proj H, fc1 F, fc2 H, norm shifts 2H per layer; final norm H
  EXPECT_EQ(base.Totals().params - params(c), l * (3 * h + h + f + h + 2 * h) + h);
  c = Config(2, 64, 4, 32, 1000);
  c.dropout = false;  // embedding, probabilities, two residual dropouts per layer
  EXPECT_EQ(CountKind(base, OpKind::kDropout) - CountKind(BuildTransformer(c), OpKind::kDropout),
            1 + 3 * l);
}

TEST(Transformer, FlashAttentionKeepsNoSquareTerm) {
  // Without dropout, eager attention keeps q, k (scores), softmax's output
  // (A S^2), v (context) and the context (proj's input); flash keeps q, k,
  // v and its output plus one log-sum-exp per query row (A S). Per layer
  // flash saves A S^2 - A S = 4 * 32 * 32 - 4 * 32 = 3968 elements fewer.
  TransformerConfig c = SmallLlama();
  c.kv_heads = 0;  // multi-head: eager has no repeated heads
  const ModelGraph eager = BuildTransformer(c);
  c.attention = AttentionKind::kFlash;
  const ModelGraph flash = BuildTransformer(c);
  EXPECT_EQ(CountKind(flash, OpKind::kAttention), 2);
  EXPECT_FALSE(Has(flash, "layer0.attn.scores"));
  for (int layer = 0; layer < 2; ++layer) {
    const std::string prefix = "layer" + std::to_string(layer) + ".";
    EXPECT_DOUBLE_EQ(SumOverPrefix(eager, prefix, &Op::saved_elements_per_sample) -
                         SumOverPrefix(flash, prefix, &Op::saved_elements_per_sample),
                     4.0 * 32 * 32 - 4.0 * 32);
  }
  EXPECT_EQ(eager.Totals().params, flash.Totals().params);
  // Flash with G < A reads the 2 kv heads directly: no repeated copies.
  c.kv_heads = 2;
  const ModelGraph gqa = BuildTransformer(c);
  EXPECT_FALSE(Has(gqa, "layer0.attn.k_repeat"));
  EXPECT_EQ(gqa.op(gqa.Find("layer0.attn.core")).input_shapes[1], (Shape{2, 32, 16}));
}

TEST(Transformer, GatedMlpDefaultsToLlamaWidth) {
  // Meta's llama/model.py: int(2 * 4 * 4096 / 3) = 10922, rounded up to a
  // multiple of 256 = 11008 (Llama 2 7B's intermediate_size).
  TransformerConfig c = SmallLlama();
  c.hidden = 4096;
  c.heads = 32;
  c.kv_heads = 32;
  c.layers = 1;
  c.ffn_hidden = 0;
  EXPECT_EQ(BuildTransformer(c).op(BuildTransformer(c).Find("layer0.mlp.fc2")).input_shapes[0],
            (Shape{32, 11008}));
}

TEST(Transformer, RejectsInconsistentBlockKeys) {
  TransformerConfig c = SmallLlama();
  c.kv_heads = 3;  // 4 query heads cannot share 3 kv heads
  EXPECT_THROW(BuildTransformer(c), UserError);
  c = SmallLlama();
  c.max_positions = 64;  // rotary has no table
  EXPECT_THROW(BuildTransformer(c), UserError);
  c = Config(1, 60, 4, 32, 100);  // head size 15 is odd
  c.positions = PositionKind::kRotary;
  EXPECT_THROW(BuildTransformer(c), UserError);
}

}  // namespace
}  // namespace dtsim::models
