#include "plan/hybrid.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "common/error.h"
#include "plan/compute_tasks.h"
#include "plan/layers.h"
#include "plan/expert_parallel.h"
#include "plan/pipedream.h"
#include "plan/tensor_parallel.h"

namespace dtsim::plan {
namespace {

using models::OpId;
// One task id per materialized tensor rank of a replica (its lanes), -1 for
// none.
using Lanes = std::vector<TaskId>;

// A run of ops of one chunk that executes as one task, with the
// tensor-parallel collectives around it. Bytes are per sample (x the
// micro-batch size when emitted); 0 = no collective.
struct Segment {
  OpId begin, end;
  // An all-gather before the ops run (sequence parallelism: forward, an
  // input from the sequence-parallel region; backward, the output gradient
  // of a row-parallel op).
  double gather_before_bytes = 0;
  // After the ops: an all-reduce, or with sequence parallelism a
  // reduce-scatter (forward, after a row-parallel op; backward, of a
  // column-parallel op's input gradient).
  CollectiveOp after = CollectiveOp::kAllReduce;
  double after_bytes = 0;
  // Backward with sequence parallelism: a column-parallel op's input, kept
  // sharded over the sequence, is all-gathered again for its weight
  // gradient, overlapped with the input gradient (Korthikanti et al. 2022,
  // §4.2.2).
  double regather_bytes = 0;
  // Expert parallelism: an all-to-all over the expert group before the ops
  // run (backward: the gradient of the rows that came back) or after them
  // (forward: the rows leaving a dispatch or the experts), bytes per sample.
  double a2a_before_bytes = 0;
  double a2a_after_bytes = 0;
};

// The bytes per sample of `v`'s first input (its producer's output), 0 when
// it reads nothing.
double InputBytes(const models::ModelGraph& g, OpId v) {
  const auto ins = g.inputs(v);
  return ins.empty() ? 0 : OutputBytes(g, ins.front(), 1);
}

// Sequence parallelism: `v` leaves the sequence-parallel region (reads an
// op of it but is not in it): an all-gather of that input runs before it.
// Returns its bytes per sample, 0 when none.
double GatherBefore(const models::ModelGraph& g, OpId v) {
  if (InSequenceParallelRegion(g.op(v))) return 0;
  for (OpId in : g.inputs(v))
    if (InSequenceParallelRegion(g.op(in))) return OutputBytes(g, in, 1);
  return 0;
}

// Forward segments of [begin, end): cut after every op whose forward output
// is all-reduced (reduce-scattered with `sp`), and with `sp` before every op
// that needs an all-gather of its input.
std::vector<Segment> ForwardSegments(const models::ModelGraph& g, OpId begin, OpId end, bool tp,
                                     bool sp, int ep) {
  std::vector<Segment> out;
  Segment cur{begin, begin};
  for (OpId v = begin; v < end; ++v) {
    if (tp && sp) {
      if (const double bytes = GatherBefore(g, v); bytes > 0) {
        if (v > cur.begin) {
          cur.end = v;
          out.push_back(cur);
          cur = Segment{v, v};
        }
        cur.gather_before_bytes = bytes;
      }
    }
    bool cut = false;
    if (tp && TensorParallelCollective(g.op(v)) == TpCollective::kAfterForward) {
      cur.after = sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
      cur.after_bytes = OutputBytes(g, v, 1);
      cut = true;
    }
    if (const double a2a = ExpertAllToAllBytesPerSample(g, v, ep); a2a > 0) {
      cur.a2a_after_bytes = a2a;
      cut = true;
    }
    if (cut) {
      cur.end = v + 1;
      out.push_back(cur);
      cur = Segment{v + 1, v + 1};
    }
  }
  if (cur.begin < end) {
    cur.end = end;
    out.push_back(cur);
  }
  return out;
}

// Backward segments of [begin, end), in backward order: cut before every op
// whose input gradient is all-reduced (reduce-scattered with `sp`; backward
// reaches it last), and with `sp` after every row-parallel op (its output
// gradient is all-gathered before its backward).
std::vector<Segment> BackwardSegments(const models::ModelGraph& g, OpId begin, OpId end, bool tp,
                                      bool sp, int ep) {
  std::vector<Segment> out;
  OpId stop = end;
  double gather = 0;  // the pending all-gather before the next segment
  double a2a = 0;     // the pending all-to-all before the next segment
  for (OpId v = end; v-- > begin;) {
    if (const double bytes = ExpertAllToAllBytesPerSample(g, v, ep); bytes > 0) {
      // The forward's all-to-all after v is mirrored before v's backward.
      if (v + 1 < stop) {
        Segment seg{v + 1, stop};
        seg.gather_before_bytes = gather;
        seg.a2a_before_bytes = a2a;
        out.push_back(seg);
        stop = v + 1;
        gather = 0;
        a2a = 0;
      }
      a2a += bytes;
    }
    const TpCollective tc = tp ? TensorParallelCollective(g.op(v)) : TpCollective::kNone;
    if (tc == TpCollective::kAfterForward && sp) {
      if (v + 1 < stop) {
        Segment seg{v + 1, stop};
        seg.gather_before_bytes = gather;
        seg.a2a_before_bytes = a2a;
        a2a = 0;
        out.push_back(seg);
      }
      stop = v + 1;
      gather = OutputBytes(g, v, 1);
    }
    if (tc == TpCollective::kAfterBackwardInput) {
      Segment seg{v, stop};
      seg.gather_before_bytes = gather;
      seg.a2a_before_bytes = a2a;
      a2a = 0;
      seg.after = sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
      seg.after_bytes = InputBytes(g, v);
      if (sp) seg.regather_bytes = InputBytes(g, v);
      out.push_back(seg);
      stop = v;
      gather = 0;
    }
  }
  if (begin < stop) {
    Segment seg{begin, stop};
    seg.gather_before_bytes = gather;
    seg.a2a_before_bytes = a2a;
    out.push_back(seg);
  }
  return out;
}

// Context parallelism: each of attention's `cores` becomes a segment of its
// own (its tasks are the ring's or Ulysses', EmitContextAttention); a split
// segment keeps its collectives at its ends (before: the first piece in
// execution order, after: the last).
std::vector<Segment> SplitAtCores(const std::vector<Segment>& segs,
                                  const std::vector<std::pair<OpId, OpId>>& cores, bool backward) {
  std::vector<Segment> out;
  for (const Segment& seg : segs) {
    std::vector<OpId> cuts = {seg.begin};
    for (const auto& [b, e] : cores) {
      if (b < seg.begin || e > seg.end) continue;
      if (b > cuts.back()) cuts.push_back(b);
      if (e < seg.end) cuts.push_back(e);
    }
    cuts.push_back(seg.end);
    std::vector<Segment> pieces;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
      if (cuts[i] < cuts[i + 1]) pieces.push_back(Segment{cuts[i], cuts[i + 1]});
    if (backward) std::reverse(pieces.begin(), pieces.end());
    pieces.front().gather_before_bytes = seg.gather_before_bytes;
    pieces.back().after = seg.after;
    pieces.back().after_bytes = seg.after_bytes;
    pieces.back().regather_bytes = seg.regather_bytes;
    out.insert(out.end(), pieces.begin(), pieces.end());
  }
  return out;
}

// A parameter tensor that ops in two or more pipeline stages use: the
// embedding table of a tied LM head placed in another stage. `group_stages`
// (ascending) are the stages using it; `copy_stages` those that hold a copy
// (all but the table's own stage).
struct SharedWeight {
  OpId op;
  std::vector<int> group_stages;
  std::vector<int> copy_stages;
};

std::vector<SharedWeight> SharedWeights(const models::ModelGraph& g,
                                        const std::vector<std::pair<OpId, OpId>>& chunks, int p) {
  const auto stage_of = [&](OpId x) {
    for (std::size_t c = 0; c < chunks.size(); ++c)
      if (x >= chunks[c].first && x < chunks[c].second) return static_cast<int>(c) % p;
    return -1;
  };
  std::map<OpId, std::vector<int>> copies;
  for (OpId x = 0; x < g.num_ops(); ++x) {
    const models::Op& op = g.op(x);
    if (op.kind != models::OpKind::kDense || op.attrs.tied_to < 0) continue;
    const auto table = static_cast<OpId>(op.attrs.tied_to);
    const int own = stage_of(table), user = stage_of(x);
    if (own < 0 || user < 0 || own == user || g.op(table).params == 0) continue;
    auto& list = copies[table];
    if (std::find(list.begin(), list.end(), user) == list.end()) list.push_back(user);
  }
  std::vector<SharedWeight> out;
  for (auto& [table, users] : copies) {
    std::sort(users.begin(), users.end());
    SharedWeight w{table, users, users};
    w.group_stages.push_back(stage_of(table));
    std::sort(w.group_stages.begin(), w.group_stages.end());
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace

const char* PipelineScheduleName(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::kGpipe: return "gpipe";
    case PipelineSchedule::kOneFOneB: return "1f1b";
    case PipelineSchedule::kInterleaved: return "interleaved";
    case PipelineSchedule::kPipeDream2BW: return "pipedream_2bw";
    case PipelineSchedule::kPipeDream: return "pipedream";
  }
  return "?";
}

models::ModelGraph TensorParallelShard(const models::ModelGraph& graph, int t,
                                       bool sequence_parallel) {
  models::ModelGraph shard = graph;
  if (t <= 1) return shard;
  for (OpId v = 0; v < shard.num_ops(); ++v) {
    models::Op& op = shard.mutable_op(v);
    if (sequence_parallel && InSequenceParallelRegion(op)) {
      op.fwd_flops /= t;
      op.bwd_input_flops /= t;
      op.bwd_weight_flops /= t;
      op.read_elements_per_sample /= t;
      op.written_elements_per_sample /= t;
      op.saved_elements_per_sample /= t;
      continue;
    }
    if (!IsTensorParallelSplit(op)) continue;
    op.attrs.tensor_split = t;
    op.attrs.tensor_split_input = TensorParallelCollective(op) == TpCollective::kAfterForward;
    op.fwd_flops /= t;
    op.bwd_input_flops /= t;
    op.bwd_weight_flops /= t;
    op.params = (op.params + t - 1) / t;
    op.read_elements_per_sample /= t;
    op.written_elements_per_sample /= t;
    op.saved_elements_per_sample /= t;
  }
  return shard;
}

std::vector<ScheduleStep> StageSchedule(PipelineSchedule schedule, int stage, int stages,
                                        int m, int v) {
  std::vector<ScheduleStep> steps;
  const int p = stages;
  if (schedule == PipelineSchedule::kGpipe) {
    for (int j = 0; j < v; ++j)
      for (int mb = 0; mb < m; ++mb) steps.push_back({true, mb, j});
    for (int j = v; j-- > 0;)
      for (int mb = 0; mb < m; ++mb) steps.push_back({false, mb, j});
    return steps;
  }
  // 1F1B, and its interleaved form (Narayanan et al. 2021, Megatron-LM's
  // forward_backward_pipelining_with_interleaving): the k-th forward of a
  // stage runs local chunk (k / p) mod v on micro-batch (k / (p v)) p + k mod p;
  // backwards take the chunks in reverse.
  const int total = m * v;
  const auto fwd = [&](int k) {
    return ScheduleStep{true, (k / (p * v)) * p + k % p, v == 1 ? 0 : (k / p) % v};
  };
  const auto bwd = [&](int k) {
    return ScheduleStep{false, (k / (p * v)) * p + k % p, v == 1 ? 0 : v - 1 - (k / p) % v};
  };
  const int warmup = v == 1 ? std::min(p - stage - 1, m)
                            : std::min((p - stage - 1) * 2 + (v - 1) * p, total);
  int f = 0, b = 0;
  for (; f < warmup; ++f) steps.push_back(fwd(f));
  while (f < total) {
    steps.push_back(fwd(f++));
    steps.push_back(bwd(b++));
  }
  while (b < total) steps.push_back(bwd(b++));
  return steps;
}

int HybridStageOfRank(const HybridOptions& o, int devices, RankId r) {
  const int p = o.pipeline;
  if (o.expert > 1) return r / (devices / p);
  return (r / (o.tensor * o.context.degree)) % p;
}

namespace {

// dp_overlap's windows of one rank: the compute tasks of its last
// micro-batch's backward (the buckets fill during it) and of its first
// micro-batch's forward (the next step's, standing in for it: the
// distributed optimizer's all-gather runs there).
using OverlapWindow = std::pair<std::vector<TaskId>, std::vector<TaskId>>;

// Each rank's OverlapWindow in `iteration`, from the tasks at ids >= `from`.
std::map<RankId, OverlapWindow> OverlapWindows(const Plan& plan, std::size_t from, int iteration) {
  std::map<RankId, std::int32_t> last_mb;
  for (std::size_t id = from; id < plan.num_tasks(); ++id) {
    const Task& task = plan.tasks()[id];
    if (task.iteration == iteration && IsComputeKind(task.kind) && task.kind != TaskKind::kForward)
      last_mb[task.rank] = std::max(last_mb[task.rank], task.micro_batch);
  }
  std::map<RankId, OverlapWindow> windows;
  for (std::size_t id = from; id < plan.num_tasks(); ++id) {
    const Task& task = plan.tasks()[id];
    if (task.iteration != iteration || !IsComputeKind(task.kind)) continue;
    if (task.kind == TaskKind::kForward && task.micro_batch == 0)
      windows[task.rank].second.push_back(static_cast<TaskId>(id));
    else if (task.kind != TaskKind::kForward && task.micro_batch == last_mb[task.rank])
      windows[task.rank].first.push_back(static_cast<TaskId>(id));
  }
  return windows;
}

}  // namespace

Plan BuildHybridPlan(const models::ModelGraph& graph, const ClusterShape& cluster,
                     const HybridOptions& o) {
  if (o.schedule == PipelineSchedule::kPipeDream) {
    if (!SharedWeights(graph, o.chunks, o.pipeline).empty())
      throw UserError("schedule pipedream is simulated without weights shared across stages (tied "
                      "embeddings)",
                      "untie the embeddings, or use schedule 1f1b");
    return BuildPipeDreamPlan(graph, cluster, o);
  }
  const int n = cluster.nodes * cluster.devices_per_node;
  const int t = o.tensor, p = o.pipeline, v = o.virtual_stages, m = o.micro_batches;
  const int cp = o.context.degree;
  const bool sp = o.sequence_parallel && t > 1;
  if (t < 1 || p < 1 || cp < 1 || n % (t * p * cp) != 0)
    throw UserError("tensor_parallel x pipeline_parallel" + std::string(cp > 1 ? " x context_parallel" : "") +
                        " (" + std::to_string(t) + " x " + std::to_string(p) +
                        (cp > 1 ? " x " + std::to_string(cp) : "") + ") must divide the " +
                        std::to_string(n) + " devices",
                    "data parallelism is devices / (t x p)");
  const int d = n / (t * p * cp);
  const int ep = o.expert;
  if (ep < 1 || d % ep != 0 || (ep > 1 && t > 1))
    throw UserError("expert_parallel (" + std::to_string(ep) + ") must divide data parallelism (" +
                        std::to_string(d) + ") and is simulated with tensor_parallel 1",
                    "expert groups are made of data-parallel replicas");
  if (ep > 1 && cp > 1)
    throw UserError("expert_parallel " + std::to_string(ep) +
                        " is simulated without context parallelism",
                    "use context_parallel: 1");
  if (o.schedule == PipelineSchedule::kInterleaved && (v < 2 || m % p != 0))
    throw UserError("the interleaved schedule needs virtual_stages >= 2 and a number of "
                    "micro-batches (" + std::to_string(m) + ") divisible by pipeline_parallel (" +
                        std::to_string(p) + ")",
                    "as Megatron-LM requires");
  DTSIM_CHECK(static_cast<int>(o.chunks.size()) == p * v, "one op range per chunk");
  DTSIM_CHECK(o.micro_batch >= 1 && m >= 1 && o.iterations >= 1, "bad hybrid options");

  Plan plan;
  for (int r = 0; r < n; ++r)
    plan.ranks.push_back({r / cluster.devices_per_node, r % cluster.devices_per_node});
  // Context rank 0's; context rank q is q x t further. Expert parallelism
  // keeps an expert group's replicas on consecutive devices: data before
  // pipeline (Megatron-LM's tp-ep-dp-pp order; never with context ranks).
  const auto rank_of = [&](int replica, int stage, int k) {
    return ep > 1 ? stage * d * t + replica * t + k : replica * p * cp * t + stage * cp * t + k;
  };
  if (o.symmetric) {
    std::vector<bool> mask(static_cast<std::size_t>(n), false);
    for (int s = 0; s < p; ++s) mask[static_cast<std::size_t>(rank_of(0, s, 0))] = true;
    plan.MaterializeOnly(mask);
  }
  plan.model_name = graph.name();
  plan.strategy = t == 1 && cp == 1 && m == 1 ? Strategy::kModel : Strategy::kHybrid;
  plan.iterations = o.iterations;
  plan.batch_per_rank = o.micro_batch * m;
  plan.samples_per_iteration = static_cast<std::int64_t>(d) * o.micro_batch * m;
  plan.ops_on_rank.resize(static_cast<std::size_t>(n));

  // Groups: tensor group of each (replica, stage); data group of each (stage, tensor rank).
  std::map<std::pair<int, int>, std::int32_t> tp_group, dp_group, cp_group;
  for (int r = 0; r < d; ++r)
    for (int s = 0; s < p; ++s) {
      std::vector<RankId> g;
      for (int k = 0; k < t; ++k) g.push_back(rank_of(r, s, k));
      if (t > 1) tp_group[{r, s}] = plan.AddGroup(g);
    }
  // With context parallelism the data group spans the context ranks too
  // (parameters are replicated over them), and each (replica, stage) has a
  // context group of its tensor rank 0 and its peers.
  for (int s = 0; s < p; ++s)
    for (int k = 0; k < t; ++k) {
      std::vector<RankId> g;
      for (int r = 0; r < d; ++r)
        for (int q = 0; q < cp; ++q) g.push_back(rank_of(r, s, k) + q * t);
      if (d * cp > 1) dp_group[{s, k}] = plan.AddGroup(g);
    }
  if (cp > 1)
    for (int r = 0; r < d; ++r)
      for (int s = 0; s < p; ++s) {
        std::vector<RankId> g;
        for (int q = 0; q < cp; ++q) g.push_back(rank_of(r, s, 0) + q * t);
        cp_group[{r, s}] = plan.AddGroup(g);
      }
  // Every rank materialized: the tensor groups of context ranks q > 0 and
  // the context groups of tensor ranks k > 0 (the collectives of a
  // symmetric plan run on context and tensor rank 0 only).
  std::map<std::tuple<int, int, int>, std::int32_t> tp_group_q, cp_group_k;  // (r, s, q / k)
  if (cp > 1 && !o.symmetric)
    for (int r = 0; r < d; ++r)
      for (int s = 0; s < p; ++s) {
        for (int q = 1; q < cp && t > 1; ++q) {
          std::vector<RankId> g;
          for (int k = 0; k < t; ++k) g.push_back(rank_of(r, s, k) + q * t);
          tp_group_q[{r, s, q}] = plan.AddGroup(g);
        }
        for (int k = 1; k < t; ++k) {
          std::vector<RankId> g;
          for (int q = 0; q < cp; ++q) g.push_back(rank_of(r, s, k) + q * t);
          cp_group_k[{r, s, k}] = plan.AddGroup(g);
        }
      }
  const auto tp_group_of = [&](int r, int s, int q) {
    return q == 0 ? tp_group.at({r, s}) : tp_group_q.at({r, s, q});
  };
  const auto cp_group_of = [&](int r, int s, int k) {
    return k == 0 ? cp_group.at({r, s}) : cp_group_k.at({r, s, k});
  };
  // Expert groups of each (stage, group of `ep` replicas, tensor rank) and
  // expert-data groups of each (stage, tensor rank, rank in the expert group).
  std::map<std::tuple<int, int, int>, std::int32_t> ep_group, edp_group;
  if (ep > 1)
    for (int s = 0; s < p; ++s)
      for (int k = 0; k < t; ++k) {
        for (int j = 0; j < d / ep; ++j) {
          std::vector<RankId> g;
          for (int e = 0; e < ep; ++e) g.push_back(rank_of(j * ep + e, s, k));
          ep_group[{s, j, k}] = plan.AddGroup(g);
        }
        for (int e = 0; e < ep && d > ep; ++e) {
          std::vector<RankId> g;
          for (int j = 0; j < d / ep; ++j) g.push_back(rank_of(j * ep + e, s, k));
          edp_group[{s, k, e}] = plan.AddGroup(g);
        }
      }
  for (int r = 0; r < d; ++r)
    for (int s = 0; s < p; ++s)
      for (int q = 0; q < cp; ++q)
        for (int k = 0; k < t; ++k)
          for (int j = 0; j < v; ++j) {
            const auto& [b, e] = o.chunks[static_cast<std::size_t>(s + j * p)];
            for (OpId x = b; x < e; ++x)
              plan.ops_on_rank[static_cast<std::size_t>(rank_of(r, s, k) + q * t)].push_back(
                  static_cast<std::int32_t>(x));
          }
  const std::vector<std::pair<OpId, OpId>> cores =
      cp > 1 ? AttentionCores(graph) : std::vector<std::pair<OpId, OpId>>{};
  const auto segments = [&](OpId b, OpId e, bool backward) {
    auto segs = backward ? BackwardSegments(graph, b, e, t > 1, sp, ep)
                         : ForwardSegments(graph, b, e, t > 1, sp, ep);
    return cores.empty() ? segs : SplitAtCores(segs, cores, backward);
  };
  const auto is_core = [&](OpId b, OpId e) {
    return std::find(cores.begin(), cores.end(), std::pair<OpId, OpId>{b, e}) != cores.end();
  };

  // Weights shared across stages (a tied LM head in another stage than its
  // embedding table): the head's stage holds a copy, and each replica's
  // and tensor rank's stages holding the table or a copy form a group.
  const std::vector<SharedWeight> shared = SharedWeights(graph, o.chunks, p);
  // (op, replica, tensor rank, context rank); context ranks q > 0 only
  // when every rank is materialized.
  std::map<std::tuple<OpId, int, int, int>, std::int32_t> embedding_group;
  for (int q = 0; q < (o.symmetric ? 1 : cp); ++q)
    for (const SharedWeight& w : shared)
      for (int r = 0; r < d; ++r)
        for (int k = 0; k < t; ++k) {
          std::vector<RankId> g;
          for (int s : w.group_stages) g.push_back(rank_of(r, s, k) + q * t);
          embedding_group[{w.op, r, k, q}] = plan.AddGroup(g);
        }

  // Materialized replicas, and per replica its materialized (context rank,
  // tensor rank) pairs (all, or replica 0's rank 0 when symmetric). The
  // replicas are emitted in blocks (one replica; with expert parallelism
  // and every rank materialized, an expert group's `ep`), and a block's
  // ranks together, as lanes: each task of the schedule once per lane, each
  // tensor-, context- or expert-parallel collective once over its members'
  // lanes.
  struct Lane {
    int replica, k, q;  // replica, tensor rank, context rank
  };
  std::vector<int> replica_ids;
  std::vector<std::pair<int, int>> ranks_in_replica;  // (q, k) materialized in each replica
  for (int q = 0; q < cp; ++q)
    for (int k = 0; k < t; ++k)
      if (plan.IsMaterialized(rank_of(0, 0, k) + q * t)) ranks_in_replica.push_back({q, k});
  for (int r = 0; r < d; ++r)
    if (plan.IsMaterialized(rank_of(r, 0, 0))) replica_ids.push_back(r);
  std::vector<Lane> reps;  // every materialized rank of a stage
  for (int r : replica_ids)
    for (const auto& [q, k] : ranks_in_replica) reps.push_back({r, k, q});
  std::vector<std::vector<int>> blocks_of_replicas;
  const int block_size = ep > 1 && !o.symmetric ? ep : 1;
  for (std::size_t x = 0; x < replica_ids.size(); x += static_cast<std::size_t>(block_size))
    blocks_of_replicas.emplace_back(replica_ids.begin() + static_cast<std::ptrdiff_t>(x),
                                    replica_ids.begin() + static_cast<std::ptrdiff_t>(x + block_size));
  const auto rank_of_lane = [&](const Lane& l, int stage) {
    return rank_of(l.replica, stage, l.k) + l.q * t;
  };

  const int chunks = p * v;
  // PipeDream-2BW runs every iteration's micro-batches as one 1F1B
  // schedule (no flush): one block of m x iterations micro-batches, each
  // step's iteration set as it is emitted.
  const bool async = o.schedule == PipelineSchedule::kPipeDream2BW;
  if (async && (v != 1 || !shared.empty() || reps.size() != 1 || ep > 1))
    throw UserError(
        "schedule pipedream_2bw is simulated with one model chunk per device, no weights shared "
        "across stages (tied embeddings), identical replicas (no stragglers) and no expert "
        "parallelism",
        "use schedule 1f1b (PipeDream-Flush), or untie the embeddings");
  const int blocks = async ? 1 : o.iterations;
  const int block_micro_batches = async ? m * o.iterations : m;
  // The parameters (and gradient bytes, shared-weight copies included) of
  // each stage's chunks.
  const auto stage_sizes = [&](int s) {
    double grad_bytes = 0;
    std::int64_t params = 0;
    for (int j = 0; j < v; ++j) {
      const auto& [b, e] = o.chunks[static_cast<std::size_t>(s + j * p)];
      for (OpId x = b; x < e; ++x) {
        grad_bytes += graph.op(x).ParamBytes();
        params += graph.op(x).params;
      }
    }
    for (const SharedWeight& w : shared)
      for (int copy : w.copy_stages)
        if (copy == s) {
          grad_bytes += graph.op(w.op).ParamBytes();
          params += graph.op(w.op).params;
        }
    return std::pair<double, std::int64_t>(grad_bytes, params);
  };
  // The gradient bytes of the routed experts among them.
  const auto stage_expert_bytes = [&](int s) {
    double bytes = 0;
    for (int j = 0; j < v; ++j) {
      const auto& [b, e] = o.chunks[static_cast<std::size_t>(s + j * p)];
      for (OpId x = b; x < e; ++x)
        if (HoldsExpertParams(graph.op(x))) bytes += graph.op(x).ParamBytes();
    }
    return bytes;
  };
  for (int block = 0; block < blocks; ++block) {
    const std::size_t block_first_task = plan.num_tasks();
    int it = block;  // the iteration of the tasks being emitted
    std::map<RankId, TaskId> last_of;  // each materialized rank's last backward
    for (const std::vector<int>& block_replicas : blocks_of_replicas) {
      std::vector<Lane> lanes;
      for (int r : block_replicas)
        for (const auto& [q, k] : ranks_in_replica) lanes.push_back({r, k, q});
      const std::size_t nl = lanes.size();
      // The lanes' indices grouped by `key` (lanes equal under it share a
      // group), each group in lane order.
      const auto lanes_by = [&](auto key) {
        std::map<decltype(key(lanes[0])), std::vector<std::size_t>> by;
        for (std::size_t i = 0; i < nl; ++i) by[key(lanes[i])].push_back(i);
        return by;
      };
      // fwd_out[c][mb]: per lane, the task whose end makes chunk c's output
      // of mb available to chunk c + 1 (a send, or the last forward task);
      // bwd_out[c][mb]: likewise for the gradient going to chunk c - 1.
      // Empty until emitted.
      std::vector<std::vector<Lanes>> fwd_out(
          static_cast<std::size_t>(chunks),
          std::vector<Lanes>(static_cast<std::size_t>(block_micro_batches)));
      auto bwd_out = fwd_out;
      std::vector<std::vector<ScheduleStep>> sched(static_cast<std::size_t>(p));
      for (int s = 0; s < p; ++s)
        sched[static_cast<std::size_t>(s)] =
            StageSchedule(async ? PipelineSchedule::kOneFOneB : o.schedule, s, p,
                          block_micro_batches, v);
      // PipeDream-2BW: per stage and lane, the update waiting to be emitted
      // (its dependency and iteration), one iteration behind.
      std::vector<std::vector<std::pair<TaskId, int>>> pending_update(
          static_cast<std::size_t>(p), std::vector<std::pair<TaskId, int>>(nl, {-1, -1}));
      const auto emit_update = [&](int stage, std::size_t lane, std::pair<TaskId, int> update) {
        if (update.second < 0) return;
        Task opt;
        opt.kind = TaskKind::kOptimizer;
        opt.rank = rank_of_lane(lanes[lane], stage);
        // It runs during the next iteration (the last one's at the end):
        // counted there, so an iteration ends with its own last backward.
        opt.iteration = std::min(update.second + 1, o.iterations - 1);
        opt.params = stage_sizes(stage).second;
        plan.AddTask(opt, std::span(&update.first, 1));
      };
      std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
      std::vector<Lanes> last_backward(static_cast<std::size_t>(p), Lanes(nl, -1));

      // A tensor-parallel collective of `bytes_per_sample` x the micro-batch
      // over the tensor group of (replica, stage), lane i's member after
      // deps[i]; returns the lanes' member tasks.
      auto tp_collective = [&](CollectiveOp op, int stage, double bytes_per_sample,
                               const std::vector<std::vector<TaskId>>& deps,
                               std::vector<std::pair<std::int32_t, std::size_t>>* made = nullptr) {
        Lanes out(nl);
        for (const auto& [key, members] :
             lanes_by([](const Lane& l) { return std::pair(l.replica, l.q); })) {
          Collective c;
          c.op = op;
          c.algorithm = o.algorithm;
          c.bytes = bytes_per_sample * o.micro_batch;
          c.group = tp_group_of(key.first, stage, key.second);
          c.activations = true;
          c.copies = o.symmetric ? d * cp : 1;
          std::vector<std::vector<TaskId>> member_deps;
          for (std::size_t i : members) member_deps.push_back(deps[i]);
          const auto ci = plan.AddCollective(c, member_deps, it);
          const auto& tasks = plan.collectives()[static_cast<std::size_t>(ci)].tasks;
          for (std::size_t y = 0; y < members.size(); ++y) out[members[y]] = tasks[y];
          if (made != nullptr) made->push_back({ci, members.front()});
        }
        return out;
      };
      // Lane i's dependency list: last[i] unless none (-1).
      const auto after = [nl](const Lanes& last) {
        std::vector<std::vector<TaskId>> deps(nl);
        for (std::size_t i = 0; i < nl; ++i)
          if (last[i] >= 0) deps[i].push_back(last[i]);
        return deps;
      };
      // On a symmetric plan: attention's core on `rank`, context rank 0 of
      // (replica, stage), standing for its group.
      auto context_attention_on = [&](int replica, RankId rank, int stage, OpId b, OpId e,
                                      TaskKind kind, int mb, TaskId dep) {
        AttentionSite site;
        site.rank = rank;
        // The ring moves at the pace of its slowest hop: a group spanning
        // nodes is represented by a hop that leaves the node.
        site.next = rank + t;
        for (int q = 1; q < cp; ++q)
          if (plan.ranks[static_cast<std::size_t>(rank + q * t)].node !=
              plan.ranks[static_cast<std::size_t>(rank)].node) {
            site.next = rank + q * t;
            break;
          }
        site.group = cp_group.at({replica, stage});
        site.begin = b;
        site.end = e;
        site.iteration = it;
        site.micro_batch = mb;
        site.batch = o.micro_batch;
        // Ring sends: one per member; Ulysses' all-to-alls: one per group.
        site.copies = !o.symmetric ? 1
                      : o.context.kind == ContextParallelKind::kRing ? d * t * cp
                                                                    : d * t;
        site.algorithm = o.algorithm;
        return EmitContextAttention(plan, graph, o.context, site, kind, dep);
      };
      // Attention's core [b, e) of one micro-batch under context
      // parallelism on each lane of `stage`, after last[i]: symmetric, on
      // context rank 0 standing for its group; else over each context
      // group's lanes.
      auto context_attention = [&](int stage, OpId b, OpId e, TaskKind kind, int mb, Lanes last) {
        for (const auto& [key, members] :
             lanes_by([](const Lane& l) { return std::pair(l.replica, l.k); })) {
          const Lane& l = lanes[members.front()];
          if (members.size() == 1) {
            last[members.front()] =
                context_attention_on(l.replica, rank_of_lane(l, stage), stage, b, e, kind, mb,
                                     last[members.front()]);
            continue;
          }
          std::vector<AttentionSite> sites(members.size());
          std::vector<TaskId> deps;
          for (std::size_t y = 0; y < members.size(); ++y) {
            AttentionSite& site = sites[y];
            site.rank = rank_of_lane(lanes[members[y]], stage);
            site.group = cp_group_of(l.replica, stage, l.k);
            site.begin = b;
            site.end = e;
            site.iteration = it;
            site.micro_batch = mb;
            site.batch = o.micro_batch;
            site.algorithm = o.algorithm;
            deps.push_back(last[members[y]]);
          }
          const std::vector<TaskId> ends =
              EmitContextAttentionGroup(plan, graph, o.context, sites, kind, deps);
          for (std::size_t y = 0; y < members.size(); ++y) last[members[y]] = ends[y];
        }
        return last;
      };
      // An expert-parallel all-to-all of `bytes_per_sample` x the
      // micro-batch over each lane's expert group of (replica, stage), after
      // last[i]; returns the lanes' member tasks.
      auto ep_collective = [&](int stage, double bytes_per_sample, const Lanes& last) {
        Lanes out(nl);
        for (const auto& [key, members] : lanes_by([](const Lane& l) { return l.k; })) {
          Collective c;
          c.op = CollectiveOp::kAllToAll;
          c.algorithm = o.algorithm;
          c.bytes = bytes_per_sample * o.micro_batch;
          c.group = ep_group.at({stage, lanes[members.front()].replica / ep, key});
          c.activations = true;
          c.copies = o.symmetric ? d / ep * t : 1;
          std::vector<std::vector<TaskId>> deps(members.size());
          for (std::size_t y = 0; y < members.size(); ++y)
            if (last[members[y]] >= 0) deps[y].push_back(last[members[y]]);
          const auto ci = plan.AddCollective(c, deps, it);
          const auto& tasks = plan.collectives()[static_cast<std::size_t>(ci)].tasks;
          for (std::size_t y = 0; y < members.size(); ++y) out[members[y]] = tasks[y];
        }
        return out;
      };
      // Runs a chain of segment tasks on the lanes' ranks of `stage`, each
      // with its tensor collectives (Segment); returns the last tasks.
      auto chain = [&](int stage, const std::vector<Segment>& segs, TaskKind kind, int mb,
                       Lanes last) {
        for (const Segment& seg : segs) {
          if (is_core(seg.begin, seg.end)) {
            DTSIM_CHECK(seg.gather_before_bytes == 0 && seg.after_bytes == 0,
                        "attention's core carries no tensor-parallel collective");
            last = context_attention(stage, seg.begin, seg.end, kind, mb, last);
            continue;
          }
          if (seg.a2a_before_bytes > 0) last = ep_collective(stage, seg.a2a_before_bytes, last);
          // With tp_comm_overlap: the all-gather feeding this segment's
          // GEMM, and the collective after it, each pipelined with the
          // segment's task (of the group's first lane).
          std::vector<std::pair<std::int32_t, std::size_t>> gathers;
          if (t > 1 && seg.gather_before_bytes > 0)
            last = tp_collective(CollectiveOp::kAllGather, stage, seg.gather_before_bytes, after(last),
                                 &gathers);
          const Lanes regather =
              t > 1 && seg.regather_bytes > 0
                  ? tp_collective(CollectiveOp::kAllGather, stage, seg.regather_bytes, after(last))
                  : Lanes(nl, -1);
          for (std::size_t i = 0; i < nl; ++i) {
            Task task;
            task.kind = kind;
            task.rank = rank_of_lane(lanes[i], stage);
            task.iteration = it;
            task.micro_batch = mb;
            task.op = static_cast<std::int32_t>(seg.begin);
            task.op_count = static_cast<std::int32_t>(seg.end - seg.begin);
            task.batch = o.micro_batch;
            last[i] = last[i] < 0 ? plan.AddTask(task) : plan.AddTask(task, std::span(&last[i], 1));
          }
          if (o.tp_comm_overlap)
            for (const auto& [ci, lane] : gathers) plan.SetOverlap(ci, t, {last[lane]});
          if (t > 1 && seg.after_bytes > 0) {
            std::vector<std::vector<TaskId>> deps = after(last);
            for (std::size_t i = 0; i < nl; ++i)
              if (regather[i] >= 0) deps[i].push_back(regather[i]);
            const Lanes segment = last;
            std::vector<std::pair<std::int32_t, std::size_t>> reduces;
            last = tp_collective(seg.after, stage, seg.after_bytes, deps, &reduces);
            if (o.tp_comm_overlap)
              for (const auto& [ci, lane] : reduces) plan.SetOverlap(ci, t, {segment[lane]});
          }
          if (seg.a2a_after_bytes > 0) last = ep_collective(stage, seg.a2a_after_bytes, last);
        }
        return last;
      };
      // Each lane's transfer from `from_stage` to `to_stage` after last[i].
      auto send = [&](int from_stage, int to_stage, double bytes, const Lanes& last, int mb) {
        Lanes out(nl);
        for (std::size_t i = 0; i < nl; ++i) {
          Task task;
          task.kind = TaskKind::kSend;
          task.stream = StreamKind::kComm;
          task.rank = rank_of_lane(lanes[i], from_stage);
          task.peer = rank_of_lane(lanes[i], to_stage);
          task.bytes = bytes;
          task.iteration = it;
          task.micro_batch = mb;
          task.copies = o.symmetric ? d * t * cp : 1;
          out[i] = plan.AddTask(task, std::span(&last[i], 1));
        }
        return out;
      };

      // Emit the stages' schedules in an order in which every cross-stage
      // dependency is emitted first (the schedules are deadlock-free).
      bool progress = true;
      while (progress) {
        progress = false;
        for (int s = 0; s < p; ++s) {
          auto& i = next[static_cast<std::size_t>(s)];
          const auto& steps = sched[static_cast<std::size_t>(s)];
          while (i < steps.size()) {
            ScheduleStep st = steps[i];
            const auto mb = static_cast<std::size_t>(st.micro_batch);  // within the block
            if (async) {
              it = st.micro_batch / m;
              st.micro_batch %= m;
            }
            const int c = s + st.local_chunk * p;
            const auto cc = static_cast<std::size_t>(c);
            const auto& [b, e] = o.chunks[cc];
            Lanes dep(nl, -1);
            if (st.forward) {
              if (c > 0) {
                dep = fwd_out[cc - 1][mb];
                if (dep.empty()) break;  // its input is not emitted yet
              }
              Lanes last = chain(s, segments(b, e, false), TaskKind::kForward,
                                 st.micro_batch, dep);
              if (c + 1 < chunks) {
                const int to = (c + 1) % p;
                // With sequence parallelism a stage boundary inside the
                // region sends each rank's 1/t of the sequence.
                const double share = sp && InSequenceParallelRegion(graph.op(e - 1)) ? 1.0 / t : 1.0;
                if (to != s)
                  last = send(s, to, share * OutputBytes(graph, e - 1, o.micro_batch), last,
                              st.micro_batch);
              }
              fwd_out[cc][mb] = last;
            } else {
              dep = c + 1 < chunks ? bwd_out[cc + 1][mb] : fwd_out[cc][mb];
              if (dep.empty()) break;
              // Full recomputation re-runs the chunk's forward, its
              // tensor-parallel all-reduces included (they sit inside the
              // checkpointed layers: Megatron-LM's RowParallelLinear).
              if (o.recompute)
                dep = chain(s, segments(b, e, false), TaskKind::kForward,
                            st.micro_batch, dep);
              // Selective recomputation re-runs only the listed ranges
              // (attention's core) of the chunk, before its backward.
              for (const auto& [rb, re] : o.recompute_ranges) {
                if (rb < b || re > e) continue;
                if (is_core(rb, re)) {
                  dep = context_attention(s, rb, re, TaskKind::kForward, st.micro_batch, dep);
                  continue;
                }
                for (std::size_t x = 0; x < nl; ++x) {
                  Task task;
                  task.kind = TaskKind::kForward;
                  task.rank = rank_of_lane(lanes[x], s);
                  task.iteration = it;
                  task.micro_batch = st.micro_batch;
                  task.op = static_cast<std::int32_t>(rb);
                  task.op_count = static_cast<std::int32_t>(re - rb);
                  task.batch = o.micro_batch;
                  dep[x] = dep[x] < 0 ? plan.AddTask(task) : plan.AddTask(task, std::span(&dep[x], 1));
                }
              }
              Lanes last = chain(s, segments(b, e, true), TaskKind::kBackward,
                                 st.micro_batch, dep);
              last_backward[static_cast<std::size_t>(s)] = last;
              if (c > 0) {
                const int to = (c - 1) % p;
                const auto ins = graph.inputs(b);
                const double share =
                    sp && !ins.empty() && InSequenceParallelRegion(graph.op(ins.front())) ? 1.0 / t : 1.0;
                const double bytes =
                    ins.empty() ? 0 : share * OutputBytes(graph, ins.front(), o.micro_batch);
                if (to != s) last = send(s, to, bytes, last, st.micro_batch);
              }
              bwd_out[cc][mb] = last;
              if (async && st.micro_batch == m - 1) {
                // The stage's gradients of iteration `it` are complete:
                // all-reduce them over the replicas now; the update of the
                // previous iteration runs here, this one's a block later.
                for (std::size_t x = 0; x < nl; ++x) {
                  TaskId ready = last_backward[static_cast<std::size_t>(s)][x];
                  const double grad_bytes = stage_sizes(s).first;
                  if (d * cp > 1 && grad_bytes > 0) {
                    Collective col;
                    col.op = CollectiveOp::kAllReduce;
                    col.algorithm = o.algorithm;
                    col.bytes = grad_bytes;
                    col.group = dp_group.at({s, lanes[x].k});
                    col.copies = o.symmetric ? t : 1;
                    const auto ci = plan.AddCollective(col, {{ready}}, it);
                    ready = plan.collectives()[static_cast<std::size_t>(ci)].tasks[0];
                  }
                  auto& pending = pending_update[static_cast<std::size_t>(s)][x];
                  emit_update(s, x, pending);
                  pending = {ready, it};
                }
              }
            }
            ++i;
            progress = true;
          }
        }
      }
      for (int s = 0; s < p; ++s)
        DTSIM_CHECK(next[static_cast<std::size_t>(s)] == sched[static_cast<std::size_t>(s)].size(),
                    "pipeline schedule deadlocked");

      for (int s = 0; s < p; ++s)
        for (std::size_t x = 0; x < nl; ++x)
          last_of[rank_of_lane(lanes[x], s)] = last_backward[static_cast<std::size_t>(s)][x];
      for (int s = 0; s < p; ++s)
        for (std::size_t x = 0; x < nl; ++x)
          emit_update(s, x, pending_update[static_cast<std::size_t>(s)][x]);
    }
    if (async) continue;  // updates emitted with the schedule

    // Per stage and tensor rank: the gradients (with the copies of shared
    // weights) are all-reduced over the replicas (one collective for the
    // whole group); then each shared weight's gradient is summed between the
    // stage holding it and the stages holding copies; then every member runs
    // its optimizer step. Megatron-LM orders them so (finalize_model_grads:
    // the data-parallel sync, then _allreduce_embedding_grads).
    std::map<RankId, std::vector<TaskId>> ready;  // each materialized rank's update dependencies
    const auto windows = o.dp_overlap ? OverlapWindows(plan, block_first_task, it)
                                      : std::map<RankId, OverlapWindow>{};
    const std::int64_t bucket_params =
        o.dp_bucket_params > 0 ? o.dp_bucket_params
                               : std::max<std::int64_t>(40'000'000, std::int64_t{1'000'000} * d * cp);
    std::vector<std::int64_t> stage_params(static_cast<std::size_t>(p), 0);
    for (int s = 0; s < p; ++s)
      for (int k = 0; k < t; ++k) {
        const auto [grad_bytes, params] = stage_sizes(s);
        stage_params[static_cast<std::size_t>(s)] = params;
        // The materialized members of the data group, in its order.
        std::vector<int> replicas;
        std::vector<RankId> members_rank;
        std::vector<std::vector<TaskId>> deps;
        for (int r = 0; r < d; ++r)
          for (int q = 0; q < cp; ++q) {
            auto it_last = last_of.find(rank_of(r, s, k) + q * t);
            if (it_last == last_of.end()) continue;  // not materialized
            replicas.push_back(r);
            members_rank.push_back(it_last->first);
            deps.push_back({it_last->second});
          }
        if (replicas.empty()) continue;
        // With expert parallelism the experts' gradients go over the
        // expert-data groups instead, after the rest.
        const double expert_bytes = ep > 1 ? stage_expert_bytes(s) : 0.0;
        if (d * cp > 1 && grad_bytes - expert_bytes > 0) {
          Collective c;
          c.op = CollectiveOp::kAllReduce;
          c.algorithm = o.algorithm;
          c.bytes = grad_bytes - expert_bytes;
          c.group = dp_group.at({s, k});
          c.copies = o.symmetric ? t : 1;
          const auto ci = plan.AddCollective(c, deps, it);
          if (o.dp_overlap) {
            const auto at = windows.find(members_rank.front());
            const OverlapWindow none;
            const auto& [backward, forward] = at == windows.end() ? none : at->second;
            const auto buckets = static_cast<std::int32_t>(
                std::max<std::int64_t>(1, (params + bucket_params - 1) / bucket_params));
            plan.SetOverlap(ci, buckets, backward,
                            o.distributed_optimizer ? forward : std::vector<TaskId>{});
          }
          const auto& tasks = plan.collectives()[static_cast<std::size_t>(ci)].tasks;
          for (std::size_t x = 0; x < deps.size(); ++x) deps[x] = {tasks[x]};
        }
        for (int e = 0; e < ep && d > ep && expert_bytes > 0; ++e) {
          std::vector<std::size_t> members;  // indices into replicas
          for (std::size_t x = 0; x < replicas.size(); ++x)
            if (replicas[x] % ep == e) members.push_back(x);
          if (members.empty()) continue;
          std::vector<std::vector<TaskId>> member_deps;
          for (std::size_t x : members) member_deps.push_back(deps[x]);
          Collective c;
          c.op = CollectiveOp::kAllReduce;
          c.algorithm = o.algorithm;
          c.bytes = expert_bytes;
          c.group = edp_group.at({s, k, e});
          c.copies = o.symmetric ? t * ep : 1;
          const auto ci = plan.AddCollective(c, member_deps, it);
          const auto& tasks = plan.collectives()[static_cast<std::size_t>(ci)].tasks;
          for (std::size_t y = 0; y < members.size(); ++y) deps[members[y]] = {tasks[y]};
        }
        for (std::size_t x = 0; x < replicas.size(); ++x) ready[members_rank[x]] = deps[x];
      }
    for (const SharedWeight& w : shared)
      for (const Lane& l : reps) {
        std::vector<std::vector<TaskId>> deps;
        for (int s : w.group_stages) deps.push_back(ready.at(rank_of_lane(l, s)));
        Collective c;
        c.op = CollectiveOp::kAllReduce;
        c.algorithm = o.algorithm;
        c.bytes = graph.op(w.op).ParamBytes();
        c.group = embedding_group.at({w.op, l.replica, l.k, l.q});
        c.shared_op = static_cast<std::int32_t>(w.op);
        c.copies = o.symmetric ? d * t * cp : 1;
        const auto ci = plan.AddCollective(c, deps, it);
        const auto& tasks = plan.collectives()[static_cast<std::size_t>(ci)].tasks;
        for (std::size_t x = 0; x < w.group_stages.size(); ++x)
          ready[rank_of_lane(l, w.group_stages[x])] = {tasks[x]};
      }
    for (int s = 0; s < p; ++s)
      for (const Lane& l : reps) {
        Task opt;
        opt.kind = TaskKind::kOptimizer;
        opt.rank = rank_of_lane(l, s);
        opt.iteration = it;
        opt.params = stage_params[static_cast<std::size_t>(s)];
        plan.AddTask(opt, ready.at(rank_of_lane(l, s)));
      }
  }
  return plan;
}

}  // namespace dtsim::plan
