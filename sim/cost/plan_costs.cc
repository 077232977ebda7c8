#include "sim/cost/plan_costs.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <tuple>

#include "common/error.h"
#include "plan/compute_tasks.h"
#include "sim/cost/collectives.h"
#include "sim/cost/host_costs.h"
#include "sim/cost/nccl_protocols.h"

namespace dtsim::sim {
namespace {

using plan::IsComputeKind;

// The part of an overlapped collective (plan::Collective::overlap_chunks)
// that the compute beside it does not hide. Pipelined in n chunks beside a
// window of W seconds of compute, a collective of C seconds shows at least
// its first (or last) chunk, C / n, and whatever outlasts the window:
// max(C / n, C - W). With a second window (the distributed optimizer's
// all-gather under the next forward) each half of C is hidden under its own
// window. Contention of the communication kernels for SMs is not priced.
SimTime ExposedCollectiveNs(const plan::Collective& c, SimTime whole, const TaskCosts& costs) {
  auto window = [&](const std::vector<plan::TaskId>& tasks) {
    SimTime w = 0;
    for (plan::TaskId id : tasks) w += costs.task_ns[static_cast<std::size_t>(id)];
    return static_cast<double>(w);
  };
  const double n = c.overlap_chunks;
  auto exposed = [n](double comm, double w) { return std::max(comm / n, comm - w); };
  const double total = static_cast<double>(whole);
  const double shown = c.overlap_with_second.empty()
                           ? exposed(total, window(c.overlap_with))
                           : exposed(total / 2, window(c.overlap_with)) +
                                 exposed(total / 2, window(c.overlap_with_second));
  return static_cast<SimTime>(std::llround(shown));
}

// fp8's kernels that run once per step rather than per op and micro-batch
// (sim/cost/op_kernels.h): each dense layer's weight cast, charged to the first
// forward task of the step that holds the layer on its rank (a recomputed
// forward reuses the cached copy), and the amax/scale update, one per
// forward and per backward of each micro-batch on a rank, charged to the
// first such task holding an FP8 layer.
class Fp8StepKernels {
 public:
  Fp8StepKernels(const plan::Plan& plan, const models::ModelGraph& graph,
                 const std::vector<CostModel>& cost_models, const std::vector<int>& cost_of_rank)
      : graph_(graph), cost_models_(cost_models), cost_of_rank_(cost_of_rank) {
    for (const CostModel& cm : cost_models) active_ |= cm.precision() == hw::Precision::kFp8;
    if (!active_) return;
    cast_iteration_.assign(static_cast<std::size_t>(plan.num_ranks()) * graph.num_ops(), -1);
    // FP8 tensors per rank: input, weight and output gradient of each dense
    // layer it holds.
    tensors_.assign(static_cast<std::size_t>(plan.num_ranks()), 0);
    std::vector<char> seen(cast_iteration_.size(), 0);
    for (const plan::Task& t : plan.tasks()) {
      if (t.kind != plan::TaskKind::kForward || t.op < 0) continue;
      for (std::int32_t k = 0; k < t.op_count; ++k) {
        const std::size_t key = Key(t.rank, t.op + k);
        if (IsFp8(t.op + k) && !seen[key]) {
          seen[key] = 1;
          tensors_[static_cast<std::size_t>(t.rank)] += 3;
        }
      }
    }
  }

  bool active() const { return active_; }

  // The once-per-step seconds task `t` carries.
  double Seconds(const plan::Task& t) {
    if (t.op < 0 || t.seconds >= 0 || !IsComputeKind(t.kind)) return 0;
    const CostModel& cm = cost_models_[static_cast<std::size_t>(cost_of_rank_[t.rank])];
    if (cm.precision() != hw::Precision::kFp8) return 0;
    const bool forward = t.kind == plan::TaskKind::kForward;
    double seconds = 0;
    bool holds_fp8 = false;
    for (std::int32_t k = 0; k < t.op_count; ++k) {
      const std::int32_t op = t.op + k;
      if (!IsFp8(op)) continue;
      holds_fp8 = true;
      std::int32_t& cast = cast_iteration_[Key(t.rank, op)];
      if (forward && cast != t.iteration) {
        cast = t.iteration;
        seconds += cm.Fp8WeightCastSeconds(graph_.op(static_cast<models::OpId>(op)));
      }
    }
    if (holds_fp8 &&
        scaled_.insert({t.rank, t.iteration, t.micro_batch, forward ? 0 : 1}).second)
      seconds += cm.Fp8ScaleUpdateSeconds(tensors_[static_cast<std::size_t>(t.rank)]);
    return seconds;
  }

