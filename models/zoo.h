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

// A GPT/BERT-style transformer. Covers GPT-2, GPT-3 family and Megatron
// configurations. Zero-valued optional fields take the documented default.
struct TransformerConfig {
  int layers = 12;
  int hidden = 768;
  int heads = 12;
  int sequence = 1024;      // tokens per sample
  int vocab = 50257;
  int ffn_hidden = 0;       // default 4 * hidden
  int max_positions = 0;    // learned position table rows; default = sequence
  bool tied_embeddings = true;  // LM head shares the token embedding
  bool causal = true;       // GPT (true) or BERT (false) attention mask
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
