// What a real run of a plan needs in memory, per rank, before it starts:
// `dtsim exec` refuses a plan that does not fit instead of ending in
// std::bad_alloc halfway.
#pragma once

#include <cstdint>

#include "exec/runtime/plan_executor.h"
#include "models/graph.h"
#include "plan/plan.h"

namespace dtsim::exec {

// Bytes one rank allocates, by what for (float32 buffers throughout).
struct RankMemory {
  // Workers: the stage's parameters (with copies of shared tables) and
  // gradients. Servers: their shard's, plus the whole model's initial
  // values, which they build once to take their shard from.
  double parameters = 0;
  double optimizer = 0;    // momentum (1 x), Adam (2 x) the parameters updated here
  // Workers: every micro-batch slot's activations, their gradients and the
  // ops' scratch (ModelRuntime::BufferFloats less the parameters).
  // Servers: the receive and sum buffers and one pull payload per worker.
  double activations = 0;
  // Host copies of parameters and optimizer state while a checkpoint is
  // saved (0 without checkpoints).
  double checkpoint = 0;

  double total() const { return parameters + optimizer + activations + checkpoint; }
};

// The memory `rank` of `plan` needs to run with `options` (the buffers
// PlanExecutor, ModelRuntime, Optimizer and the parameter servers allocate;
// the data set's, the messages' and the libraries' small buffers aside).
RankMemory EstimateRankMemory(const plan::Plan& plan, const models::ModelGraph& graph,
                              const ExecOptions& options, plan::RankId rank);

}  // namespace dtsim::exec
