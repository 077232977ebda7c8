// Staleness and pace of asynchronous parameter-server runs.
#pragma once

#include <vector>

#include "plan/plan.h"
#include "sim/engine/engine.h"
#include "sim/statistics.h"

namespace dtsim::sim {

// Asynchronous parameter-server runs: how stale the applied updates are and
// how fast each worker goes.
struct AsyncFigures {
  // Updates applied to the same shard between a worker's pull and the
  // application of its push, over all applied updates.
  Summary staleness;
  double global_steps_per_s = 0;           // updates per second, all workers
  std::vector<double> worker_steps_per_s;  // per worker
  std::vector<int> worker_steps;           // steps each worker completed
};

// From a run of a parameter-server plan: staleness of every server update,
// and each worker's pace over its iterations from `first` on.
AsyncFigures ComputeAsyncFigures(const plan::Plan& plan, const EngineResult& result, int first);

}  // namespace dtsim::sim