 private:
  std::size_t Key(plan::RankId rank, std::int32_t op) const {
    return static_cast<std::size_t>(rank) * graph_.num_ops() + static_cast<std::size_t>(op);
  }
  bool IsFp8(std::int32_t op) const {
    return graph_.op(static_cast<models::OpId>(op)).kind == models::OpKind::kDense;
  }

  const models::ModelGraph& graph_;
  const std::vector<CostModel>& cost_models_;
  const std::vector<int>& cost_of_rank_;
  bool active_ = false;
  std::vector<std::int32_t> cast_iteration_;  // per (rank, op): step whose cast is charged
  std::vector<int> tensors_;                  // per rank
  std::set<std::tuple<plan::RankId, std::int32_t, std::int32_t, int>> scaled_;
};

}  // namespace

double PricedCollectiveSeconds(const plan::Plan& plan, const plan::Collective& c,
                               Network& network) {
  const auto& members = plan.groups()[static_cast<std::size_t>(c.group)];
  std::vector<int> ranks(members.begin(), members.end());
  const double t = c.via_host ? HostCollectiveSeconds(network, c.algorithm, ranks, c.bytes, c.op)
                              : CollectiveSeconds(network, c.op, c.algorithm, ranks, c.bytes);
  double seconds = network.spec().collective_latency_s + t;
  if (network.spec().nccl_protocols && !c.via_host) {
    // The schedule's latency part: the same schedule moving one byte
    // (an empty one costs nothing at all).
    const double latency = std::min(t, CollectiveSeconds(network, c.op, c.algorithm, ranks, 1.0));
    const int per_node = std::max(1, network.spec().devices_per_node);
    bool spans_nodes = false;
    for (int r : ranks) spans_nodes |= r / per_node != ranks.front() / per_node;
    seconds =
        NcclCollectiveTime(latency, t - latency, spans_nodes, network.spec().nccl_ll128).seconds;
  }
  return seconds;
}

TaskCosts PriceTasks(const plan::Plan& plan, const models::ModelGraph& graph,
                     const std::vector<CostModel>& cost_models,
                     const std::vector<int>& cost_of_rank, Network& network,
                     const std::set<models::OpKind>& fused) {
  DTSIM_CHECK(static_cast<int>(cost_of_rank.size()) == plan.num_ranks(), "one cost model per rank");
  TaskCosts costs;
  costs.task_ns.resize(plan.num_tasks(), 0);
  // A plan repeats each op's tasks over ranks, iterations and micro-batches:
  // an op's time for a kind and batch is computed once per cost model (the
  // kernel model tries every tile and algorithm) into a table per (cost
  // model, batch) indexed by op and kind; < 0 = not computed yet.
  constexpr int kKinds = 3;  // forward, backward input, backward weight
  struct Priced {
    ComputeParts parts{0, 0, -1};  // other_s < 0: not computed yet
    CostSource source = CostSource::kModelled;
  };
  std::map<std::pair<int, int>, std::vector<Priced>> tables;
  std::pair<int, int> last_key{-1, -1};
  std::vector<Priced>* last = nullptr;
  double task_by_source[kNumCostSources] = {0, 0, 0};
  std::set<std::int32_t> modelled;
  auto compute = [&](int model, const models::Op& op, models::OpId v, plan::TaskKind kind,
                     int batch) {
    if (last == nullptr || last_key != std::pair<int, int>{model, batch}) {
      last_key = {model, batch};
      auto it = tables.find(last_key);
      if (it == tables.end())
        it = tables.emplace(last_key, std::vector<Priced>(graph.num_ops() * kKinds)).first;
      last = &it->second;
    }
    const int k = kind == plan::TaskKind::kForward ? 0
                  : kind == plan::TaskKind::kBackwardInput ? 1 : 2;
    Priced& p = (*last)[static_cast<std::size_t>(v) * kKinds + static_cast<std::size_t>(k)];
    if (p.parts.other_s < 0) {
      const CostModel& cm = cost_models[static_cast<std::size_t>(model)];
      p.parts = IsFusedOp(graph, v, fused) ? cm.ComputeTime(FusedOp(op), kind, batch, &p.source)
                                           : cm.ComputeTime(op, kind, batch, &p.source);
    }
    costs.fp8_gemm_s += p.parts.fp8_gemm_s;
    costs.fp8_cast_s += p.parts.fp8_cast_s;
    task_by_source[static_cast<int>(p.source)] += p.parts.Total();
    if (p.source == CostSource::kModelled && cost_models[static_cast<std::size_t>(model)].measured())
      modelled.insert(static_cast<std::int32_t>(v));
    return p.parts.Total();
  };
  Fp8StepKernels fp8_step(plan, graph, cost_models, cost_of_rank);
  for (std::size_t i = 0; i < plan.num_tasks(); ++i) {
    const plan::Task& t = plan.tasks()[i];
    const int model = cost_of_rank[static_cast<std::size_t>(t.rank)];
    const CostModel& cm = cost_models[static_cast<std::size_t>(model)];
    double seconds = 0;
    for (double& x : task_by_source) x = 0;
    if (t.seconds >= 0 && t.kind != plan::TaskKind::kCollective) {  // a trace's duration
      costs.task_ns[i] = SecondsToNs(t.seconds);
      continue;
    }
    if (fp8_step.active()) {
      const double once = fp8_step.Seconds(t);
      costs.fp8_cast_s += once;
      seconds += once;
    }
    switch (t.kind) {
      case plan::TaskKind::kForward:
      case plan::TaskKind::kBackwardInput:
      case plan::TaskKind::kBackwardWeight:
        for (std::int32_t k = 0; k < t.op_count; ++k) {
          const auto v = static_cast<models::OpId>(t.op + k);
          seconds += compute(model, graph.op(v), v, t.kind, t.batch);
        }
        break;
      case plan::TaskKind::kBackward:  // both gradients of every op of the range
        for (std::int32_t k = 0; k < t.op_count; ++k) {
          const auto v = static_cast<models::OpId>(t.op + k);
          const models::Op& op = graph.op(v);
          if (plan::IsFreeOp(op)) continue;
          if (!graph.ReadsOnlyGraphInputs(v))
            seconds += compute(model, op, v, plan::TaskKind::kBackwardInput, t.batch);
          if (op.HasParams())
            seconds += compute(model, op, v, plan::TaskKind::kBackwardWeight, t.batch);
        }
        break;
      case plan::TaskKind::kOptimizer: {
        CostSource source;
        double step = cm.OptimizerSeconds(t.params, t.contributions, &source);
        if (t.extra_bytes_per_param > 0 && t.params > 0)
          step += cm.StreamSeconds(static_cast<double>(t.params) * t.extra_bytes_per_param);
        task_by_source[static_cast<int>(source)] += step;
        seconds += step;
        break;
      }
      case plan::TaskKind::kCollective:
        break;  // priced per collective below
      case plan::TaskKind::kSend:  // alone on the network; contention is the engine's
        seconds = network.TransferSeconds(t.rank, t.peer, t.bytes);
        break;
      case plan::TaskKind::kRecv:
        DTSIM_CHECK(false, "plans express transfers as kSend tasks");
    }
    if (IsComputeKind(t.kind)) costs.compute_priced_s += seconds;
    for (int k = 0; k < kNumCostSources; ++k) costs.priced_by_source_s[k] += task_by_source[k];
    costs.task_ns[i] = SecondsToNs(seconds);
  }

  costs.modelled_ops.assign(modelled.begin(), modelled.end());

  using Key = std::tuple<int, int, std::int32_t, std::uint64_t>;
  std::map<Key, SimTime> cache;
  for (const plan::Collective& c : plan.collectives()) {
    const Key key{static_cast<int>(c.op) * 2 + (c.via_host ? 1 : 0), static_cast<int>(c.algorithm), c.group,
                  std::bit_cast<std::uint64_t>(c.bytes)};
    auto it = cache.find(key);
    if (it == cache.end()) {
      const double seconds = PricedCollectiveSeconds(plan, c, network);
      it = cache.emplace(key, SecondsToNs(seconds)).first;
    }
    costs.collective_ns.push_back(c.overlap_chunks > 0 ? ExposedCollectiveNs(c, it->second, costs)
                                                       : it->second);
  }
  return costs;
}

}  // namespace dtsim::sim
