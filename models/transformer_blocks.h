// Pieces shared by the GPT-style (pre-LN) and BERT-style (post-LN)
// transformers: embeddings, self-attention, MLP and the residual wrapper.
// Internal to models/; the public entry points are BuildTransformer (zoo.h)
// and the BERT zoo entries.
//
// Shapes per sample: S = sequence, H = hidden, A = heads, G = key/value
// heads, D = H / A, F = MLP hidden, V = vocab.
#pragma once

#include <cstdint>
#include <string>

#include "models/graph_builder.h"
#include "models/zoo.h"

namespace dtsim::models::transformer {

// Where each sublayer's layer norm sits.
enum class LayerNormPlacement {
  kPre,   // GPT-2/3, Megatron: x + Dropout(F(LN(x))), final LN after the last block
  kPost,  // BERT, original Transformer: LN(x + Dropout(F(x)))
};

// A TransformerConfig with its defaults filled in and checked.
struct Dims {
  std::int64_t layers = 0;
  std::int64_t seq = 0;        // S
  std::int64_t hidden = 0;     // H
  std::int64_t heads = 0;      // A
  std::int64_t kv_heads = 0;   // G, divides A
  std::int64_t ffn = 0;        // F
  std::int64_t vocab = 0;      // V
  std::int64_t positions = 0;  // rows of the learned position table (>= S); 0 with rotary
  bool causal = false;         // decoder: attention masks future positions
  MlpKind mlp = MlpKind::kGelu;
  NormKind norm = NormKind::kLayerNorm;
  bool rotary = false;         // rotary positions instead of a learned table
  bool bias = true;            // dense layers and layer norms have biases
  bool dropout = true;         // dropout ops present
  AttentionKind attention = AttentionKind::kEager;
  AttentionKernel attention_kernel = AttentionKernel::kDefault;
  // Mixture of experts (TransformerConfig's fields); experts 0 = none.
  std::int64_t experts = 0;        // E
  std::int64_t top_k = 0;          // k
  std::int64_t expert_ffn = 0;     // F_e
  std::int64_t shared_experts = 0;
  std::int64_t dense_layers = 0;   // leading layers with a dense MLP
  std::int64_t routed_rows = 0;    // R = ceil(capacity_factor x k x S), rows per sample
  double expert_load_skew = 1.0;
};

// Which MLP a block has.
enum class BlockMlp {
  kDense,    // Mlp: one MLP of width F
  kExperts,  // MoeMlp: router, routed and shared experts
};

// Fills defaults (ffn = 4 H, or Llama's rule for gated MLPs; positions = S;
// kv_heads = A) and throws UserError naming the field when a size is not
// positive, H is not divisible by A, A not by kv_heads, S exceeds
// max_positions, or max_positions is given with rotary positions.
// Rotary positions need an even head size D (each pair of features is
// rotated).
Dims Resolve(const TransformerConfig& config);

// Token ids (S) -> (S, H): token + learned position (+ token-type when
// token_types > 0) embeddings summed, then (optionally) LN, then dropout
// (each when the dims have them; rotary positions have no table).
struct EmbeddingOptions {
  std::int64_t token_types = 0;  // BERT's segment table rows; 0 = none
  bool layer_norm = false;       // BERT normalises the summed embeddings
};
Tensor Embeddings(GraphBuilder& b, const Tensor& tokens, const Dims& d,
                  const EmbeddingOptions& options);

// The layer norm of the dims' kind (and bias) on the last dimension.
Tensor Norm(GraphBuilder& b, const std::string& name, const Tensor& x, const Dims& d);

// One block (self-attention sublayer, then MLP sublayer) on x (S, H), with
// ops named prefix + "attn.qkv" etc. (the names plan/tensor_parallel.cc
// splits by).
Tensor Block(GraphBuilder& b, const std::string& prefix, const Tensor& x, const Dims& d,
             LayerNormPlacement placement, BlockMlp mlp = BlockMlp::kDense);

// The position-wise MLP of width `ffn` on x (S, H), ops named prefix +
// "fc1" etc.
Tensor Mlp(GraphBuilder& b, const std::string& prefix, const Tensor& x, const Dims& d,
           std::int64_t ffn);

// The mixture-of-experts MLP on x (S, H) (models/transformer_moe.cc), ops
// named after `layer` ("layer3."): see there.
Tensor MoeMlp(GraphBuilder& b, const std::string& layer, const Tensor& x, const Dims& d);

// Fills and checks the mixture-of-experts fields of `d` from `config`
// (experts > 0 only); throws UserError naming the field.
void ResolveExperts(const TransformerConfig& config, Dims* d);

}  // namespace dtsim::models::transformer
