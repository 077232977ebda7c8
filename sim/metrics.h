// What a simulated run means for the user: step time, throughput and where
// the time of a step goes on each device.
#pragma once

#include <vector>

#include "plan/plan.h"
#include "sim/engine/engine.h"
#include "sim/statistics.h"

namespace dtsim::sim {

// Per-iteration time on one rank, split three ways that add up to the step:
//   compute_s      its compute stream is busy
//   exposed_comm_s its comm stream is busy and its compute stream is not
//   idle_s         neither (waiting for other ranks, dependencies)
struct Breakdown {
  double compute_s = 0;
  double exposed_comm_s = 0;
  double idle_s = 0;
  double comm_s = 0;  // all comm-stream busy time, overlapped or not
  // Of comm_s, the all-to-all collectives' (expert parallelism's token
  // dispatch and combine), overlapped or not.
  double all_to_all_s = 0;
  // Of the step, how long the compute stream waited for the host to issue
  // its work (host-bound) and for input batches (input-bound): parts of
  // compute_s and idle_s, 0 without a host model or input pipeline.
  double host_wait_s = 0;
  double input_wait_s = 0;
};

struct RunMetrics {
  // Iterations measured: all but the first (warm-up) when there are >= 2.
  int first_measured_iteration = 0;
  int measured_iterations = 0;
  std::vector<double> iteration_end_s;  // global end of each iteration
  double step_time_s = 0;               // mean over measured iterations
  // The distribution of the measured iterations' durations (seconds):
  // p50/p95/p99 as PyTorch's DDP benchmark reports them. Synchronous plans:
  // one sample per measured iteration (end of the global iteration minus
  // the end of the previous one). Asynchronous parameter servers: each
  // worker's own steps, pooled (StepTimesPerWorker). The fast path of
  // symmetric local SGD: the H steps of one averaging round.
  Summary step_times;
  double throughput_samples_per_s = 0;
  Breakdown breakdown;                  // mean over ranks, per iteration
  // Per materialized worker (rank ids in `ranks`), in rank order.
  std::vector<plan::RankId> ranks;
  std::vector<double> compute_utilization;  // compute busy / time
  std::vector<Breakdown> per_rank;          // per iteration
};

// Which iterations to measure; -1 = default (all but the first when there
// are at least two; the last).
struct MetricsWindow {
  int first_iteration = -1;
  int last_iteration = -1;
};

// A worker's iteration ends with the last of its tasks of that iteration;
// the global iteration ends when the last worker's does. Server ranks and
// unmaterialized ranks are not part of the per-rank figures.
RunMetrics ComputeMetrics(const plan::Plan& plan, const EngineResult& result,
                          MetricsWindow window = {});

// The durations of each materialized worker's own iterations `first`
// onwards (end of its iteration i minus the end of its iteration i - 1; a
// worker's iteration ends with its last task of it), pooled in (worker,
// iteration) order: the steps an asynchronous worker sees. REQUIRES: first
// >= 1.
std::vector<double> StepTimesPerWorker(const plan::Plan& plan, const EngineResult& result, int first);

}  // namespace dtsim::sim
