#include "plan/compute_tasks.h"

#include <span>
#include <vector>

namespace dtsim::plan {

double OutputBytes(const models::ModelGraph& graph, models::OpId v, int batch) {
  const models::Op& op = graph.op(v);
  return static_cast<double>(models::NumElements(op.output_shape)) * batch *
         models::DTypeBytes(op.dtype);
}

bool IsFreeOp(const models::Op& op) {
  return op.kind == models::OpKind::kInput ||
         (op.kind == models::OpKind::kReshape && !models::IsCopyView(op.attrs.view));
}

StepTasks AddStepTasks(Plan* plan, const models::ModelGraph& graph, RankId rank, int iteration,
                       int batch, std::span<const TaskId> first_deps,
                       const std::function<void(models::OpId, TaskId)>& on_weight_grad,
                       const RecomputeRanges& recompute,
                       const std::function<TaskId(models::OpId, bool)>& gathered) {
  // The op's gather (or none) and the step's first dependencies, as the
  // dependency list of its first task in a pass.
  std::vector<TaskId> deps;
  const auto with_gather = [&](models::OpId v, bool forward, std::span<const TaskId> base) {
    deps.assign(base.begin(), base.end());
    if (gathered && graph.op(v).HasParams())
      if (const TaskId g = gathered(v, forward); g >= 0) deps.push_back(g);
    return std::span<const TaskId>(deps);
  };
  StepTasks step;
  Task t;
  t.rank = rank;
  t.iteration = iteration;
  t.batch = batch;
  t.stream = StreamKind::kCompute;
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    if (IsFreeOp(graph.op(v))) continue;
    t.kind = TaskKind::kForward;
    t.op = static_cast<std::int32_t>(v);
    step.last = plan->AddTask(
        t, with_gather(v, true, step.first < 0 ? first_deps : std::span<const TaskId>{}));
    if (step.first < 0) step.first = step.last;
  }
  std::size_t next_range = recompute.size();  // ranges are taken last to first
  for (models::OpId v = graph.num_ops(); v-- > 0;) {
    const models::Op& op = graph.op(v);
    // Entering a recomputed range from above: its forward runs again first.
    while (next_range > 0 && recompute[next_range - 1].first > v) --next_range;
    if (next_range > 0 && recompute[next_range - 1].second == v + 1) {
      const auto [b, e] = recompute[--next_range];
      t.kind = TaskKind::kForward;
      for (models::OpId x = b; x < e; ++x) {
        if (IsFreeOp(graph.op(x))) continue;
        t.op = static_cast<std::int32_t>(x);
        step.last = plan->AddTask(t, with_gather(x, false, {}));
      }
    }
    if (IsFreeOp(op)) continue;
    t.op = static_cast<std::int32_t>(v);
    bool first_of_op = true;
    if (!graph.ReadsOnlyGraphInputs(v)) {
      t.kind = TaskKind::kBackwardInput;
      step.last = plan->AddTask(t, with_gather(v, false, {}));
      first_of_op = false;
    }
    if (op.HasParams()) {
      t.kind = TaskKind::kBackwardWeight;
      step.last = plan->AddTask(t, first_of_op ? with_gather(v, false, {}) : std::span<const TaskId>{});
      if (on_weight_grad) on_weight_grad(v, step.last);
    }
  }
  return step;
}

}  // namespace dtsim::plan
