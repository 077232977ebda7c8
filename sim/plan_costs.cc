#include "sim/plan_costs.h"

#include <bit>
#include <map>
#include <tuple>
#include <unordered_map>

#include "common/error.h"
#include "plan/compute_tasks.h"
#include "sim/collectives.h"

namespace dtsim::sim {

TaskCosts PriceTasks(const plan::Plan& plan, const models::ModelGraph& graph,
                     const std::vector<CostModel>& cost_models,
                     const std::vector<int>& cost_of_rank, Network& network) {
  DTSIM_CHECK(static_cast<int>(cost_of_rank.size()) == plan.num_ranks(), "one cost model per rank");
  TaskCosts costs;
  costs.task_ns.resize(plan.num_tasks(), 0);
  // A plan repeats each op's tasks over ranks, iterations and micro-batches:
  // an op's time for a kind and batch is computed once per cost model (the
  // kernel model tries every tile and algorithm).
  // Key: cost model (4 bits), task kind (4), op (24: models::kMaxModelOps <
  // 2^20), batch (32).
  std::unordered_map<std::uint64_t, double> op_seconds;
  auto compute = [&](int model, const models::Op& op, models::OpId v, plan::TaskKind kind,
                     int batch) {
    DTSIM_CHECK(model < 16 && static_cast<std::uint64_t>(v) < (1u << 24) && batch >= 0,
                "op key out of range");
    const std::uint64_t key = (static_cast<std::uint64_t>(model) << 60) |
                              (static_cast<std::uint64_t>(kind) << 56) |
                              (static_cast<std::uint64_t>(v) << 32) |
                              static_cast<std::uint32_t>(batch);
    auto it = op_seconds.find(key);
    if (it == op_seconds.end())
      it = op_seconds
               .emplace(key, cost_models[static_cast<std::size_t>(model)].ComputeSeconds(op, kind,
                                                                                         batch))
               .first;
    return it->second;
  };
  for (std::size_t i = 0; i < plan.num_tasks(); ++i) {
    const plan::Task& t = plan.tasks()[i];
    const int model = cost_of_rank[static_cast<std::size_t>(t.rank)];
    const CostModel& cm = cost_models[static_cast<std::size_t>(model)];
    double seconds = 0;
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
      case plan::TaskKind::kOptimizer:
        seconds = cm.OptimizerSeconds(t.params, t.contributions);
        break;
      case plan::TaskKind::kCollective:
        break;  // priced per collective below
      case plan::TaskKind::kSend:  // alone on the network; contention is the engine's
        seconds = network.TransferSeconds(t.rank, t.peer, t.bytes);
        break;
      case plan::TaskKind::kRecv:
        DTSIM_CHECK(false, "plans express transfers as kSend tasks");
    }
    costs.task_ns[i] = SecondsToNs(seconds);
  }

  using Key = std::tuple<int, int, std::int32_t, std::uint64_t>;
  std::map<Key, SimTime> cache;
  for (const plan::Collective& c : plan.collectives()) {
    DTSIM_CHECK(c.op == plan::CollectiveOp::kAllReduce, "only all-reduce is priced yet");
    const Key key{static_cast<int>(c.op), static_cast<int>(c.algorithm), c.group,
                  std::bit_cast<std::uint64_t>(c.bytes)};
    auto it = cache.find(key);
    if (it == cache.end()) {
      const auto& members = plan.groups()[static_cast<std::size_t>(c.group)];
      std::vector<int> ranks(members.begin(), members.end());
      it = cache.emplace(key, SecondsToNs(network.spec().collective_latency_s +
                                          AllReduceSeconds(network, c.algorithm, ranks, c.bytes)))
               .first;
    }
    costs.collective_ns.push_back(it->second);
  }
  return costs;
}

}  // namespace dtsim::sim
