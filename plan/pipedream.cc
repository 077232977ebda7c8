#include "plan/pipedream.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "common/error.h"
#include "plan/compute_tasks.h"

namespace dtsim::plan {

using models::OpId;

int PipeDreamInFlight(const std::vector<int>& replicas, int stage) {
  const auto s = static_cast<std::size_t>(stage);
  DTSIM_CHECK(s < replicas.size() && replicas[s] >= 1, "stage out of range");
  long long downstream = 0;
  for (std::size_t k = s; k < replicas.size(); ++k) downstream += replicas[k];
  return static_cast<int>((downstream + replicas[s] - 1) / replicas[s]);
}

int PipeDreamRound(const std::vector<int>& replicas) {
  long long l = 1;
  for (int r : replicas) {
    DTSIM_CHECK(r >= 1, "a stage needs a replica");
    l = std::lcm(l, static_cast<long long>(r));
    if (l > 1'000'000)
      throw UserError("the stages' replica counts have a least common multiple above 1,000,000",
                      "an iteration runs that many minibatches; choose counts with a small lcm");
  }
  return static_cast<int>(l);
}

Plan BuildPipeDreamPlan(const models::ModelGraph& graph, const ClusterShape& cluster,
                        const HybridOptions& o) {
  const int n = cluster.nodes * cluster.devices_per_node;
  const int p = o.pipeline;
  const std::vector<int>& r = o.stage_replicas;
  DTSIM_CHECK(o.tensor == 1 && o.virtual_stages == 1 && !o.recompute && o.recompute_ranges.empty(),
              "PipeDream plans: one chunk per device, no tensor split, no recomputation");
  DTSIM_CHECK(static_cast<int>(r.size()) == p && static_cast<int>(o.chunks.size()) == p,
              "one replica count and one op range per stage");
  DTSIM_CHECK(std::accumulate(r.begin(), r.end(), 0LL) == n, "the stages' replicas are the devices");
  DTSIM_CHECK(o.micro_batch >= 1 && o.iterations >= 1, "bad PipeDream options");
  const int round = PipeDreamRound(r);
  const long long total_ll = static_cast<long long>(round) * o.iterations;
  if (total_ll > std::numeric_limits<int>::max() / 4)
    throw UserError("the PipeDream plan would run " + std::to_string(total_ll) + " minibatches",
                    "lower workload.iterations");
  const int total = static_cast<int>(total_ll);

  std::vector<int> offset(static_cast<std::size_t>(p) + 1, 0);
  for (int s = 0; s < p; ++s) offset[s + 1] = offset[s] + r[s];
  const auto rank_of = [&](int s, int mb) { return offset[s] + mb % r[s]; };

  Plan plan;
  for (int k = 0; k < n; ++k)
    plan.ranks.push_back({k / cluster.devices_per_node, k % cluster.devices_per_node});
  plan.model_name = graph.name();
  plan.strategy = Strategy::kHybrid;
  plan.iterations = o.iterations;
  plan.batch_per_rank = o.micro_batch * (round / r[0]);  // an input replica's samples
  plan.samples_per_iteration = static_cast<std::int64_t>(round) * o.micro_batch;
  plan.ops_on_rank.resize(static_cast<std::size_t>(n));
  std::vector<std::int64_t> stage_params(static_cast<std::size_t>(p), 0);
  std::vector<double> stage_grad_bytes(static_cast<std::size_t>(p), 0);
  std::vector<std::int32_t> group(static_cast<std::size_t>(p), -1);
  for (int s = 0; s < p; ++s) {
    const auto& [b, e] = o.chunks[static_cast<std::size_t>(s)];
    for (OpId x = b; x < e; ++x) {
      stage_params[s] += graph.op(x).params;
      stage_grad_bytes[s] += graph.op(x).ParamBytes();
    }
    std::vector<RankId> members;
    for (int q = 0; q < r[s]; ++q) {
      members.push_back(offset[s] + q);
      for (OpId x = b; x < e; ++x)
        plan.ops_on_rank[static_cast<std::size_t>(offset[s] + q)].push_back(static_cast<std::int32_t>(x));
    }
    if (r[s] > 1) group[s] = plan.AddGroup(members);
  }
  // A replicated stage's backward runs in segments, from its last op down,
  // each closing a gradient bucket of `bucket_bytes` (PyTorch DDP, which
  // PipeDream's runtime uses for replicated stages, all-reduces each bucket
  // as soon as the backward has filled it); unreplicated stages in one task.
  // segments[s]: [begin, end) op ranges in backward order, with their bytes.
  struct Segment {
    OpId begin, end;
    double bytes;
  };
  std::vector<std::vector<Segment>> segments(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    const auto& [b, e] = o.chunks[static_cast<std::size_t>(s)];
    auto& list = segments[static_cast<std::size_t>(s)];
    if (r[s] == 1 || o.bucket_bytes <= 0) {
      list.push_back({b, e, stage_grad_bytes[s]});
      continue;
    }
    OpId end = e;
    double bytes = 0;
    for (OpId x = e; x-- > b;) {
      bytes += graph.op(x).ParamBytes();
      if (bytes >= o.bucket_bytes && x > b) {
        list.push_back({x, end, bytes});
        end = x;
        bytes = 0;
      }
    }
    list.push_back({b, end, bytes});
  }

  // Per stage and minibatch: the task whose end hands the activation to the
  // next stage (fwd_out) or the gradient to the previous one (bwd_out).
  std::vector<std::vector<TaskId>> fwd_out(static_cast<std::size_t>(p),
                                           std::vector<TaskId>(static_cast<std::size_t>(total), -1));
  auto bwd_out = fwd_out;
  // Per stage, replica and round k: the tasks of its k-th backward's
  // segments (for the syncs; empty until emitted).
  std::vector<std::vector<std::vector<std::vector<TaskId>>>> backward(static_cast<std::size_t>(p));
  // Per stage and round: what every replica's update waits for (its member
  // task of each bucket's all-reduce), once emitted.
  std::vector<std::vector<std::vector<std::vector<TaskId>>>> synced(static_cast<std::size_t>(p));

  struct Replica {
    int stage = 0, index = 0;
    std::vector<std::pair<bool, int>> steps;  // (forward, minibatch)
    std::size_t next = 0;
    int pending_update = -1;  // k of the backward whose update is not emitted yet
  };
  std::vector<Replica> replicas;
  for (int s = 0; s < p; ++s) {
    const int per_replica = total / r[s];
    backward[s].assign(static_cast<std::size_t>(r[s]),
                       std::vector<std::vector<TaskId>>(static_cast<std::size_t>(per_replica)));
    synced[s].resize(static_cast<std::size_t>(per_replica));
    const int warmup = std::min(PipeDreamInFlight(r, s) - 1, per_replica);
    for (int q = 0; q < r[s]; ++q) {
      Replica x;
      x.stage = s;
      x.index = q;
      int f = 0, bk = 0;
      const auto mb = [&](int k) { return q + k * r[s]; };
      for (; f < warmup; ++f) x.steps.push_back({true, mb(f)});
      while (f < per_replica) {
        x.steps.push_back({true, mb(f++)});
        x.steps.push_back({false, mb(bk++)});
      }
      while (bk < per_replica) x.steps.push_back({false, mb(bk++)});
      replicas.push_back(std::move(x));
    }
  }

  const auto send = [&](RankId from, RankId to, double bytes, TaskId dep, int mb) {
    Task t;
    t.kind = TaskKind::kSend;
    t.stream = StreamKind::kComm;
    t.rank = from;
    t.peer = to;
    t.bytes = bytes;
    t.iteration = mb / round;
    t.micro_batch = mb % round;
    return plan.AddTask(t, std::span(&dep, 1));
  };
  // Emits the replica's pending update when its round's backwards are all
  // emitted; false when it must wait for another replica.
  const auto emit_update = [&](Replica& x) {
    const int s = x.stage, k = x.pending_update;
    const int mb = x.index + k * r[s];
    std::vector<TaskId> ready = {backward[s][x.index][k].back()};
    if (r[s] > 1) {
      auto& members = synced[s][static_cast<std::size_t>(k)];  // [replica][bucket]
      if (members.empty()) {
        for (int q = 0; q < r[s]; ++q)
          if (backward[s][q][k].empty()) return false;
        members.assign(static_cast<std::size_t>(r[s]), {});
        const auto& segs = segments[static_cast<std::size_t>(s)];
        for (std::size_t g = 0; g < segs.size(); ++g) {
          if (segs[g].bytes <= 0) continue;
          std::vector<std::vector<TaskId>> deps;
          for (int q = 0; q < r[s]; ++q) deps.push_back({backward[s][q][k][g]});
          Collective c;
          c.op = CollectiveOp::kAllReduce;
          c.algorithm = o.algorithm;
          c.bytes = segs[g].bytes;
          c.group = group[s];
          c.bucket = static_cast<std::int32_t>(g);
          const auto ci = plan.AddCollective(c, deps, mb / round);
          const auto& tasks = plan.collectives()[static_cast<std::size_t>(ci)].tasks;
          for (int q = 0; q < r[s]; ++q) members[static_cast<std::size_t>(q)].push_back(tasks[static_cast<std::size_t>(q)]);
        }
      }
      if (!members[static_cast<std::size_t>(x.index)].empty()) ready = members[static_cast<std::size_t>(x.index)];
    }
    Task opt;
    opt.kind = TaskKind::kOptimizer;
    opt.rank = offset[s] + x.index;
    opt.iteration = mb / round;
    opt.micro_batch = mb % round;
    opt.params = stage_params[s];
    plan.AddTask(opt, ready);
    x.pending_update = -1;
    return true;
  };

  bool progress = true;
  while (progress) {
    progress = false;
    for (Replica& x : replicas) {
      const int s = x.stage;
      const RankId rank = offset[s] + x.index;
      const auto& [b, e] = o.chunks[static_cast<std::size_t>(s)];
      while (true) {
        if (x.pending_update >= 0) {
          if (!emit_update(x)) break;
          progress = true;
          continue;
        }
        if (x.next == x.steps.size()) break;
        const auto [forward, mb] = x.steps[x.next];
        const auto umb = static_cast<std::size_t>(mb);
        Task t;
        t.rank = rank;
        t.iteration = mb / round;
        t.micro_batch = mb % round;
        t.op = static_cast<std::int32_t>(b);
        t.op_count = static_cast<std::int32_t>(e - b);
        t.batch = o.micro_batch;
        if (forward) {
          const TaskId dep = s > 0 ? fwd_out[s - 1][umb] : -1;
          if (s > 0 && dep < 0) break;
          t.kind = TaskKind::kForward;
          TaskId last = dep < 0 ? plan.AddTask(t) : plan.AddTask(t, std::span(&dep, 1));
          if (s + 1 < p) last = send(rank, rank_of(s + 1, mb), OutputBytes(graph, e - 1, o.micro_batch), last, mb);
          fwd_out[s][umb] = last;
        } else {
          const TaskId dep = s + 1 < p ? bwd_out[s + 1][umb] : fwd_out[s][umb];
          if (dep < 0) break;
          t.kind = TaskKind::kBackward;
          const int k = mb / r[s];
          auto& done = backward[s][x.index][static_cast<std::size_t>(k)];
          TaskId last = dep;
          for (const Segment& seg : segments[static_cast<std::size_t>(s)]) {
            t.op = static_cast<std::int32_t>(seg.begin);
            t.op_count = static_cast<std::int32_t>(seg.end - seg.begin);
            last = plan.AddTask(t, std::span(&last, 1));
            done.push_back(last);
          }
          if (s > 0) {
            const auto ins = graph.inputs(b);
            const double bytes = ins.empty() ? 0 : OutputBytes(graph, ins.front(), o.micro_batch);
            last = send(rank, rank_of(s - 1, mb), bytes, last, mb);
          }
          bwd_out[s][umb] = last;
          x.pending_update = k;
        }
        ++x.next;
        progress = true;
      }
    }
  }
  for (const Replica& x : replicas)
    DTSIM_CHECK(x.next == x.steps.size() && x.pending_update < 0, "PipeDream schedule deadlocked");
  return plan;
}

PipeDreamPartition PlanPipeDream(const PipeDreamProblem& pr) {
  const int units = static_cast<int>(pr.compute_s.size());
  const int n = pr.devices;
  DTSIM_CHECK(units >= 1 && pr.param_bytes.size() == pr.compute_s.size() &&
                  pr.boundary_bytes.size() == pr.compute_s.size() && n >= 1 && pr.sync_s &&
                  pr.send_s,
              "bad PipeDream problem");
  std::vector<double> compute(static_cast<std::size_t>(units) + 1, 0), params = compute;
  for (int i = 0; i < units; ++i) {
    compute[i + 1] = compute[i] + pr.compute_s[i];
    params[i + 1] = params[i] + pr.param_bytes[i];
  }
  const auto stage_s = [&](int i, int j, int m) {
    const double sync = m > 1 ? pr.sync_s(params[j] - params[i], m) : 0.0;
    return std::max(compute[j] - compute[i], sync) / m;
  };
  // The boundary before unit i: activations forward, gradients back.
  const auto boundary_s = [&](int i) { return 2 * pr.send_s(pr.boundary_bytes[i - 1]); };
  const double inf = std::numeric_limits<double>::infinity();
  // Strictly better, so that ties keep what was found first.
  const auto better = [](double a, double b) { return a < b * (1 - 1e-12); };
  PipeDreamPartition out;

  if (!pr.replicas.empty()) {
    const int stages = static_cast<int>(pr.replicas.size());
    DTSIM_CHECK(stages <= units, "more stages than units");
    std::vector<std::vector<double>> best(static_cast<std::size_t>(stages) + 1,
                                          std::vector<double>(static_cast<std::size_t>(units) + 1, inf));
    std::vector<std::vector<int>> cut(best.size(), std::vector<int>(static_cast<std::size_t>(units) + 1, 0));
    best[0][0] = 0;
    for (int k = 1; k <= stages; ++k)
      for (int j = k; j <= units - (stages - k); ++j)
        for (int i = k - 1; i < j; ++i) {
          if (best[k - 1][i] == inf) continue;
          double c = std::max(best[k - 1][i], stage_s(i, j, pr.replicas[k - 1]));
          if (i > 0) c = std::max(c, boundary_s(i));
          if (better(c, best[k][j])) {
            best[k][j] = c;
            cut[k][j] = i;
          }
        }
    out.replicas = pr.replicas;
    out.units.assign(static_cast<std::size_t>(stages), 0);
    out.slowest_s = best[stages][units];
    for (int k = stages, j = units; k >= 1; --k) {
      out.units[k - 1] = j - cut[k][j];
      j = cut[k][j];
    }
    return out;
  }

  // a[j][m]: the slowest stage of the best pipeline of units [0, j) on m
  // devices; from[j][m]: its last stage's first unit and replicas (first
  // unit 0: one stage).
  std::vector<std::vector<double>> a(static_cast<std::size_t>(units) + 1,
                                     std::vector<double>(static_cast<std::size_t>(n) + 1, inf));
  std::vector<std::vector<std::pair<int, int>>> from(
      a.size(), std::vector<std::pair<int, int>>(static_cast<std::size_t>(n) + 1, {0, 0}));
  for (int j = 1; j <= units; ++j)
    for (int m = 1; m <= n; ++m) {
      a[j][m] = stage_s(0, j, m);
      from[j][m] = {0, m};
      for (int i = 1; i < j; ++i) {
        const double edge = boundary_s(i);
        if (!better(edge, a[j][m])) continue;
        for (int mp = 1; mp < m; ++mp) {
          const double c = std::max({a[i][m - mp], edge, stage_s(i, j, mp)});
          if (better(c, a[j][m])) {
            a[j][m] = c;
            from[j][m] = {i, mp};
          }
        }
      }
    }
  out.slowest_s = a[units][n];
  for (int j = units, m = n; j > 0;) {
    const auto [i, mp] = from[j][m];
    out.units.insert(out.units.begin(), j - i);
    out.replicas.insert(out.replicas.begin(), mp);
    j = i;
    m -= mp;
  }
  return out;
}

}  // namespace dtsim::plan
