// The compute tasks of one training step of a whole model on one rank,
// shared by the plan builders.
#pragma once

#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "models/graph.h"
#include "plan/plan.h"

namespace dtsim::plan {

// True for ops that cost nothing at run time and get no task (graph inputs,
// views).
bool IsFreeOp(const models::Op& op);

// Bytes of op `v`'s output for `batch` samples (what a pipeline stage ending
// at `v` sends on).
double OutputBytes(const models::ModelGraph& graph, models::OpId v, int batch);

struct StepTasks {
  TaskId first = -1;  // the first forward task
  TaskId last = -1;   // the last backward task
};

// Op ranges [begin, end) whose forward backward re-runs (full activation
// recomputation, Chen et al. 2016 "Training Deep Nets with Sublinear Memory
// Cost"; PyTorch's torch.utils.checkpoint): forward keeps only each range's
// input, and just before the backward of the range's last op, the range's
// forward runs again. Ranges are disjoint, ascending.
using RecomputeRanges = std::vector<std::pair<models::OpId, models::OpId>>;

// Adds, on `rank`'s compute stream, the forward of every op in topological
// order, then the backward in reverse order: for each op its input
// gradient (unless it reads only graph inputs) and its weight gradient (if it
// has parameters), with the forward of each of `recompute` re-run before
// its backward. The first forward task depends on `first_deps`;
// `on_weight_grad(op, task)` is called for each weight-gradient task.
// `gathered(op, forward)`, when given, names a task the op's first task of
// that pass (its forward; its input or weight gradient) also waits for, or
// -1: FSDP's all-gather of the op's parameters (plan/data_parallel.h).
StepTasks AddStepTasks(Plan* plan, const models::ModelGraph& graph, RankId rank, int iteration,
                       int batch, std::span<const TaskId> first_deps,
                       const std::function<void(models::OpId, TaskId)>& on_weight_grad = {},
                       const RecomputeRanges& recompute = {},
                       const std::function<TaskId(models::OpId, bool)>& gathered = {});

}  // namespace dtsim::plan
