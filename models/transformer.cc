// BuildTransformer: GPT-style decoder stacks (GPT-2, GPT-3, Megatron-LM,
// Llama, Mistral).
//
//   tokens (S) -> Embeddings (token + learned position, dropout; or token
//                 alone with rotary positions and no dropout)
//              -> L x pre-norm Block -> final norm
//              -> LM head Dense H -> V (weight tied to the token table by default)
//              -> softmax cross entropy
#include <string>

#include "models/transformer_blocks.h"
#include "models/zoo.h"

namespace dtsim::models {

ModelGraph BuildTransformer(const TransformerConfig& config, std::string name) {
  using transformer::LayerNormPlacement;
  const transformer::Dims d = transformer::Resolve(config);
  GraphBuilder b(std::move(name));
  Tensor h = transformer::Embeddings(b, b.Input("tokens", {d.seq}), d, {});
  for (std::int64_t l = 0; l < d.layers; ++l) {
    const auto mlp = d.experts > 0 && l >= d.dense_layers ? transformer::BlockMlp::kExperts
                                                           : transformer::BlockMlp::kDense;
    h = transformer::Block(b, "layer" + std::to_string(l) + ".", h, d, LayerNormPlacement::kPre,
                           mlp);
  }
  h = transformer::Norm(b, "final_ln", h, d);
  // A tied head reuses the token table: no params here, but its FLOPs and
  // weight gradient are computed here all the same.
  const Tensor logits = b.Dense(
      "lm_head", h,
      {.out_features = d.vocab, .bias = false, .tied_weight = config.tied_embeddings});
  b.SoftmaxCrossEntropy("loss", logits, d.vocab);
  const bool gpt2 = config.mlp == MlpKind::kGelu && config.norm == NormKind::kLayerNorm &&
                    !d.rotary && d.kv_heads == d.heads && config.bias && config.dropout &&
                    config.attention == AttentionKind::kEager;
  std::string variant;
  if (!gpt2) {
    variant = std::string(", ") + MlpKindName(config.mlp) + ", " + NormKindName(config.norm) +
              ", " + PositionKindName(config.positions) + " positions, " +
              std::to_string(d.kv_heads) + " kv heads, " + AttentionKindName(config.attention) +
              " attention" + (config.bias ? "" : ", no biases") +
              (config.dropout ? "" : ", no dropout");
  }
  if (d.experts > 0) {
    variant += ", " + std::to_string(d.experts) + " experts of MLP " +
               std::to_string(d.expert_ffn) + " top-" + std::to_string(d.top_k) +
               (d.shared_experts > 0 ? " + " + std::to_string(d.shared_experts) + " shared" : "") +
               (d.dense_layers > 0 ? " after " + std::to_string(d.dense_layers) + " dense layers"
                                   : "");
  }
  return b.Finish(
      std::string(config.causal ? "GPT-style decoder" : "Bidirectional encoder") +
      " (pre-LN, as GPT-2, Radford et al. 2019): " + std::to_string(d.layers) + " layers, hidden " +
      std::to_string(d.hidden) + ", " + std::to_string(d.heads) + " heads, MLP " +
      std::to_string(d.ffn) + ", sequence " + std::to_string(d.seq) + ", vocab " +
      std::to_string(d.vocab) + (config.tied_embeddings ? ", tied LM head" : ", untied LM head") +
      variant);
}

}  // namespace dtsim::models
