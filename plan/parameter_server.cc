#include "plan/parameter_server.h"

#include <algorithm>
#include <functional>

#include "common/error.h"
#include "plan/compute_tasks.h"

namespace dtsim::plan {
namespace {

using models::OpId;


}  // namespace

Plan BuildParameterServerPlan(const models::ModelGraph& graph, const ClusterShape& cluster,
                              const ParameterServerOptions& o) {
  DTSIM_CHECK(graph.num_ops() > 0, "empty model graph");
  DTSIM_CHECK(o.batch_per_rank >= 1 && o.iterations >= 1 && o.servers >= 1 &&
                  o.averaging_period >= 1 && o.replicas_to_aggregate >= 0,
              "bad parameter-server options");
  const int n = cluster.nodes * cluster.devices_per_node;
  const int k = o.replicas_to_aggregate == 0 ? n : std::min(o.replicas_to_aggregate, n);
  const int h = o.averaging_period;

  Plan plan;
  for (int r = 0; r < n; ++r)
    plan.ranks.push_back({r / cluster.devices_per_node, r % cluster.devices_per_node});
  for (int s = 0; s < o.servers; ++s) {
    RankPlacement p;
    p.role = RankRole::kServer;
    if (o.dedicated) {
      p.node = cluster.nodes + s;
      p.local = 0;
    } else {
      p.node = s % cluster.nodes;
      p.local = cluster.devices_per_node + s / cluster.nodes;
    }
    plan.ranks.push_back(p);
  }
  plan.model_name = graph.name();
  plan.strategy = h > 1 ? Strategy::kLocalSgd : Strategy::kParameterServer;
  plan.sync.averaging_period = h;
  // Workers that push parameters update their replica first (below).
  plan.sync.averaged = h > 1 || o.push_parameters ? Averaged::kParameters : Averaged::kGradients;
  plan.sync.servers.servers = o.servers;
  plan.sync.servers.dedicated = o.dedicated;
  plan.sync.servers.asynchronous = o.asynchronous;
  plan.sync.servers.replicas_to_aggregate = o.replicas_to_aggregate;
  plan.iterations = o.iterations;
  plan.batch_per_rank = o.batch_per_rank;
  plan.samples_per_iteration = static_cast<std::int64_t>(n) * o.batch_per_rank;

  std::vector<std::int32_t> all_ops;
  std::int64_t params = 0;
  double param_bytes = 0;
  for (OpId v = 0; v < graph.num_ops(); ++v) {
    all_ops.push_back(static_cast<std::int32_t>(v));
    params += graph.op(v).params;
    param_bytes += graph.op(v).ParamBytes();
  }
  plan.ops_on_rank.assign(static_cast<std::size_t>(n), all_ops);
  plan.ops_on_rank.resize(static_cast<std::size_t>(n + o.servers));  // servers hold shards
  const PsPlacement placement = PlaceVariables(ModelVariables(graph), o.servers, o.placement);
  for (const PsServerShare& share : placement.servers) {
    std::vector<ParamSpan> spans;
    for (const PsPiece& piece : share.pieces) {
      // Adjacent pieces (an even cut across variables) form one span.
      if (!spans.empty() && spans.back().offset + spans.back().count == piece.offset)
        spans.back().count += piece.count;
      else
        spans.push_back({piece.offset, piece.count});
    }
    plan.server_params.push_back(std::move(spans));
  }
  const auto share_of = [&](int s) -> const PsServerShare& {
    return placement.servers[static_cast<std::size_t>(s)];
  };
  const auto server = [&](int s) { return static_cast<RankId>(n + s); };
  const bool overlap = o.overlap && !o.push_parameters && !(o.aggregate_in_node && cluster.devices_per_node > 1);
  // shards_from[v]: the servers whose pieces' first op (in graph order) is
  // op v: the backward produces their last gradient with v's.
  std::vector<std::vector<int>> shards_from(static_cast<std::size_t>(graph.num_ops()));
  for (int s = 0; s < o.servers; ++s) {
    const auto& pieces = share_of(s).pieces;
    if (pieces.empty()) continue;
    OpId first = graph.num_ops();
    for (const PsPiece& piece : pieces)
      first = std::min(first, placement.variables[static_cast<std::size_t>(piece.variable)].op);
    shards_from[static_cast<std::size_t>(first)].push_back(s);
  }
  const auto syncs = [&](int it) { return it % h == h - 1; };

  // Hierarchical servers: each machine's devices form a group that sums
  // (reduce-scatter) before the pushes and all-gathers after the pulls; each
  // device then moves 1/g of every shard.
  const int g = cluster.devices_per_node;
  const bool aggregate = o.aggregate_in_node && g > 1;
  DTSIM_CHECK(!aggregate || (!o.asynchronous && k == n),
              "machine aggregation is synchronous over every worker");
  std::vector<std::int32_t> node_group;
  if (aggregate)
    for (int nd = 0; nd < cluster.nodes; ++nd) {
      std::vector<RankId> ranks;
      for (int j = 0; j < g; ++j) ranks.push_back(nd * g + j);
      node_group.push_back(plan.AddGroup(ranks));
    }
  // Bytes of server s that one worker pulls and pushes.
  const auto slice_bytes = [&](int s) { return aggregate ? share_of(s).bytes / g : share_of(s).bytes; };
  const auto node_collective = [&](CollectiveOp op, int nd, const std::vector<std::vector<TaskId>>& deps,
                                   int it) {
    Collective c;
    c.op = op;
    c.bytes = param_bytes;
    c.group = node_group[static_cast<std::size_t>(nd)];
    c.via_host = o.aggregate_on_host;
    const auto ci = plan.AddCollective(c, deps, it);
    return plan.collectives()[static_cast<std::size_t>(ci)].tasks;
  };

  // pull_done[w][s]: what worker w's next pull of shard s waits for.
  std::vector<std::vector<TaskId>> pull_after(static_cast<std::size_t>(n),
                                              std::vector<TaskId>(static_cast<std::size_t>(o.servers), -1));
  for (int it = 0; it < o.iterations; ++it) {
    const bool pull_now = it == 0 || syncs(it - 1);
    const bool push_now = syncs(it);
    // pushes[s] = every worker's push of shard s this step.
    std::vector<std::vector<TaskId>> pushes(static_cast<std::size_t>(o.servers));
    // What each worker's first forward waits for: its pulls (and with
    // machine aggregation the machine's all-gather of them).
    std::vector<std::vector<TaskId>> ready(static_cast<std::size_t>(n));
    if (pull_now) {
      for (int w = 0; w < n; ++w)
        for (int s = 0; s < o.servers; ++s) {
          Task pull;
          pull.kind = TaskKind::kSend;
          pull.stream = StreamKind::kComm;
          pull.rank = server(s);
          pull.peer = w;
          pull.iteration = it;
          pull.bytes = slice_bytes(s);
          const TaskId after = pull_after[static_cast<std::size_t>(w)][static_cast<std::size_t>(s)];
          ready[static_cast<std::size_t>(w)].push_back(
              after < 0 ? plan.AddTask(pull) : plan.AddTask(pull, std::span(&after, 1)));
        }
      if (aggregate)
        for (int nd = 0; nd < cluster.nodes; ++nd) {
          std::vector<std::vector<TaskId>> deps;
          for (int j = 0; j < g; ++j) deps.push_back(ready[static_cast<std::size_t>(nd * g + j)]);
          const auto tasks = node_collective(CollectiveOp::kAllGather, nd, deps, it);
          for (int j = 0; j < g; ++j) ready[static_cast<std::size_t>(nd * g + j)] = {tasks[static_cast<std::size_t>(j)]};
        }
    }
    std::vector<TaskId> last_of(static_cast<std::size_t>(n));
    // overlapped pushes: per worker, the task after which each shard's
    // gradients are complete (its first op's weight gradient).
    std::vector<std::vector<TaskId>> shard_ready(static_cast<std::size_t>(n));
    for (int w = 0; w < n; ++w) {
      auto& mine = shard_ready[static_cast<std::size_t>(w)];
      mine.assign(static_cast<std::size_t>(o.servers), -1);
      const auto on_weight_grad = [&](OpId v, TaskId t) {
        for (int sh : shards_from[static_cast<std::size_t>(v)]) mine[static_cast<std::size_t>(sh)] = t;
      };
      TaskId last = AddStepTasks(&plan, graph, w, it, o.batch_per_rank, ready[static_cast<std::size_t>(w)],
                                 overlap ? std::function<void(OpId, TaskId)>(on_weight_grad)
                                         : std::function<void(OpId, TaskId)>{},
                                 o.recompute)
                        .last;
      // A worker that pushes parameters (local SGD, model averaging) has
      // updated its own replica first, every step.
      if (h > 1 || o.push_parameters) {
        Task opt;
        opt.kind = TaskKind::kOptimizer;
        opt.rank = w;
        opt.iteration = it;
        opt.params = params;
        last = plan.AddTask(opt);
      }
      last_of[static_cast<std::size_t>(w)] = last;
    }
    if (push_now && aggregate)
      for (int nd = 0; nd < cluster.nodes; ++nd) {
        std::vector<std::vector<TaskId>> deps;
        for (int j = 0; j < g; ++j) deps.push_back({last_of[static_cast<std::size_t>(nd * g + j)]});
        const auto tasks = node_collective(CollectiveOp::kReduceScatter, nd, deps, it);
        for (int j = 0; j < g; ++j) last_of[static_cast<std::size_t>(nd * g + j)] = tasks[static_cast<std::size_t>(j)];
      }
    if (push_now)
      for (int w = 0; w < n; ++w)
        for (int s = 0; s < o.servers; ++s) {
          Task push;
          push.kind = TaskKind::kSend;
          push.stream = StreamKind::kComm;
          push.rank = w;
          push.peer = server(s);
          push.iteration = it;
          push.bytes = slice_bytes(s);
          TaskId after = last_of[static_cast<std::size_t>(w)];
          if (overlap && shard_ready[static_cast<std::size_t>(w)][static_cast<std::size_t>(s)] >= 0)
            after = shard_ready[static_cast<std::size_t>(w)][static_cast<std::size_t>(s)];
          pushes[static_cast<std::size_t>(s)].push_back(plan.AddTask(push, std::span(&after, 1)));
        }
    if (!push_now) continue;
    // Server side.
    for (int s = 0; s < o.servers; ++s) {
      Task apply;
      apply.kind = TaskKind::kOptimizer;
      apply.rank = server(s);
      apply.iteration = it;
      apply.params = share_of(s).params;
      const auto& in = pushes[static_cast<std::size_t>(s)];
      if (o.asynchronous) {
        for (int w = 0; w < n; ++w) {
          const TaskId a = plan.AddTask(apply, std::span(&in[static_cast<std::size_t>(w)], 1));
          pull_after[static_cast<std::size_t>(w)][static_cast<std::size_t>(s)] = a;
        }
      } else {
        // With machine aggregation each machine's g slices add up to one
        // contribution: the server sums one per machine.
        apply.contributions = aggregate ? cluster.nodes : k;
        apply.min_deps = aggregate ? n : k;
        const TaskId a = plan.AddTask(apply, in);
        for (int w = 0; w < n; ++w) pull_after[static_cast<std::size_t>(w)][static_cast<std::size_t>(s)] = a;
      }
    }
  }
  return plan;
}

}  // namespace dtsim::plan
