// Grouping of a model's ops into "layer units": the granularity at which a
// pipeline partitioner cuts a model and at which full activation
// recomputation keeps checkpoints.
//
// A unit is a maximal run of consecutive ops (index order, which is a
// topological order) that share a unit name. The unit name of an op is its
// name up to the second '.' when the second dot-separated component is a
// number, else up to the first '.':
//   "layer1.0.conv1" -> "layer1.0"   (ResNet stage 1, block 0)
//   "layer0.attn.ln" -> "layer0"     (transformer block 0)
//   "embed.tokens"   -> "embed"
//   "conv1"          -> "conv1"      (no '.': the whole name)
// Names of torch.onnx exports are scoped by '/': the unit is the path up to
// the first component that ends in ".<number>" (an entry of a module list),
// else the first component:
//   "/encoder/layers.0/self_attn/MatMul" -> "/encoder/layers.0"
//   "/h.0/mlp/mlp.0/MatMul"              -> "/h.0"
//   "/layer3/layer3.0/conv1/Conv"        -> "/layer3/layer3.0"
//   "/wte/Gather"                        -> "/wte"
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/graph.h"

namespace dtsim::plan {

struct LayerUnit {
  std::string name;        // unit name shared by its ops, e.g. "layer3"
  models::OpId begin = 0;  // first op of the unit
  models::OpId end = 0;    // one past the last op: the unit is [begin, end)
};

// The unit name of one op name, as described above.
std::string LayerUnitName(std::string_view op_name);

// The units of `graph` in op index order. Consecutive units have different
// names; they cover [0, graph.num_ops()) without gaps. A name that comes back
// after a different one starts a new unit (units need not have unique names).
std::vector<LayerUnit> LayerUnits(const models::ModelGraph& graph);

// Attention's core in each attention block of `graph`: the ops from
// "<prefix>scores" (Q K^T) to "<prefix>context" (attention over V), softmax
// and its dropout between, as [scores, context + 1) in op order. What
// Megatron-LM's selective recomputation re-runs (Korthikanti et al. 2022,
// §5: "core attention"). A fused attention op (models::OpKind::kAttention,
// FlashAttention) is a core of its own, [op, op + 1): Megatron-LM
// checkpoints core attention whatever its kernel, and re-running a fused
// kernel frees only its per-row statistics (sim/memory.h). Empty for models
// without such blocks.
std::vector<std::pair<models::OpId, models::OpId>> AttentionCores(const models::ModelGraph& graph);

}  // namespace dtsim::plan
