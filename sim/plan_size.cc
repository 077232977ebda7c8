#include "sim/plan_size.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/units.h"
#include "plan/layers.h"
#include "plan/tensor_parallel.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

using config::Strategy;

// The factors of the estimate: ranks x iterations x tasks per rank and
// iteration, and the scenario key behind the largest one.
struct Estimate {
  std::int64_t ranks = 1;
  std::int64_t iterations = 1;
  std::int64_t per_rank_iteration = 1;
  std::string ranks_key, iterations_key, per_rank_key;
};

// What sim/simulator.cc builds (MakePlan, Simulate): which ranks it
// materializes and how many iterations it simulates. Every product below is
// of factors < 2^31 and saturates at 2^62 (Mul).
std::int64_t Mul(std::int64_t a, std::int64_t b) {
  constexpr std::int64_t kSaturated = std::int64_t{1} << 62;
  if (a == 0 || b == 0) return 0;
  return a > kSaturated / b ? kSaturated : std::min(kSaturated, a * b);
}

// The least common multiple of `replicas`, saturating at 2^31 (a PipeDream
// round: minibatches per iteration, plan/pipedream.h).
std::int64_t RoundOf(const std::vector<int>& replicas) {
  std::int64_t l = 1;
  for (const int r : replicas) {
    if (r < 1) continue;
    l = std::lcm(l, std::int64_t{r});
    if (l >= (std::int64_t{1} << 31)) return std::int64_t{1} << 31;
  }
  return l;
}

// `replicas`: PipeDream's replicas per stage when known (given, or chosen
// by its planner); else those of the scenario.
// a + b for a, b in [0, 2^62], saturating at 2^62 as Mul does.
std::int64_t Add(std::int64_t a, std::int64_t b) {
  constexpr std::int64_t kSaturated = std::int64_t{1} << 62;
  return a > kSaturated - b ? kSaturated : a + b;
}

// Tasks of one micro-batch on one tensor rank of every stage of a hybrid
// plan (plan/hybrid.cc), at most. With k = p v chunks, f ops whose forward
// output is reduced, b ops whose input gradient is, and with sequence
// parallelism g ops that read the region from outside (an all-gather
// before them): a forward of k + f + g segments and f + g collectives; as
// much again to recompute (selective: one task per attention core); a
// backward of k + b segments and b collectives, with sequence parallelism
// f more segments and b + f more collectives (the gradients' all-gathers,
// the inputs' re-gathers); a send between chunks each way, 2k.
std::int64_t HybridTasksPerMicroBatch(const models::ModelGraph& g, std::int64_t t, std::int64_t k,
                                      bool sp, bool recompute, bool selective) {
  std::int64_t f = 0, b = 0, gathers = 0;
  if (t > 1) {
    for (models::OpId v = 0; v < g.num_ops(); ++v) {
      const models::Op& op = g.op(v);
      const plan::TpCollective tc = plan::TensorParallelCollective(op);
      f += tc == plan::TpCollective::kAfterForward;
      b += tc == plan::TpCollective::kAfterBackwardInput;
      if (!sp || plan::InSequenceParallelRegion(op)) continue;
      bool reads_region = false;
      for (models::OpId in : g.inputs(v)) reads_region = reads_region || plan::InSequenceParallelRegion(g.op(in));
      gathers += reads_region;
    }
  }
  const std::int64_t forward = k + 2 * (f + gathers);
  std::int64_t again = 0;
  if (recompute) again = forward;
  if (selective) again = static_cast<std::int64_t>(plan::AttentionCores(g).size());
  const std::int64_t backward = k + 2 * b + (sp ? 2 * f + b : 0);
  return forward + again + backward + 2 * k;
}

