// PipeDream (Narayanan et al. 2019, "PipeDream: Generalized Pipeline
// Parallelism for DNN Training", SOSP): asynchronous pipelines whose stages
// are replicated a different number of times, with weight stashing.
//
// Stage s runs on r_s devices (ranks laid out stage by stage: stage 0's
// replicas first). Minibatches enter round-robin (1F1B-RR, §3.3): minibatch
// b runs on replica b mod r_s of every stage s. Each replica admits
// ceil((r_s + ... + r_{p-1}) / r_s) minibatches before its first backward
// (for the input stage this is the paper's NOAM, ceil(workers / input-stage
// replicas)), then alternates one forward and one backward. After each
// backward a replicated stage all-reduces its gradients with the other
// replicas' backward of the same round, and every replica updates its
// weights: an optimizer step per minibatch, no pipeline flush.
//
// Weight stashing (§3.3): a stage keeps one weight version per minibatch in
// flight, so the forward and backward of a minibatch see the same weights;
// the gradient applied at stage s was computed on weights in_flight(s) - 1
// updates old (straight pipeline: p - s - 1; the paper's
// w(t+1) = w(t) - lr grad f(w_1(t-n+1), ..., w_n(t))).
//
// An iteration of the plan is lcm(r_0, ..., r_{p-1}) minibatches, so that
// every replica runs a whole number of them.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "models/graph.h"
#include "plan/data_parallel.h"
#include "plan/hybrid.h"
#include "plan/plan.h"

namespace dtsim::plan {

// Minibatches a replica of `stage` holds at its peak (weight versions it
// stashes): ceil(sum of replicas[stage..] / replicas[stage]).
int PipeDreamInFlight(const std::vector<int>& replicas, int stage);
// Minibatches per plan iteration: lcm of the replica counts.
int PipeDreamRound(const std::vector<int>& replicas);

// `options.chunks` are the p stages' op ranges, `options.stage_replicas`
// their replica counts (adding up to the cluster's devices),
// `options.micro_batch` the minibatch of one replica, `options.iterations`
// plan iterations of PipeDreamRound minibatches each. t = 1, v = 1, no
// recomputation. Every rank is materialized.
Plan BuildPipeDreamPlan(const models::ModelGraph& graph, const ClusterShape& cluster,
                        const HybridOptions& options);

// PipeDream's partitioning algorithm (§3.1), on one level of the cluster:
// layer units in model order, each with its forward + backward seconds for
// one minibatch on one device, its parameter bytes, and the bytes of the
// activation leaving it. A stage of units [i, j) on m replicas takes
//   T(i, j, m) = max(sum compute, sync(sum param bytes, m)) / m
// per minibatch (weight synchronization overlaps the backward), and
// A(j, m), the slowest stage of the best pipeline of units [0, j) on m
// devices, is min over the last stage [i, j) and its replicas m' of
//   max(A(i, m - m'), 2 send(bytes leaving unit i - 1), T(i, j, m')).
struct PipeDreamProblem {
  std::vector<double> compute_s;       // per unit
  std::vector<double> param_bytes;     // per unit
  std::vector<double> boundary_bytes;  // per unit: activation it sends on
  int devices = 1;
  // Seconds to all-reduce `bytes` over `replicas` devices, and to send
  // `bytes` between neighbouring stages.
  std::function<double(double bytes, int replicas)> sync_s;
  std::function<double(double bytes)> send_s;
  // Given replica counts per stage (their number fixes the stages): only
  // the layers are chosen. Empty: stages, layers and replicas are chosen.
  std::vector<int> replicas;
};
struct PipeDreamPartition {
  std::vector<int> units;     // per stage: how many layer units
  std::vector<int> replicas;  // per stage
  double slowest_s = 0;       // the slowest stage's time per minibatch
};
// Exact for the model above: dynamic programming in O(units^2 devices^2)
// (O(units^2 stages) with given replicas). Ties go to fewer stages, then
// to the earliest split.
PipeDreamPartition PlanPipeDream(const PipeDreamProblem& problem);

}  // namespace dtsim::plan
