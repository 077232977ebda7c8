// Context parallelism's communication in a simulated run: the ring's K/V
// sends or Ulysses' all-to-alls (plan/context_parallel.h), their time per
// step and the part of it no compute hides.
#pragma once

#include "plan/plan.h"
#include "sim/engine/engine.h"
#include "sim/metrics.h"

namespace dtsim::sim {

struct ContextComm {
  int degree = 1;        // c; 1 = no context parallelism (the rest 0)
  double comm_s = 0;     // per step, mean over materialized workers: time with a CP transfer running
  double exposed_s = 0;  // of comm_s: while the device's compute stream is idle
  double bytes = 0;      // per step and worker: bytes the worker sends to its context peers
};

// The figures over the iterations `metrics` measured, for a hybrid plan of
// `tensor_parallel` t and `context_parallel` c. A transfer is the context
// group's when it stays within a block of c x t consecutive ranks (a stage
// of one replica): a send to another rank of the block, or an all-to-all
// whose group lies in it. Per-step figures are means over the measured
// iterations. c = 1 returns {}.
ContextComm ComputeContextComm(const plan::Plan& plan, const EngineResult& result,
                               const RunMetrics& metrics, int tensor_parallel, int context_parallel);

}  // namespace dtsim::sim
