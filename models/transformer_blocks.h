// Pieces shared by the GPT-style (pre-LN) and BERT-style (post-LN)
// transformers: embeddings, self-attention, MLP and the residual wrapper.
// Internal to models/; the public entry points are BuildTransformer (zoo.h)
// and the BERT zoo entries.
//
// Shapes per sample: S = sequence, H = hidden, A = heads, D = H / A,
// F = MLP hidden, V = vocab.
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
  std::int64_t ffn = 0;        // F
  std::int64_t vocab = 0;      // V
  std::int64_t positions = 0;  // rows of the learned position table (>= S)
  bool causal = false;         // decoder: attention masks future positions
};

// Fills defaults (ffn = 4 H, positions = S) and throws UserError naming the
// field when a size is not positive, H is not divisible by A, or S exceeds
// max_positions.
Dims Resolve(const TransformerConfig& config);

// Token ids (S) -> (S, H): token + position (+ token-type when
// token_types > 0) embeddings summed, then (optionally) LN, then dropout.
struct EmbeddingOptions {
  std::int64_t token_types = 0;  // BERT's segment table rows; 0 = none
  bool layer_norm = false;       // BERT normalises the summed embeddings
};
Tensor Embeddings(GraphBuilder& b, const Tensor& tokens, const Dims& d,
                  const EmbeddingOptions& options);

// One block (self-attention sublayer, then MLP sublayer) on x (S, H), with
// ops named prefix + "attn.qkv" etc.
Tensor Block(GraphBuilder& b, const std::string& prefix, const Tensor& x, const Dims& d,
             LayerNormPlacement placement);

}  // namespace dtsim::models::transformer
