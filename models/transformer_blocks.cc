#include "models/transformer_blocks.h"

#include <cmath>
#include <functional>

#include "common/error.h"

namespace dtsim::models::transformer {
namespace {

void RequirePositive(int value, const char* field) {
  if (value <= 0) {
    throw UserError("transformer " + std::string(field) + " must be positive, got " +
                    std::to_string(value));
  }
}

// Multi-head self-attention on x (S, H):
//   qkv    = Dense(x) -> (S, 3H), split into q, k, v views (A, S, D)
//   scores = q k^T    -> (A, S, S)   A * S * S * D multiply-adds
//   probs  = Dropout(Softmax(scores))  (scale and mask folded into softmax)
//   ctx    = probs v  -> (A, S, D)   A * S * S * D multiply-adds
//   out    = Dense(ctx viewed as (S, H)) -> (S, H)
// The causal mask of GPT does not change the count: dense kernels compute
// the full S x S matrix.
Tensor Attention(GraphBuilder& b, const std::string& prefix, const Tensor& x, const Dims& d) {
  const std::int64_t head_dim = d.hidden / d.heads;
  const Tensor qkv = b.Dense(prefix + "qkv", x, {.out_features = 3 * d.hidden});
  auto split = [&](const char* part, std::int64_t index) {
    const Tensor slice =
        b.Slice(prefix + part + "_slice", qkv, 1, index * d.hidden, d.hidden);
    return b.SplitHeads(prefix + part, slice, d.heads);
  };
  const Tensor q = split("q", 0);
  const Tensor k = split("k", 1);
  const Tensor v = split("v", 2);
  const Tensor scores = b.MatMul(prefix + "scores", q, k, {.transpose_b = true});
  const SoftmaxSpec softmax{.causal = d.causal,
                            .scale = 1.0 / std::sqrt(static_cast<double>(head_dim))};
  const Tensor probs =
      b.Dropout(prefix + "probs_dropout", b.Softmax(prefix + "softmax", scores, softmax));
  const Tensor ctx = b.MatMul(prefix + "context", probs, v);
  const Tensor merged = b.MergeHeads(prefix + "merge_heads", ctx);
  return b.Dense(prefix + "proj", merged, {.out_features = d.hidden});
}

// Position-wise MLP on x (S, H): Dense H -> F, GELU, Dense F -> H.
Tensor Mlp(GraphBuilder& b, const std::string& prefix, const Tensor& x, const Dims& d) {
  const Tensor h = b.Gelu(prefix + "gelu", b.Dense(prefix + "fc1", x, {.out_features = d.ffn}));
  return b.Dense(prefix + "fc2", h, {.out_features = d.hidden});
}

// A sublayer F with its residual connection, dropout and layer norm:
//   pre:  x + Dropout(F(LN(x)))
//   post: LN(x + Dropout(F(x)))
Tensor Residual(GraphBuilder& b, const std::string& prefix, const Tensor& x,
                LayerNormPlacement placement,
                const std::function<Tensor(const Tensor&)>& sublayer) {
  if (placement == LayerNormPlacement::kPre) {
    const Tensor h = b.Dropout(prefix + "dropout", sublayer(b.LayerNorm(prefix + "ln", x)));
    return b.Add(prefix + "residual", x, h);
  }
  const Tensor h = b.Dropout(prefix + "dropout", sublayer(x));
  return b.LayerNorm(prefix + "ln", b.Add(prefix + "residual", x, h));
}

}  // namespace

Dims Resolve(const TransformerConfig& config) {
  RequirePositive(config.layers, "layers");
  // About 30 ops a layer: deeper stacks would pass kMaxModelOps only after
  // building most of it. Published transformers have at most a few hundred.
  constexpr int kMaxLayers = 10'000;
  if (config.layers > kMaxLayers) {
    throw UserError("transformer layers must be at most " + std::to_string(kMaxLayers) +
                    ", got " + std::to_string(config.layers));
  }
  RequirePositive(config.hidden, "hidden");
  RequirePositive(config.heads, "heads");
  RequirePositive(config.sequence, "sequence");
  RequirePositive(config.vocab, "vocab");
  if (config.ffn_hidden < 0 || config.max_positions < 0) {
    throw UserError("transformer ffn_hidden and max_positions must be >= 0 (0 = default)");
  }
  if (config.hidden % config.heads != 0) {
    throw UserError("transformer hidden (" + std::to_string(config.hidden) +
                        ") must be divisible by heads (" + std::to_string(config.heads) + ")",
                    "each head gets hidden / heads dimensions");
  }
  Dims d;
  d.layers = config.layers;
  d.seq = config.sequence;
  d.hidden = config.hidden;
  d.heads = config.heads;
  d.ffn = config.ffn_hidden > 0 ? config.ffn_hidden : 4 * d.hidden;
  d.vocab = config.vocab;
  d.positions = config.max_positions > 0 ? config.max_positions : d.seq;
  d.causal = config.causal;
  if (d.seq > d.positions) {
    throw UserError("transformer sequence (" + std::to_string(d.seq) +
                        ") exceeds max_positions (" + std::to_string(d.positions) + ")",
                    "the learned position table has max_positions rows");
  }
  return d;
}

Tensor Embeddings(GraphBuilder& b, const Tensor& tokens, const Dims& d,
                  const EmbeddingOptions& options) {
  // Position and token-type tables read the token ids only for their shape.
  const Tensor words = b.Embedding("embed.tokens", tokens, d.vocab, d.hidden);
  const Tensor positions = b.Embedding("embed.positions", tokens, d.positions, d.hidden,
                                           EmbeddingIds::kPositions);
  Tensor h = b.Add("embed.add_positions", words, positions);
  if (options.token_types > 0) {
    const Tensor types = b.Embedding("embed.token_types", tokens, options.token_types, d.hidden,
                                       EmbeddingIds::kZeros);
    h = b.Add("embed.add_token_types", h, types);
  }
  if (options.layer_norm) h = b.LayerNorm("embed.ln", h);
  return b.Dropout("embed.dropout", h);
}

Tensor Block(GraphBuilder& b, const std::string& prefix, const Tensor& x, const Dims& d,
             LayerNormPlacement placement) {
  const Tensor h = Residual(b, prefix + "attn.", x, placement, [&](const Tensor& in) {
    return Attention(b, prefix + "attn.", in, d);
  });
  return Residual(b, prefix + "mlp.", h, placement,
                  [&](const Tensor& in) { return Mlp(b, prefix + "mlp.", in, d); });
}

}  // namespace dtsim::models::transformer
