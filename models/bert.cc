// BERT pre-training graph (Devlin et al. 2019; layer names and parameter
// layout of HF transformers' BertForPreTraining):
//
//   tokens (S) -> Embeddings (token + position + token-type, LN, dropout)
//              -> L x post-LN Block
//              +-> pooler: first token -> Dense H -> H -> tanh
//              |           -> NSP classifier Dense H -> 2 -> nsp.loss
//              +-> MLM head: Dense H -> H -> GELU -> LN
//                          -> decoder Dense H -> V (weight tied to the token
//                             table, own bias of V) -> mlm.loss (last op)
#include "models/transformer_blocks.h"
#include "models/zoo_builders.h"

namespace dtsim::models {
namespace {
constexpr std::int64_t kTokenTypes = 2;  // sentence A / sentence B
constexpr std::int64_t kNspClasses = 2;  // is-next / not-next
}  // namespace

ModelGraph BuildBert(const TransformerConfig& config, const ZooEntry& entry) {
  using transformer::LayerNormPlacement;
  const transformer::Dims d = transformer::Resolve(config);
  GraphBuilder b(entry.name);
  Tensor h = transformer::Embeddings(b, b.Input("tokens", {d.seq}), d,
                                     {.token_types = kTokenTypes, .layer_norm = true});
  for (std::int64_t l = 0; l < d.layers; ++l) {
    h = transformer::Block(b, "layer" + std::to_string(l) + ".", h, d, LayerNormPlacement::kPost);
  }
  const Tensor cls = b.Slice("pooler.first_token", h, 0, 0, 1);
  const Tensor pooled =
      b.Tanh("pooler.tanh", b.Dense("pooler.dense", cls, {.out_features = d.hidden}));
  const Tensor nsp = b.Dense("nsp.classifier", pooled, {.out_features = kNspClasses});
  b.SoftmaxCrossEntropy("nsp.loss", nsp, kNspClasses);

  Tensor t = b.Gelu("mlm.gelu", b.Dense("mlm.transform", h, {.out_features = d.hidden}));
  t = b.LayerNorm("mlm.ln", t);
  const Tensor logits =
      b.Dense("mlm.decoder", t, {.out_features = d.vocab, .bias = true, .tied_weight = true});
  b.SoftmaxCrossEntropy("mlm.loss", logits, d.vocab);
  return b.Finish(entry.description);
}

}  // namespace dtsim::models
