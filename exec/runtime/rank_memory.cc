#include "exec/runtime/rank_memory.h"

#include <algorithm>

#include "exec/runtime/model_runtime.h"
#include "exec/runtime/ps_runner.h"

namespace dtsim::exec {
namespace {

constexpr double kFloat = 4;  // bytes

// Optimizer state per parameter (exec/runtime/optimizer.h).
double StatePerParam(OptimizerAlgorithm a) {
  switch (a) {
    case OptimizerAlgorithm::kSgd: return 0;
    case OptimizerAlgorithm::kMomentum: return 1;
    case OptimizerAlgorithm::kAdam: return 2;
  }
  return 2;
}

}  // namespace

RankMemory EstimateRankMemory(const plan::Plan& plan, const models::ModelGraph& graph,
                              const ExecOptions& options, plan::RankId rank) {
  RankMemory m;
  const double state = StatePerParam(options.optimizer.algorithm);
  std::int64_t total_params = 0;
  for (models::OpId v = 0; v < graph.num_ops(); ++v) total_params += graph.op(v).params;
  if (plan.IsServer(rank)) {
    const std::int64_t held = SpanElements(ServerSpans(plan, rank));
    int workers = 0;
    for (plan::RankId r = 0; r < plan.num_ranks(); ++r) workers += plan.IsServer(r) ? 0 : 1;
    const auto n = static_cast<double>(held);
    m.parameters = kFloat * (static_cast<double>(total_params) + 2 * n);
    m.optimizer = plan.sync.averaged == plan::Averaged::kParameters ? 0 : kFloat * state * n;
    m.activations = kFloat * n * (2 + workers);  // sum, receive, pull payloads
    return m;
  }
  // The worker's op range and micro-batching, as RankRunner lays them out.
  const auto& ops = plan.ops_on_rank[static_cast<std::size_t>(rank)];
  RuntimeOptions ro;
  ro.begin = static_cast<models::OpId>(*std::min_element(ops.begin(), ops.end()));
  ro.end = static_cast<models::OpId>(*std::max_element(ops.begin(), ops.end())) + 1;
  std::int64_t micro_batch = 1;
  int max_mb = 0;
  for (const plan::Task& t : plan.tasks()) {
    if (t.rank != rank || t.op < 0) continue;  // compute tasks name their ops
    micro_batch = std::max<std::int64_t>(micro_batch, t.batch);
    max_mb = std::max(max_mb, t.micro_batch);
  }
  ro.micro_batch = micro_batch;
  ro.slots = max_mb + 1;
  std::int64_t params = 0;
  std::vector<bool> copied(graph.num_ops(), false);
  for (models::OpId v = ro.begin; v < ro.end; ++v) {
    params += graph.op(v).params;
    const models::Op& op = graph.op(v);
    if (op.kind == models::OpKind::kDense && op.attrs.tied_to >= 0) {
      const auto table = static_cast<models::OpId>(op.attrs.tied_to);
      if ((table < ro.begin || table >= ro.end) && !copied[table]) {
        copied[table] = true;
        params += graph.op(table).params;
      }
    }
  }
  const auto p = static_cast<double>(params);
  const auto buffers = static_cast<double>(ModelRuntime::BufferFloats(graph, ro));
  m.parameters = kFloat * 2 * p;
  m.optimizer = kFloat * state * p;
  m.activations = kFloat * buffers - m.parameters;
  if (options.checkpoint_every > 0) m.checkpoint = kFloat * (1 + state) * p;
  return m;
}

}  // namespace dtsim::exec
