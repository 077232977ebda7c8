// Reading model descriptions from YAML, shared by model files and scenario
// files (a scenario's `model: {transformer: {...}}`).
#pragma once

#include "common/yaml_reader.h"
#include "models/zoo.h"

namespace dtsim::models {

// Reads a transformer mapping (keys layers, hidden, heads, sequence, vocab,
// ffn_hidden, max_positions, tied_embeddings, causal, mlp, norm, positions,
// kv_heads, bias, dropout, attention; absent keys keep
// TransformerConfig's defaults) and checks it is consistent by building it.
// Throws UserError at the offending value.
TransformerConfig ReadTransformerConfig(const YamlValue& v);

}  // namespace dtsim::models
