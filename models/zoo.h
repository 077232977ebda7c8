// The built-in model zoo and the user's own model files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "models/graph.h"

namespace dtsim::models {

struct ZooEntry {
  std::string name;         // key used in scenarios and `dtsim model NAME`
  std::string description;  // one line, with the source of the architecture
};

// Every built-in model, in a fixed order.
std::vector<ZooEntry> ZooEntries();

// Builds a zoo model by name (case-insensitive). Throws UserError naming the
// known models when `name` is unknown.
ModelGraph BuildZooModel(std::string_view name);

// A model file when `name` ends in .yaml, .yml or .onnx (LoadModelFile
// below), else the zoo model of that name (BuildZooModel): what `dtsim
// model NAME` and the Python module's dtsim.model(NAME) take.
ModelGraph BuildModel(std::string_view name);

// The block variants of TransformerConfig. The first value of each is
// GPT-2's (Radford et al. 2019); Llama's are SwiGLU, RMSNorm, rotary, flash
// (Touvron et al. 2023, "Llama 2", §2.2: "we apply pre-normalization using
// RMSNorm, use the SwiGLU activation function, and rotary positional
// embeddings"; grouped-query attention for the larger models).
enum class MlpKind {
  kGelu,    // Dense H -> F, GELU, Dense F -> H
  kSwiglu,  // Dense H -> 2F (gate, up), SiLU(gate) * up, Dense F -> H (Shazeer 2020)
  kGeglu,   // the same with GELU on the gate (Shazeer 2020)
};
enum class NormKind {
  kLayerNorm,  // scale and shift
  kRmsNorm,    // scale only, no mean (Zhang & Sennrich 2019)
};
enum class PositionKind {
  kLearned,  // a table of max_positions x H rows added to the token embedding
  kRotary,   // no table; q and k rotated per position in every layer (Su et al. 2021)
};
enum class AttentionKind {
  kEager,  // Q K^T, softmax, dropout, P V as separate kernels: (A, S, S) tensors
  kFlash,  // one fused kernel (FlashAttention): no S x S tensor stored or kept
};
const char* MlpKindName(MlpKind kind);              // "gelu", "swiglu", "geglu"
const char* NormKindName(NormKind kind);            // "layernorm", "rmsnorm"
const char* PositionKindName(PositionKind kind);    // "learned", "rotary"
const char* AttentionKindName(AttentionKind kind);  // "eager", "flash"

// A GPT/BERT-style transformer. Covers GPT-2, GPT-3 family, Megatron and
// Llama/Mistral configurations. Zero-valued optional fields take the
// documented default; the defaults build GPT-2's blocks.
struct TransformerConfig {
  int layers = 12;
  int hidden = 768;
  int heads = 12;
  int sequence = 1024;      // tokens per sample
  int vocab = 50257;
  // The MLP's inner width F: with a gated MLP the width of each of the gate
  // and up projections (Hugging Face's intermediate_size). 0 = 4 * hidden
  // for gelu; for gated MLPs Llama's rule, 256 * ceil(int(8 * hidden / 3) /
  // 256) (Meta's llama/model.py FeedForward with multiple_of = 256: 11008
  // for hidden 4096).
  int ffn_hidden = 0;
  int max_positions = 0;    // learned position table rows; default = sequence
  bool tied_embeddings = true;  // LM head shares the token embedding
  bool causal = true;       // GPT (true) or BERT (false) attention mask
  MlpKind mlp = MlpKind::kGelu;
  NormKind norm = NormKind::kLayerNorm;
  PositionKind positions = PositionKind::kLearned;
  // Key/value heads G (grouped-query attention, Ainslie et al. 2023; 1 =
  // multi-query); must divide heads. 0 = heads (multi-head attention).
  int kv_heads = 0;
  bool bias = true;         // biases in every dense layer and layer norm (Llama: none)
  // Dropout ops after the embeddings, on the attention probabilities and
  // after each sublayer (GPT-2: 0.1 each); false = none at all (Llama).
  bool dropout = true;
  AttentionKind attention = AttentionKind::kEager;
  // With kFlash: the fused kernel named (`attention: fa2|fa3|cudnn|sdpa`);
  // kDefault (`flash`) leaves it to the framework profile and the GPU.
  AttentionKernel attention_kernel = AttentionKernel::kDefault;

  // Mixture of experts (models/transformer_moe.cc): > 0 replaces the MLP of
  // every layer after the first `dense_layers` by `experts` routed experts
  // (each an MLP of kind `mlp` and width `expert_ffn_hidden`) and a router
  // (Dense H -> E, softmax, top-k) that sends each token to `top_k` of
  // them, plus `shared_experts` experts every token visits. 0 = dense MLPs
  // (every other field below is then ignored).
  int experts = 0;
  int top_k = 2;              // experts per token (Mixtral: 2; DeepSeek-MoE: 6)
  int expert_ffn_hidden = 0;  // each expert's MLP width; 0 = ffn_hidden (resolved)
  int shared_experts = 0;     // DeepSeek-MoE's always-on experts, of expert_ffn_hidden each
  // The first layers keep a dense MLP of width ffn_hidden (DeepSeek's
  // first_k_dense_replace); 0 = every layer has experts.
  int dense_layers = 0;
  // Rows each expert computes over the balanced share of the routed tokens
  // (top_k x sequence / experts per sample): 1 = exactly the routed tokens
  // (no dropping, no padding); > 1 pads the expert buffers (GShard's
  // capacity); < 1 drops the rest. Scales the expert FLOPs, activations and
  // all-to-all bytes.
  double capacity_factor = 1.0;
  // The busiest expert's share of the routed tokens over the mean, as
  // measured (>= 1; at most experts / top_k); 1 = balanced. With expert
  // parallelism the rank holding the busiest expert computes and receives
  // more (plan/expert_parallel.h).
  double expert_load_skew = 1.0;
};

// Throws UserError when the configuration is inconsistent (hidden not
// divisible by heads, non-positive sizes).
ModelGraph BuildTransformer(const TransformerConfig& config, std::string name = "transformer");

// Loads a model described in a YAML file (format in docs/model_file.md), or
// an ONNX file when the path ends in ".onnx" (models/onnx_import.h).
// Throws UserError with file:line:column on bad input.
ModelGraph LoadModelFile(const std::string& path);
// Same, from text; `filename` is only used in messages.
ModelGraph ParseModelYaml(const std::string& text, const std::string& filename);

// The per-layer table printed by `dtsim model NAME`: one row per op with
// kind, output shape, params, forward GFLOPs and activation size per sample,
// then totals.
std::string FormatModelTable(const ModelGraph& graph);

}  // namespace dtsim::models
