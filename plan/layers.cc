#include "plan/layers.h"

#include <algorithm>
#include <optional>

namespace dtsim::plan {
namespace {

bool IsNumber(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string LayerUnitName(std::string_view op_name) {
  // torch.onnx's scoped names ("/encoder/layers.0/self_attn/MatMul",
  // "/layer3/layer3.0/conv1/Conv"): up to the first component that ends in
  // ".<number>" (a module list's entry), else the first component.
  if (op_name.starts_with('/')) {
    std::size_t start = 1;
    while (start <= op_name.size()) {
      std::size_t end = op_name.find('/', start);
      if (end == std::string_view::npos) end = op_name.size();
      const std::string_view part = op_name.substr(start, end - start);
      const std::size_t dot = part.rfind('.');
      if (dot != std::string_view::npos && IsNumber(part.substr(dot + 1)))
        return std::string(op_name.substr(0, end));
      start = end + 1;
    }
    const std::size_t end = op_name.find('/', 1);
    return std::string(op_name.substr(0, end));
  }
  const std::size_t first = op_name.find('.');
  if (first == std::string_view::npos) return std::string(op_name);
  const std::size_t second = op_name.find('.', first + 1);
  const std::string_view second_part = op_name.substr(
      first + 1, second == std::string_view::npos ? std::string_view::npos : second - first - 1);
  if (IsNumber(second_part)) return std::string(op_name.substr(0, second));
  return std::string(op_name.substr(0, first));
}

std::vector<LayerUnit> LayerUnits(const models::ModelGraph& graph) {
  std::vector<LayerUnit> units;
  for (models::OpId id = 0; id < graph.num_ops(); ++id) {
    std::string name = LayerUnitName(graph.op(id).name);
    if (units.empty() || units.back().name != name) {
      units.push_back(LayerUnit{std::move(name), id, id + 1});
    } else {
      units.back().end = id + 1;
    }
  }
  return units;
}

namespace {

// The op feeding `v`'s first input past views and element-wise scaling
// (reshape, mul, div, add of a mask); none within 4 hops or at an input.
std::optional<models::OpId> ProducerPastViews(const models::ModelGraph& g, models::OpId v) {
  for (int hops = 0; hops < 4; ++hops) {
    const std::vector<models::OpId> in = g.inputs(v);
    if (in.empty()) return std::nullopt;
    v = in.front();
    const models::OpKind k = g.op(v).kind;
    if (k != models::OpKind::kReshape && k != models::OpKind::kMul && k != models::OpKind::kAdd)
      return v;
  }
  return std::nullopt;
}

// Attention's core found by its structure, for graphs whose names say
// nothing (ONNX imports): a softmax whose input comes from a matmul (Q K^T,
// past views and scaling) and whose output, past a dropout, feeds a matmul
// (attention over V): [first matmul, second matmul + 1).
std::optional<std::pair<models::OpId, models::OpId>> CoreAround(const models::ModelGraph& g,
                                                                models::OpId softmax) {
  const std::optional<models::OpId> found = ProducerPastViews(g, softmax);
  if (!found || g.op(*found).kind != models::OpKind::kMatMul) return std::nullopt;
  const models::OpId scores = *found;
  models::OpId probs = softmax;
  for (int hops = 0; hops < 3; ++hops) {
    const std::vector<models::OpId> out = g.consumers(probs);
    if (out.size() != 1) return std::nullopt;
    probs = out.front();
    if (g.op(probs).kind == models::OpKind::kMatMul && probs > scores)
      return std::pair(scores, probs + 1);
    if (g.op(probs).kind != models::OpKind::kDropout && g.op(probs).kind != models::OpKind::kReshape)
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::pair<models::OpId, models::OpId>> AttentionCores(const models::ModelGraph& graph) {
  std::vector<std::pair<models::OpId, models::OpId>> cores;
  bool named = false;
  for (models::OpId v = 0; v < graph.num_ops() && !named; ++v)
    named = graph.op(v).kind == models::OpKind::kMatMul && graph.op(v).name.ends_with("scores");
  if (!named) {
    bool fused = false;
    for (models::OpId v = 0; v < graph.num_ops(); ++v) {
      if (graph.op(v).kind == models::OpKind::kAttention) {
        cores.emplace_back(v, v + 1);
        fused = true;
      }
    }
    if (!fused)
      for (models::OpId v = 0; v < graph.num_ops(); ++v)
        if (graph.op(v).kind == models::OpKind::kSoftmax)
          if (const auto core = CoreAround(graph, v)) cores.push_back(*core);
    if (!cores.empty()) return cores;
  }
  constexpr std::string_view kScores = "scores", kContext = "context";
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    const std::string& name = graph.op(v).name;
    if (graph.op(v).kind == models::OpKind::kAttention) {
      cores.emplace_back(v, v + 1);
      continue;
    }
    if (graph.op(v).kind != models::OpKind::kMatMul || !name.ends_with(kScores)) continue;
    const std::string prefix = name.substr(0, name.size() - kScores.size());
    for (models::OpId w = v + 1; w < graph.num_ops(); ++w) {
      if (graph.op(w).name == prefix + std::string(kContext) &&
          graph.op(w).kind == models::OpKind::kMatMul) {
        cores.emplace_back(v, w + 1);
        break;
      }
      if (!graph.op(w).name.starts_with(prefix)) break;  // left the block
    }
  }
  return cores;
}

}  // namespace dtsim::plan
