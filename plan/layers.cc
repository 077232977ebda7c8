#include "plan/layers.h"

#include <algorithm>

namespace dtsim::plan {
namespace {

bool IsNumber(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string LayerUnitName(std::string_view op_name) {
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

std::vector<std::pair<models::OpId, models::OpId>> AttentionCores(const models::ModelGraph& graph) {
  std::vector<std::pair<models::OpId, models::OpId>> cores;
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