Estimate Factors(const config::Scenario& s, const models::ModelGraph& graph,
                 const std::vector<int>* replicas = nullptr) {
  const config::ParallelismConfig& par = s.parallelism;
  const std::int64_t workers = std::int64_t{s.cluster.nodes} * s.cluster.devices_per_node;
  const std::int64_t ops = static_cast<std::int64_t>(graph.num_ops());
  const bool simgrid = s.engine == "simgrid";
  Estimate e;
  e.ranks_key = "cluster";
  e.iterations_key = "workload.iterations";
  e.per_rank_key = "workload.model";
  if (par.strategy == Strategy::kHybrid && par.hybrid.schedule == config::PipelineSchedule::kPipeDream) {
    // Every device is materialized. An iteration is a round of lcm(replicas)
    // minibatches; each passes every op forward and twice backward, with a
    // send and a receive per stage; each replica all-reduces per bucket
    // (at most one per op) once a round.
    const std::vector<int>& r = replicas != nullptr ? *replicas : par.hybrid.stage_replicas;
    const std::int64_t round = RoundOf(r);
    const std::int64_t stages = std::max<std::int64_t>(1, par.hybrid.pipeline_parallel);
    e.ranks = workers;
    e.iterations = s.workload.iterations;
    const std::int64_t per_iteration =
        Add(Mul(round, Add(Mul(3, ops), Mul(4, stages))), Mul(workers, ops));
    e.per_rank_iteration = std::max<std::int64_t>(1, per_iteration / std::max<std::int64_t>(1, workers));
    e.per_rank_key = "parallelism.stage_replicas";
    if (round > 1 && e.per_rank_iteration >= e.iterations) e.ranks_key = "parallelism.stage_replicas";
    return e;
  }
  if (config::IsPipelined(s)) {
    const bool model = par.strategy == Strategy::kModel;
    const std::int64_t t = model ? 1 : par.hybrid.tensor_parallel;
    const std::int64_t p = model && par.hybrid.pipeline_parallel == 1
                               ? s.cluster.devices_per_node
                               : par.hybrid.pipeline_parallel;
    const std::int64_t c = model ? 1 : par.hybrid.context_parallel;
    const std::int64_t d = std::max<std::int64_t>(1, workers / (t * p * c));
    std::int64_t m = 1;
    if (!model) {
      const std::int64_t per_step = d * par.hybrid.micro_batch_size;
      m = par.hybrid.global_batch > 0 ? std::max<std::int64_t>(1, par.hybrid.global_batch / per_step)
                                      : p;
    }
    // Symmetric plans materialize one device per stage (sim/simulator.cc);
    // stragglers, link events and SimGrid materialize every device.
    const bool symmetric = HybridRanksMirror(s);
    e.ranks = symmetric ? p : workers;
    e.iterations = s.workload.iterations;
    // Per micro-batch, over the whole model (one rank of each stage): its
    // p v chunks run as segments cut at each tensor-parallel collective
    // (HybridTasksPerMicroBatch); a rank holds 1/p of them.
    const std::int64_t per_micro_batch =
        HybridTasksPerMicroBatch(graph, t, p * par.hybrid.virtual_stages,
                                 par.hybrid.sequence_parallel && t > 1, par.recompute,
                                 par.recompute_selective);
    e.per_rank_iteration = Add(Mul(m, (per_micro_batch + p - 1) / p), 4 + static_cast<std::int64_t>(ops / p));
    e.per_rank_key = model ? "workload.batch_per_device" : "parallelism.global_batch";
    return e;
  }
  const std::int64_t h = config::AveragingPeriod(s);
  const std::int64_t asked = s.workload.iterations;
  e.iterations = asked;
  if (h > 1) {
    // One warm-up iteration and whole rounds of H (sim/simulator.cc
    // IterationsToSimulate).
    const std::int64_t rounds = std::max<std::int64_t>(1, (std::max<std::int64_t>(1, asked - 1) + h - 1) / h);
    e.iterations = 1 + Mul(rounds, h);
    if (h > asked) e.iterations_key = "parallelism.averaging_period";
  }
  const bool servers = config::UsesServers(s);
  if (servers) {
    // Every worker and server is materialized; each worker talks to every
    // server (a pull and a push per shard), each server to every worker.
    const std::int64_t n_servers = par.parameter_server.servers;
    e.ranks = workers + n_servers;
    e.per_rank_iteration = Mul(4, ops) + Mul(4, std::max(n_servers, workers));
    e.per_rank_key = "parallelism.parameter_server";
    return e;
  }
  // Identical workers: the first trace_max_ranks stand for all; stragglers,
  // link events, node groups and SimGrid materialize every worker
  // (sim/simulator.cc, Simulate).
  const bool alike = WorkersAreAlike(s) && !simgrid;
  e.ranks = alike ? std::min<std::int64_t>(workers, std::max(1, s.outputs.trace_max_ranks))
                  : workers;
  // Forward, input and weight gradients per op, and at most one bucket per
  // op (with zero_stage 3 also its two parameter gathers).
  e.per_rank_iteration = Mul(par.zero_stage == 3 ? 6 : 4, ops) + 4;
  return e;
}

}  // namespace

namespace {

void Refuse(const config::Scenario& s, const Estimate& e) {
  const std::int64_t tasks = Mul(e.ranks, Mul(e.iterations, e.per_rank_iteration));
  if (tasks <= kMaxPlanTasks) return;
  const std::string& key = e.iterations >= e.ranks && e.iterations >= e.per_rank_iteration
                               ? e.iterations_key
                           : e.ranks >= e.per_rank_iteration ? e.ranks_key
                                                             : e.per_rank_key;
  throw UserError(s.Where(key),
                  "the plan would have about " + FormatCount(static_cast<double>(tasks)) +
                      " tasks (" + std::to_string(e.ranks) + " ranks x " +
                      std::to_string(e.iterations) + " iterations x " +
                      std::to_string(e.per_rank_iteration) + " tasks each), more than the " +
                      FormatCount(static_cast<double>(kMaxPlanTasks)) + " dtsim simulates",
                  "fewer iterations, devices, servers or micro-batches; a few iterations "
                  "suffice for a steady-state prediction");
}

}  // namespace

std::int64_t EstimatePlanTasks(const config::Scenario& s, const models::ModelGraph& graph) {
  const Estimate e = Factors(s, graph);
  return Mul(e.ranks, Mul(e.iterations, e.per_rank_iteration));
}

void CheckPlanSize(const config::Scenario& s, const models::ModelGraph& graph) {
  const std::int64_t devices = std::int64_t{s.cluster.nodes} * s.cluster.devices_per_node;
  if (devices > kMaxDevices) {
    throw UserError(s.Where("cluster"),
                    "the cluster has " + std::to_string(devices) + " devices, more than the " +
                        std::to_string(kMaxDevices) + " dtsim simulates",
                    "the largest GPU clusters have about 10^5 devices");
  }
  Refuse(s, Factors(s, graph));
}

void CheckPipeDreamPlanSize(const config::Scenario& s, const models::ModelGraph& graph,
                            const std::vector<int>& replicas) {
  Refuse(s, Factors(s, graph, &replicas));
}

}  // namespace dtsim::sim
