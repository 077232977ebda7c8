// Op profiling: runs a model's training step for real on a Backend, op by
// op as `dtsim exec` runs it (ModelRuntime: every op's forward in graph
// order, then every backward in reverse order, then the optimizer step and
// the zeroing of gradients), timing each call, and turns the times into
// op-cost table entries (config/op_cost_table.h). `dtsim profile` drives it.
//
// Ops are timed in place, inside whole steps, so that each sees the caches
// a training step leaves it (its input just written by its producer, its
// weights cold). Ops with the same signature (ResNet's repeated blocks) are
// one entry over all their calls: occurrences x timed steps runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/op_cost_table.h"
#include "exec/backend.h"
#include "exec/runtime/optimizer.h"
#include "models/graph.h"

namespace dtsim::exec {

struct OpProfileOptions {
  std::int64_t batch = 32;  // samples per step, >= 1
  int warmup_steps = 1;     // untimed steps first (allocation, first touches), >= 0
  int timed_steps = 5;      // steps whose calls are timed, at least, >= 1
  // More timed steps, up to max_steps, until they add up to this many
  // seconds: short steps are noisier. 0 = exactly timed_steps.
  double min_timed_seconds = 0;
  int max_steps = 50;
  OptimizerOptions optimizer;
  std::uint64_t seed = 1;   // parameters and the synthetic batch
  // Copies of the training step that run at once, each on its own thread
  // and backend (from make_backend), in lockstep, step by step: the timed
  // one sees the machine as shared as the job's ranks share it (memory
  // bandwidth, caches, sibling hyper-threads). 1 = alone.
  int concurrent = 1;
  std::function<std::unique_ptr<Backend>()> make_backend;  // REQUIRED when concurrent > 1
};

struct OpProfile {
  std::vector<config::OpCostEntry> entries;  // graph order of first occurrence
  config::OptimizerCost optimizer;           // step + zeroing of the gradients
  double step_s = 0;  // median wall time of a whole timed step
};

// Called after each step with its 1-based index, the steps planned so far
// (warm-up included; grows while min_timed_seconds is not reached) and the
// step's wall seconds.
using OpProfileProgress = std::function<void(int step, int total, double seconds)>;

// Profiles every op of `graph` at options.batch. Throws UserError when an
// op has no kernels here (ModelRuntime::UnsupportedOps).
OpProfile ProfileOps(const models::ModelGraph& graph, Backend& backend,
                     const OpProfileOptions& options, const OpProfileProgress& progress);

}  // namespace dtsim::exec
