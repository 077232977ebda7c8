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

// Multi-head self-attention on x (S, H), G = kv_heads:
//   qkv    = Dense(x) -> (S, (A + 2G) D), split into q (A, S, D) and k, v
//            (G, S, D) views (Megatron-LM fuses the three projections)
//   q, k   rotated per position (rotary positions only)
//   eager: k, v repeated to A heads when G < A (Hugging Face's repeat_kv)
//          scores = q k^T -> (A, S, S)   A * S * S * D multiply-adds
//          probs  = Dropout(Softmax(scores))  (scale and mask folded into softmax)
//          ctx    = probs v  -> (A, S, D)   A * S * S * D multiply-adds
//   flash: ctx    = core(q, k, v) -> (A, S, D), one fused kernel
//   out    = Dense(ctx viewed as (S, H)) -> (S, H)
// The causal mask of GPT does not change the eager count: dense kernels
// compute the full S x S matrix (the fused kernel skips masked blocks).
Tensor Attention(GraphBuilder& b, const std::string& prefix, const Tensor& x, const Dims& d) {
  const std::int64_t head_dim = d.hidden / d.heads;
  const std::int64_t kv_width = d.kv_heads * head_dim;
  const Tensor qkv =
      b.Dense(prefix + "qkv", x, {.out_features = d.hidden + 2 * kv_width, .bias = d.bias});
  auto split = [&](const char* part, std::int64_t begin, std::int64_t width, std::int64_t heads) {
    const Tensor slice = b.Slice(prefix + part + "_slice", qkv, 1, begin, width);
    return b.SplitHeads(prefix + part, slice, heads);
  };
  Tensor q = split("q", 0, d.hidden, d.heads);
  Tensor k = split("k", d.hidden, kv_width, d.kv_heads);
  Tensor v = split("v", d.hidden + kv_width, kv_width, d.kv_heads);
  if (d.rotary) {
    q = b.Rotary(prefix + "q_rotary", q);
    k = b.Rotary(prefix + "k_rotary", k);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  Tensor ctx;
  if (d.attention == AttentionKind::kFlash) {
    ctx = b.Attention(prefix + "core", q, k, v,
                      {.causal = d.causal, .scale = scale, .kernel = d.attention_kernel});
  } else {
    if (d.kv_heads < d.heads) {
      k = b.RepeatHeads(prefix + "k_repeat", k, d.heads / d.kv_heads);
      v = b.RepeatHeads(prefix + "v_repeat", v, d.heads / d.kv_heads);
    }
    const Tensor scores = b.MatMul(prefix + "scores", q, k, {.transpose_b = true});
    Tensor probs = b.Softmax(prefix + "softmax", scores, {.causal = d.causal, .scale = scale});
    if (d.dropout) probs = b.Dropout(prefix + "probs_dropout", probs);
    ctx = b.MatMul(prefix + "context", probs, v);
  }
  const Tensor merged = b.MergeHeads(prefix + "merge_heads", ctx);
  return b.Dense(prefix + "proj", merged, {.out_features = d.hidden, .bias = d.bias});
}

// Position-wise MLP on x (S, H):
//   gelu:          Dense H -> F, GELU, Dense F -> H
//   swiglu/geglu:  Dense H -> 2F (gate and up fused, as Megatron-LM's
//                  linear_fc1 with gated_linear_unit), split into gate and
//                  up (S, F), SiLU or GELU of gate, times up, Dense F -> H
Tensor MlpImpl(GraphBuilder& b, const std::string& prefix, const Tensor& x, const Dims& d,
               std::int64_t ffn) {
  if (d.mlp == MlpKind::kGelu) {
    const Tensor h =
        b.Gelu(prefix + "gelu", b.Dense(prefix + "fc1", x, {.out_features = ffn, .bias = d.bias}));
    return b.Dense(prefix + "fc2", h, {.out_features = d.hidden, .bias = d.bias});
  }
  const Tensor fc1 = b.Dense(prefix + "fc1", x, {.out_features = 2 * ffn, .bias = d.bias});
  const Tensor gate = b.Slice(prefix + "gate", fc1, 1, 0, ffn);
  const Tensor up = b.Slice(prefix + "up", fc1, 1, ffn, ffn);
  const Tensor act = d.mlp == MlpKind::kSwiglu ? b.Silu(prefix + "silu", gate)
                                                : b.Gelu(prefix + "gelu", gate);
  const Tensor h = b.Mul(prefix + "mul", act, up);
  return b.Dense(prefix + "fc2", h, {.out_features = d.hidden, .bias = d.bias});
}

// A sublayer F with its residual connection, dropout and layer norm:
//   pre:  x + Dropout(F(LN(x)))
//   post: LN(x + Dropout(F(x)))
// (no dropout op when the dims have none).
Tensor Residual(GraphBuilder& b, const std::string& prefix, const Tensor& x, const Dims& d,
                LayerNormPlacement placement,
                const std::function<Tensor(const Tensor&)>& sublayer) {
  auto dropout = [&](const Tensor& t) { return d.dropout ? b.Dropout(prefix + "dropout", t) : t; };
  if (placement == LayerNormPlacement::kPre) {
    const Tensor h = dropout(sublayer(Norm(b, prefix + "ln", x, d)));
    return b.Add(prefix + "residual", x, h);
  }
  const Tensor h = dropout(sublayer(x));
  return Norm(b, prefix + "ln", b.Add(prefix + "residual", x, h), d);
}

// Llama's MLP width for hidden H (Meta's llama/model.py, FeedForward):
// int(2 * 4H / 3) rounded up to a multiple of 256.
std::int64_t LlamaFfn(std::int64_t hidden) {
  constexpr std::int64_t kMultipleOf = 256;
  const std::int64_t f = 8 * hidden / 3;
  return (f + kMultipleOf - 1) / kMultipleOf * kMultipleOf;
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
  if (config.ffn_hidden < 0 || config.max_positions < 0 || config.kv_heads < 0) {
    throw UserError(
        "transformer ffn_hidden, max_positions and kv_heads must be >= 0 (0 = default)");
  }
  if (config.hidden % config.heads != 0) {
    throw UserError("transformer hidden (" + std::to_string(config.hidden) +
                        ") must be divisible by heads (" + std::to_string(config.heads) + ")",
                    "each head gets hidden / heads dimensions");
  }
  const int kv_heads = config.kv_heads > 0 ? config.kv_heads : config.heads;
  if (kv_heads > config.heads || config.heads % kv_heads != 0) {
    throw UserError("transformer heads (" + std::to_string(config.heads) +
                        ") must be a multiple of kv_heads (" + std::to_string(kv_heads) + ")",
                    "each key/value head serves heads / kv_heads query heads");
  }
  const bool rotary = config.positions == PositionKind::kRotary;
  if (rotary && config.max_positions > 0) {
    throw UserError("transformer max_positions is the learned position table's size, and "
                    "positions: rotary has no table",
                    "remove max_positions, or use positions: learned");
  }
  if (rotary && (config.hidden / config.heads) % 2 != 0) {
    throw UserError("rotary positions rotate pairs of features, and the head size hidden / "
                    "heads = " + std::to_string(config.hidden / config.heads) + " is odd");
  }
  Dims d;
  d.layers = config.layers;
  d.seq = config.sequence;
  d.hidden = config.hidden;
  d.heads = config.heads;
  d.kv_heads = kv_heads;
  d.mlp = config.mlp;
  d.ffn = config.ffn_hidden > 0          ? config.ffn_hidden
          : config.mlp == MlpKind::kGelu ? 4 * d.hidden
                                         : LlamaFfn(d.hidden);
  d.vocab = config.vocab;
  d.positions = rotary ? 0 : config.max_positions > 0 ? config.max_positions : d.seq;
  d.causal = config.causal;
  d.norm = config.norm;
  d.rotary = rotary;
  d.bias = config.bias;
  d.dropout = config.dropout;
  d.attention = config.attention;
  d.attention_kernel = config.attention_kernel;
  if (config.experts != 0) ResolveExperts(config, &d);
  if (!rotary && d.seq > d.positions) {
    throw UserError("transformer sequence (" + std::to_string(d.seq) +
                        ") exceeds max_positions (" + std::to_string(d.positions) + ")",
                    "the learned position table has max_positions rows");
  }
  return d;
}

Tensor Embeddings(GraphBuilder& b, const Tensor& tokens, const Dims& d,
                  const EmbeddingOptions& options) {
  // Position and token-type tables read the token ids only for their shape.
  Tensor h = b.Embedding("embed.tokens", tokens, d.vocab, d.hidden);
  if (!d.rotary) {
    const Tensor positions = b.Embedding("embed.positions", tokens, d.positions, d.hidden,
                                         EmbeddingIds::kPositions);
    h = b.Add("embed.add_positions", h, positions);
  }
  if (options.token_types > 0) {
    const Tensor types = b.Embedding("embed.token_types", tokens, options.token_types, d.hidden,
                                       EmbeddingIds::kZeros);
    h = b.Add("embed.add_token_types", h, types);
  }
  if (options.layer_norm) h = Norm(b, "embed.ln", h, d);
  return d.dropout ? b.Dropout("embed.dropout", h) : h;
}

Tensor Norm(GraphBuilder& b, const std::string& name, const Tensor& x, const Dims& d) {
  if (d.norm == NormKind::kRmsNorm) return b.RmsNorm(name, x);
  return b.LayerNorm(name, x, {.bias = d.bias});
}

Tensor Mlp(GraphBuilder& b, const std::string& prefix, const Tensor& x, const Dims& d,
           std::int64_t ffn) {
  return MlpImpl(b, prefix, x, d, ffn);
}

Tensor Block(GraphBuilder& b, const std::string& prefix, const Tensor& x, const Dims& d,
             LayerNormPlacement placement, BlockMlp mlp) {
  const Tensor h = Residual(b, prefix + "attn.", x, d, placement, [&](const Tensor& in) {
    return Attention(b, prefix + "attn.", in, d);
  });
  return Residual(b, prefix + "mlp.", h, d, placement, [&](const Tensor& in) {
    return mlp == BlockMlp::kExperts ? MoeMlp(b, prefix, in, d)
                                     : MlpImpl(b, prefix + "mlp.", in, d, d.ffn);
  });
}

}  // namespace dtsim::models::transformer

namespace dtsim::models {

const char* MlpKindName(MlpKind kind) {
  switch (kind) {
    case MlpKind::kGelu: return "gelu";
    case MlpKind::kSwiglu: return "swiglu";
    case MlpKind::kGeglu: return "geglu";
  }
  return "";
}

const char* NormKindName(NormKind kind) {
  return kind == NormKind::kRmsNorm ? "rmsnorm" : "layernorm";
}

const char* PositionKindName(PositionKind kind) {
  return kind == PositionKind::kRotary ? "rotary" : "learned";
}

const char* AttentionKindName(AttentionKind kind) {
  return kind == AttentionKind::kFlash ? "flash" : "eager";
}

}  // namespace dtsim::models
