#include "plan/tensor_parallel.h"

#include <string_view>

namespace dtsim::plan {
namespace {

using models::OpKind;

// The last dot-separated component of `name` ("layer3.attn.qkv" -> "qkv").
std::string_view LastPart(std::string_view name) {
  const std::size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

// The component before the last one ("layer3.attn.qkv" -> "attn"), or ""
// when the name has no dot.
std::string_view Sublayer(std::string_view name) {
  const std::size_t last = name.rfind('.');
  if (last == std::string_view::npos) return {};
  const std::size_t before = name.rfind('.', last - 1);
  const std::size_t begin = before == std::string_view::npos || last == 0 ? 0 : before + 1;
  return name.substr(begin, last - begin);
}

struct Rule {
  std::string_view sublayer;  // "" = the whole name must equal `part`
  std::string_view part;
  OpKind kind;
  TpCollective collective;
  // Only when the op's first input is per token (rank >= 2, S x V logits):
  // tells a language model's loss from a classifier's "loss" (ResNet's).
  bool token_input = false;
};

// Every split op of the zoo's transformers (see the header's diagram).
constexpr Rule kSplitOps[] = {
    {"attn", "qkv", OpKind::kDense, TpCollective::kAfterBackwardInput},
    {"attn", "q_slice", OpKind::kReshape, TpCollective::kNone},
    {"attn", "k_slice", OpKind::kReshape, TpCollective::kNone},
    {"attn", "v_slice", OpKind::kReshape, TpCollective::kNone},
    {"attn", "q", OpKind::kReshape, TpCollective::kNone},
    {"attn", "k", OpKind::kReshape, TpCollective::kNone},
    {"attn", "v", OpKind::kReshape, TpCollective::kNone},
    {"attn", "q_rotary", OpKind::kRotary, TpCollective::kNone},
    {"attn", "k_rotary", OpKind::kRotary, TpCollective::kNone},
    {"attn", "core", OpKind::kAttention, TpCollective::kNone},
    {"attn", "k_repeat", OpKind::kReshape, TpCollective::kNone},
    {"attn", "v_repeat", OpKind::kReshape, TpCollective::kNone},
    {"attn", "scores", OpKind::kMatMul, TpCollective::kNone},
    {"attn", "softmax", OpKind::kSoftmax, TpCollective::kNone},
    {"attn", "probs_dropout", OpKind::kDropout, TpCollective::kNone},
    {"attn", "context", OpKind::kMatMul, TpCollective::kNone},
    {"attn", "merge_heads", OpKind::kReshape, TpCollective::kNone},
    {"attn", "proj", OpKind::kDense, TpCollective::kAfterForward},
    {"mlp", "fc1", OpKind::kDense, TpCollective::kAfterBackwardInput},
    {"mlp", "gelu", OpKind::kGelu, TpCollective::kNone},
    {"mlp", "gate", OpKind::kReshape, TpCollective::kNone},
    {"mlp", "up", OpKind::kReshape, TpCollective::kNone},
    {"mlp", "silu", OpKind::kSilu, TpCollective::kNone},
    {"mlp", "mul", OpKind::kMul, TpCollective::kNone},
    {"mlp", "fc2", OpKind::kDense, TpCollective::kAfterForward},
    // Mixture of experts: the routed experts' MLP (each expert split as
    // the dense MLP, Megatron-LM's expert tensor parallelism equal to t)
    // and the shared experts' MLP.
    {"experts", "fc1", OpKind::kDense, TpCollective::kAfterBackwardInput},
    {"experts", "gelu", OpKind::kGelu, TpCollective::kNone},
    {"experts", "gate", OpKind::kReshape, TpCollective::kNone},
    {"experts", "up", OpKind::kReshape, TpCollective::kNone},
    {"experts", "silu", OpKind::kSilu, TpCollective::kNone},
    {"experts", "mul", OpKind::kMul, TpCollective::kNone},
    {"experts", "fc2", OpKind::kDense, TpCollective::kAfterForward},
    {"shared", "fc1", OpKind::kDense, TpCollective::kAfterBackwardInput},
    {"shared", "gelu", OpKind::kGelu, TpCollective::kNone},
    {"shared", "gate", OpKind::kReshape, TpCollective::kNone},
    {"shared", "up", OpKind::kReshape, TpCollective::kNone},
    {"shared", "silu", OpKind::kSilu, TpCollective::kNone},
    {"shared", "mul", OpKind::kMul, TpCollective::kNone},
    {"shared", "fc2", OpKind::kDense, TpCollective::kAfterForward},
    {"embed", "tokens", OpKind::kEmbedding, TpCollective::kAfterForward},
    {"", "lm_head", OpKind::kDense, TpCollective::kAfterBackwardInput},
    {"", "loss", OpKind::kSoftmaxCrossEntropy, TpCollective::kNone, true},
    {"mlm", "decoder", OpKind::kDense, TpCollective::kAfterBackwardInput},
    {"mlm", "loss", OpKind::kSoftmaxCrossEntropy, TpCollective::kNone, true},
};

const Rule* FindRule(const models::Op& op) {
  const std::string_view name = op.name;
  for (const Rule& rule : kSplitOps) {
    if (rule.kind != op.kind) continue;
    if (rule.token_input && (op.input_shapes.empty() || op.input_shapes[0].size() < 2)) continue;
    const bool match = rule.sublayer.empty()
                           ? name == rule.part
                           : LastPart(name) == rule.part && Sublayer(name) == rule.sublayer;
    if (match) return &rule;
  }
  return nullptr;
}

}  // namespace

bool IsTensorParallelSplit(const models::Op& op) { return FindRule(op) != nullptr; }

TpCollective TensorParallelCollective(const models::Op& op) {
  const Rule* rule = FindRule(op);
  return rule == nullptr ? TpCollective::kNone : rule->collective;
}

bool TensorParallelSplitsOutput(const models::Op& op) {
  const Rule* rule = FindRule(op);
  return rule != nullptr && rule->collective != TpCollective::kAfterForward;
}

bool TensorParallelSplitsSavedActivations(const models::Op& op) {
  const Rule* rule = FindRule(op);
  return rule != nullptr && rule->collective != TpCollective::kAfterBackwardInput &&
         op.kind != OpKind::kEmbedding;
}

bool InSequenceParallelRegion(const models::Op& op) {
  if (op.kind == OpKind::kInput || IsTensorParallelSplit(op)) return false;
  const std::string_view name = op.name;
  const std::string_view sub = Sublayer(name);
  if (sub == "attn" || sub == "mlp") return true;
  if (name == "final_ln") return true;
  return name.starts_with("embed.");
}

double TensorParallelCollectiveElementsPerSample(const models::Op& op) {
  switch (TensorParallelCollective(op)) {
    case TpCollective::kAfterForward:
      return static_cast<double>(models::NumElements(op.output_shape));
    case TpCollective::kAfterBackwardInput:
      return op.input_shapes.empty() ? 0.0
                                     : static_cast<double>(models::NumElements(op.input_shapes[0]));
    case TpCollective::kNone:
      break;
  }
  return 0.0;
}

}  // namespace dtsim::plan
