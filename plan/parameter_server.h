// Builds parameter-server plans (TensorFlow's distributed runtime): the
// variables are sharded evenly over S server tasks; every step each worker
// pulls every shard, runs forward and backward, and pushes its update to
// every shard's server, which aggregates and applies it.
//
//   synchronous: server s waits for k of the n workers' pushes of the step
//                (k = replicas_to_aggregate; the n - k slowest are dropped),
//                applies them once, and the next step's pulls wait for that.
//   asynchronous: each push is applied on its own as it arrives, and each
//                worker pulls again as soon as its own push was applied.
//
// With averaging_period H > 1 (local SGD over servers) workers update their
// own replica every step and push parameters / pull the average only every
// H steps.
//
// Shards: the variables placed on the S servers by
// ParameterServerOptions::placement (plan/ps_placement.h); server s's pulls
// and pushes carry the bytes it holds, and the plan records its spans of
// the flat parameter buffer (Plan::server_params), which
// exec/runtime/ps_runner.h exchanges.
#pragma once

#include "models/graph.h"
#include "plan/data_parallel.h"
#include "plan/plan.h"
#include "plan/ps_placement.h"

namespace dtsim::plan {

struct ParameterServerOptions {
  int batch_per_rank = 32;   // per worker, >= 1
  int iterations = 1;        // per worker, >= 1
  int servers = 1;           // >= 1
  // true: server s on an extra node of its own (node = worker nodes + s);
  // false: server s on worker node s % nodes, after that node's devices.
  bool dedicated = true;
  bool asynchronous = false;
  int replicas_to_aggregate = 0;  // synchronous only; 0 = all workers
  bool push_parameters = false;   // payload: parameters (averaging) or gradients
  int averaging_period = 1;       // push/pull every H steps; H > 1 = local SGD
  RecomputeRanges recompute;      // activation recomputation (compute_tasks.h)
  // Hierarchical servers (config::ParameterServerConfig::aggregate_in_machine):
  // a reduce-scatter over each node's devices before the pushes, an
  // all-gather after the pulls; each device pushes and pulls 1/g of every
  // shard. Synchronous, every worker aggregated.
  bool aggregate_in_node = false;
  bool aggregate_on_host = false;  // ... summed by the host (Collective::via_host)
  // Gradient pushes start as soon as the backward has produced their shard:
  // the weight gradient of the first op (in graph order) holding one of
  // the server's pieces, which the backward computes last among them
  // (TensorFlow sends each variable's gradient when it is computed).
  // false, or parameter pushes, or aggregation in the machine: every push
  // after the whole step.
  bool overlap = false;
  // Which server holds which variables (plan/ps_placement.h).
  PsPlacementSpec placement;
};

// Ranks: workers 0..n-1 (node-major, as in data parallel), then servers
// n..n+S-1 with RankRole::kServer. The plan's sync section (plan/sync.h)
// holds H, what the pushes carry (parameters with H > 1 or
// push_parameters) and the servers' placement and aggregation; it has no
// gradient buckets.
Plan BuildParameterServerPlan(const models::ModelGraph& graph, const ClusterShape& workers,
                              const ParameterServerOptions& options);

}  // namespace dtsim::plan
