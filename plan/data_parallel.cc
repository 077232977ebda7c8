#include "plan/data_parallel.h"

#include <algorithm>
#include <map>

#include "common/error.h"
#include "plan/compute_tasks.h"

namespace dtsim::plan {

using models::ModelGraph;
using models::OpId;

namespace {

// FSDP's parameter gathers of one iteration (DataParallelOptions::fsdp):
// an all-gather over `group` per bucket in forward order (the first after
// each rank's previous update), then one per bucket in backward order; the
// collectives' indices by bucket.
void EmitFsdpGathers(Plan* plan, const std::vector<GradientBucket>& buckets, std::int32_t group,
                     CollectiveAlgorithm algorithm, const std::vector<TaskId>& previous_update,
                     int iteration, std::vector<std::int32_t>* forward,
                     std::vector<std::int32_t>* backward) {
  forward->assign(buckets.size(), -1);
  backward->assign(buckets.size(), -1);
  const auto gather = [&](std::size_t b, bool first) {
    Collective c;
    c.op = CollectiveOp::kAllGather;
    c.algorithm = algorithm;
    c.bytes = buckets[b].bytes;
    c.group = group;
    c.bucket = static_cast<std::int32_t>(b);
    std::vector<std::vector<TaskId>> deps(previous_update.size());
    for (std::size_t r = 0; r < previous_update.size() && first; ++r)
      if (previous_update[r] >= 0) deps[r] = {previous_update[r]};
    return plan->AddCollective(std::move(c), deps, iteration);
  };
  for (std::size_t b = buckets.size(); b-- > 0;)  // buckets are in backward order
    (*forward)[b] = gather(b, b + 1 == buckets.size());
  for (std::size_t b = 0; b < buckets.size(); ++b) (*backward)[b] = gather(b, false);
}

}  // namespace

Plan BuildDataParallelPlan(const ModelGraph& graph, const ClusterShape& cluster,
                           const DataParallelOptions& options) {
  DTSIM_CHECK(graph.num_ops() > 0, "empty model graph");
  DTSIM_CHECK(cluster.nodes >= 1 && cluster.devices_per_node >= 1, "bad cluster shape");
  DTSIM_CHECK(options.batch_per_rank >= 1 && options.iterations >= 1 &&
                  options.averaging_period >= 1 && options.materialized_ranks >= 0,
              "bad options");

  Plan plan;
  const int num_ranks = cluster.nodes * cluster.devices_per_node;
  for (int r = 0; r < num_ranks; ++r)
    plan.ranks.push_back({r / cluster.devices_per_node, r % cluster.devices_per_node});
  if (options.materialized_ranks > 0)
    plan.MaterializePrefix(std::min(options.materialized_ranks, num_ranks));
  const int built = plan.num_materialized();  // a prefix of the ranks
  plan.model_name = graph.name();
  plan.strategy = options.averaging_period == 1 ? Strategy::kData : Strategy::kLocalSgd;
  plan.sync.averaging_period = options.averaging_period;
  plan.sync.averaged = options.averaging_period > 1 || options.average_parameters
                           ? Averaged::kParameters
                           : Averaged::kGradients;
  plan.sync.post_local_steps = options.post_local_steps;
  plan.sync.outer = options.outer;
  plan.sync.levels = options.averaging_levels;
  plan.sync.streaming_fragments = options.streaming_fragments;
  plan.sync.streaming_overlap = options.streaming_overlap;
  plan.iterations = options.iterations;
  plan.batch_per_rank = options.batch_per_rank;
  plan.samples_per_iteration = static_cast<std::int64_t>(num_ranks) * options.batch_per_rank;
  const bool uneven = !options.batch_of_rank.empty();
  if (uneven) {
    DTSIM_CHECK(static_cast<int>(options.batch_of_rank.size()) == num_ranks && built == num_ranks,
                "one batch per rank, every rank materialized");
    plan.samples_per_iteration = 0;
    for (int b : options.batch_of_rank) {
      DTSIM_CHECK(b >= 1, "a rank's batch must be >= 1");
      plan.samples_per_iteration += b;
    }
  }

  std::vector<std::int32_t> all_ops;
  std::int64_t total_params = 0;
  for (OpId v = 0; v < graph.num_ops(); ++v) {
    all_ops.push_back(static_cast<std::int32_t>(v));
    total_params += graph.op(v).params;
  }
  plan.ops_on_rank.assign(static_cast<std::size_t>(num_ranks), all_ops);
  const int levels = static_cast<int>(options.averaging_levels.size());
  // Which level averages at iteration `it`: `levels` for the global one, a
  // level index, or -1 for none.
  const auto level_at = [&](int it) {
    const int k = it + 1;
    if (k % options.averaging_period == 0) return levels;
    for (int l = levels; l-- > 0;)
      if (k % options.averaging_levels[static_cast<std::size_t>(l)].period == 0) return l;
    return -1;
  };

  plan.buckets = GradientBuckets(graph, options.bucket_bytes);
  const std::vector<GradientBucket>& buckets = plan.buckets;
  std::vector<std::int32_t> bucket_of_op(graph.num_ops(), -1);
  for (std::size_t b = 0; b < buckets.size(); ++b)
    for (std::int32_t v = buckets[b].first_op; v < buckets[b].end_op; ++v)
      if (graph.op(static_cast<OpId>(v)).HasParams())
        bucket_of_op[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(b);

  std::vector<RankId> everyone(static_cast<std::size_t>(num_ranks));
  for (int r = 0; r < num_ranks; ++r) everyone[static_cast<std::size_t>(r)] = r;
  const std::int32_t world = plan.AddGroup(everyone);
  // Per level: its groups (consecutive ranks) and how many collectives the
  // emitted ones stand for (groups without a materialized member are not
  // emitted; the first group counts them).
  struct LevelGroup {
    std::int32_t group;
    std::vector<int> members;  // materialized ranks, in order
    std::int32_t copies;
  };
  std::vector<std::vector<LevelGroup>> level_groups(static_cast<std::size_t>(levels));
  for (int l = 0; l < levels; ++l) {
    const int size = options.averaging_levels[static_cast<std::size_t>(l)].group_size;
    DTSIM_CHECK(size >= 1 && num_ranks % size == 0, "averaging groups must tile the ranks");
    int hidden = 0;
    for (int first = 0; first < num_ranks; first += size) {
      std::vector<RankId> ranks;
      std::vector<int> members;
      for (int r = first; r < first + size; ++r) {
        ranks.push_back(r);
        if (r < built) members.push_back(r);
      }
      if (members.empty()) {
        ++hidden;
        continue;
      }
      level_groups[static_cast<std::size_t>(l)].push_back({plan.AddGroup(ranks), members, 1});
    }
    level_groups[static_cast<std::size_t>(l)].front().copies += hidden;
  }

  const bool streaming = options.streaming_fragments > 1;
  DTSIM_CHECK(!streaming || (options.averaging_period % options.streaming_fragments == 0 &&
                             levels == 0 && options.streaming_overlap >= 0),
              "streaming fragments must divide the averaging period, without levels");
  // Streaming: per iteration, the all-reduce tasks its update merges (per rank).
  std::map<std::size_t, std::vector<std::vector<TaskId>>> merges;
  const bool fsdp = options.fsdp && num_ranks > 1;
  DTSIM_CHECK(!fsdp || (options.averaging_period == 1 && levels == 0 && !streaming),
              "FSDP is synchronous data parallelism");
  std::vector<TaskId> previous_update(static_cast<std::size_t>(built), -1);
  for (int it = 0; it < options.iterations; ++it) {
    // FSDP: each bucket's parameter gathers, forward then backward, issued
    // ahead on the comm stream (BuildDataParallelPlan's contract).
    std::vector<std::int32_t> gather_fwd, gather_bwd;
    if (fsdp) EmitFsdpGathers(&plan, buckets, world, options.algorithm, previous_update, it,
                              &gather_fwd, &gather_bwd);
    // Per rank: the weight-gradient tasks of each bucket, and the last
    // backward task (for overlap = false).
    std::vector<std::vector<std::vector<TaskId>>> bucket_deps(
        buckets.size(), std::vector<std::vector<TaskId>>(static_cast<std::size_t>(built)));
    for (int r = 0; r < built; ++r) {
      const StepTasks step = AddStepTasks(
          &plan, graph, r, it,
          uneven ? options.batch_of_rank[static_cast<std::size_t>(r)] : options.batch_per_rank, {},
          [&](OpId v, TaskId w) {
            bucket_deps[static_cast<std::size_t>(bucket_of_op[v])][static_cast<std::size_t>(r)]
                .push_back(w);
          },
          options.recompute,
          fsdp ? std::function<TaskId(OpId, bool)>([&, r](OpId v, bool forward) {
            const std::int32_t b = bucket_of_op[v];
            if (b < 0) return TaskId{-1};
            const std::int32_t ci = (forward ? gather_fwd : gather_bwd)[static_cast<std::size_t>(b)];
            return plan.collectives()[static_cast<std::size_t>(ci)].tasks[static_cast<std::size_t>(r)];
          })
               : std::function<TaskId(OpId, bool)>{});
      const TaskId last = step.last;
      if (!options.overlap) {
        for (auto& per_rank : bucket_deps) per_rank[static_cast<std::size_t>(r)] = {last};
      }
    }

    // Gradient all-reduces, one per bucket, in bucket order on the comm
    // streams; then each rank's optimizer step waits for all of them.
    std::vector<std::vector<TaskId>> opt_deps(static_cast<std::size_t>(built));
    // Bucket b's all-reduce over `group`, after `deps` (one list per
    // materialized member), counted in iteration `at`; returns its tasks.
    const auto bucket_all_reduce = [&](std::size_t b, std::int32_t group,
                                       const std::vector<std::vector<TaskId>>& deps, int at,
                                       std::int32_t copies) -> const std::vector<TaskId>& {
      Collective c;
      c.op = fsdp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
      c.algorithm = options.algorithm;
      c.bytes = buckets[b].bytes * options.averaging_bytes_scale;
      c.group = group;
      c.bucket = static_cast<std::int32_t>(b);
      c.via_host = options.via_host;
      c.copies = copies;
      const std::int32_t ci = plan.AddCollective(std::move(c), deps, at);
      return plan.collectives()[static_cast<std::size_t>(ci)].tasks;
    };
    int level = num_ranks > 1 ? level_at(it) : -1;
    double synced_share = 1;  // of the parameters this step averages
    if (streaming) {
      // The fragments that average at this step, each bucket's all-reduce
      // merged by the update tau steps on.
      level = -1;
      double synced_bytes = 0, all_bytes = 0;
      for (const GradientBucket& bucket : buckets) all_bytes += bucket.bytes;
      const int h = options.averaging_period, f_count = options.streaming_fragments;
      for (std::size_t b = 0; b < buckets.size() && num_ranks > 1; ++b) {
        const int f = static_cast<int>(b * static_cast<std::size_t>(f_count) / buckets.size());
        if ((it + 1 - f * (h / f_count)) % h != 0) continue;
        // The all-reduce belongs to the step whose update merges it (so the
        // steps it overlaps are not counted as waiting for it); one merged
        // past the simulated steps is not emitted.
        const int merge_at = it + options.streaming_overlap;
        if (merge_at >= options.iterations) continue;
        level = levels;  // an averaging step: the update pays the conversions
        synced_bytes += buckets[b].bytes;
        const std::vector<TaskId> tasks = bucket_all_reduce(b, world, bucket_deps[b], merge_at, 1);
        auto& merge = merges[static_cast<std::size_t>(merge_at)];
        merge.resize(static_cast<std::size_t>(built));
        for (int r = 0; r < built; ++r)
          merge[static_cast<std::size_t>(r)].push_back(tasks[static_cast<std::size_t>(r)]);
      }
      if (all_bytes > 0) synced_share = synced_bytes / all_bytes;
      if (auto m = merges.find(static_cast<std::size_t>(it)); m != merges.end()) {
        opt_deps = std::move(m->second);
        merges.erase(m);
      }
    } else if (level == levels) {
      for (std::size_t b = 0; b < buckets.size(); ++b) {
        const std::vector<TaskId> tasks = bucket_all_reduce(b, world, bucket_deps[b], it, 1);
        for (int r = 0; r < built; ++r)
          opt_deps[static_cast<std::size_t>(r)].push_back(tasks[static_cast<std::size_t>(r)]);
      }
    } else if (level >= 0) {
      for (const LevelGroup& g : level_groups[static_cast<std::size_t>(level)])
        for (std::size_t b = 0; b < buckets.size(); ++b) {
          std::vector<std::vector<TaskId>> deps;
          for (int r : g.members) deps.push_back(bucket_deps[b][static_cast<std::size_t>(r)]);
          const std::vector<TaskId> tasks = bucket_all_reduce(b, g.group, deps, it, g.copies);
          for (std::size_t x = 0; x < g.members.size(); ++x)
            opt_deps[static_cast<std::size_t>(g.members[x])].push_back(tasks[x]);
        }
    }
    for (int r = 0; r < built; ++r) {
      Task t;
      t.kind = TaskKind::kOptimizer;
      t.stream = StreamKind::kCompute;
      t.rank = r;
      t.iteration = it;
      t.params = total_params;
      if (level >= 0)
        t.extra_bytes_per_param = static_cast<float>(
            synced_share * (options.averaging_update_bytes_per_param +
                            (level == levels ? options.global_update_bytes_per_param : 0.0)));
      previous_update[static_cast<std::size_t>(r)] = plan.AddTask(t, opt_deps[static_cast<std::size_t>(r)]);
    }
    // Every iteration adds about as many tasks as the first: room for all,
    // so that the task list grows once (its copies and first touches of new
    // pages were a third of a 1,024-GPU run's plan building).
    if (it == 0) plan.Reserve(plan.num_tasks() * static_cast<std::size_t>(options.iterations),
                              plan.num_deps() * static_cast<std::size_t>(options.iterations));
  }
  return plan;
}

}  // namespace dtsim::plan
