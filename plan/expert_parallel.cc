#include "plan/expert_parallel.h"

#include <string_view>

#include "common/error.h"
#include "plan/compute_tasks.h"

namespace dtsim::plan {

bool IsRoutedExpertOp(const models::Op& op) {
  const std::string_view name = op.name;
  const std::size_t last = name.rfind('.');
  if (last == std::string_view::npos || last == 0) return false;
  const std::size_t before = name.rfind('.', last - 1);
  const std::size_t begin = before == std::string_view::npos ? 0 : before + 1;
  return name.substr(begin, last - begin) == "experts";
}

bool HoldsExpertParams(const models::Op& op) {
  return op.kind == models::OpKind::kDense && op.attrs.experts > 0;
}

int ModelExperts(const models::ModelGraph& graph) {
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    const models::Op& op = graph.op(v);
    if (op.kind == models::OpKind::kReshape && op.attrs.view == models::ViewKind::kDispatch)
      return op.attrs.experts;
  }
  return 0;
}

double ExpertLoadFactor(double skew, int experts, int ep) {
  DTSIM_CHECK(ep >= 1 && experts >= ep && experts % ep == 0 && skew >= 1 && skew <= experts,
              "expert load factor of a bad split");
  if (experts == 1) return 1;
  const double e = experts, per_rank = static_cast<double>(experts / ep);
  return (skew + (per_rank - 1) * (e - skew) / (e - 1)) / per_rank;
}

double RoutedLoadFactor(const models::ModelGraph& graph, models::OpId v, int ep) {
  if (ep <= 1 || !IsRoutedExpertOp(graph.op(v))) return 1;
  // Every routed-expert op sits between a dispatch and the combine of its
  // layer, which carries the layer's E and skew.
  for (models::OpId x = v + 1; x < graph.num_ops(); ++x) {
    const models::Op& next = graph.op(x);
    if (next.kind == models::OpKind::kReshape && next.attrs.view == models::ViewKind::kCombine)
      return ExpertLoadFactor(next.attrs.expert_load_skew, next.attrs.experts, ep);
  }
  return 1;
}

models::ModelGraph ExpertParallelShard(const models::ModelGraph& graph, int ep) {
  models::ModelGraph shard = graph;
  if (ep <= 1) return shard;
  for (models::OpId v = 0; v < shard.num_ops(); ++v) {
    models::Op& op = shard.mutable_op(v);
    if (HoldsExpertParams(op)) {
      DTSIM_CHECK(op.attrs.experts % ep == 0 && op.params % op.attrs.experts == 0,
                  "expert parallelism must divide the experts");
      op.params /= ep;
      op.attrs.expert_split = ep;
    }
    const double factor = RoutedLoadFactor(graph, v, ep);
    if (factor == 1) continue;
    op.fwd_flops *= factor;
    op.bwd_input_flops *= factor;
    op.bwd_weight_flops *= factor;
    op.read_elements_per_sample *= factor;
    op.written_elements_per_sample *= factor;
    op.saved_elements_per_sample *= factor;
  }
  return shard;
}

double ExpertAllToAllBytesPerSample(const models::ModelGraph& graph, models::OpId v, int ep) {
  if (ep <= 1) return 0;
  const models::Op& op = graph.op(v);
  const bool dispatch =
      op.kind == models::OpKind::kReshape && op.attrs.view == models::ViewKind::kDispatch;
  const bool last_expert = HoldsExpertParams(op) && IsRoutedExpertOp(op) &&
                           op.output_shape.size() == 2 && v + 1 < graph.num_ops() &&
                           graph.consumers(v).size() == 1 &&
                           graph.op(graph.consumers(v).front()).attrs.view ==
                               models::ViewKind::kCombine &&
                           graph.op(graph.consumers(v).front()).kind == models::OpKind::kReshape;
  if (!dispatch && !last_expert) return 0;
  const int experts = op.attrs.experts;
  return OutputBytes(graph, v, 1) * ExpertLoadFactor(op.attrs.expert_load_skew, experts, ep);
}

}  // namespace dtsim::plan
