#include "plan/merge.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace dtsim::plan {

MergedPlan MergePlans(const std::vector<PlanPart>& parts, std::vector<RankPlacement> placement) {
  DTSIM_CHECK(!parts.empty(), "nothing to merge");
  MergedPlan out;
  Plan& m = out.plan;
  m.ranks = std::move(placement);
  std::vector<bool> taken(m.ranks.size(), false);
  std::size_t tasks = 0, deps = 0;
  for (const PlanPart& part : parts) {
    const Plan& p = *part.plan;
    DTSIM_CHECK(part.ranks.size() == static_cast<std::size_t>(p.num_ranks()),
                "one merged rank per rank of the part");
    DTSIM_CHECK(part.start_s >= 0, "a part cannot start before 0");
    for (RankId r = 0; r < p.num_ranks(); ++r) {
      DTSIM_CHECK(p.IsMaterialized(r) && !p.IsServer(r),
                  "merged parts materialize every rank and have no servers");
      const RankId to = part.ranks[static_cast<std::size_t>(r)];
      DTSIM_CHECK(to >= 0 && to < m.num_ranks(), "merged rank out of range");
      DTSIM_CHECK(!taken[static_cast<std::size_t>(to)], "two parts share merged rank " + std::to_string(to));
      taken[static_cast<std::size_t>(to)] = true;
    }
    tasks += p.num_tasks() + static_cast<std::size_t>(p.num_ranks());
    deps += p.num_deps() + p.num_tasks();
  }
  m.Reserve(tasks, deps);
  const Plan& first = *parts.front().plan;
  m.model_name = first.model_name;
  m.strategy = first.strategy;
  m.sync = first.sync;
  m.buckets = first.buckets;
  m.batch_per_rank = first.batch_per_rank;
  m.samples_per_iteration = first.samples_per_iteration;
  m.server_params = first.server_params;
  m.iterations = 0;

  std::vector<TaskId> remapped_deps;
  for (const PlanPart& part : parts) {
    const Plan& p = *part.plan;
    m.iterations = std::max(m.iterations, p.iterations);
    auto rank_of = [&part](RankId r) { return part.ranks[static_cast<std::size_t>(r)]; };
    if (!p.ops_on_rank.empty()) {
      m.ops_on_rank.resize(m.ranks.size());
      for (RankId r = 0; r < p.num_ranks(); ++r)
        m.ops_on_rank[static_cast<std::size_t>(rank_of(r))] = p.ops_on_rank[static_cast<std::size_t>(r)];
    }
    // One delay task per rank: a compute task of exactly start_s seconds.
    std::vector<TaskId> delay(static_cast<std::size_t>(p.num_ranks()), -1);
    if (part.start_s > 0) {
      for (RankId r = 0; r < p.num_ranks(); ++r) {
        Task t;
        t.kind = TaskKind::kForward;
        t.stream = StreamKind::kCompute;
        t.rank = rank_of(r);
        t.seconds = part.start_s;
        delay[static_cast<std::size_t>(r)] = m.AddTask(t);
      }
    }
    const auto group_offset = static_cast<std::int32_t>(m.groups().size());
    const auto collective_offset = static_cast<std::int32_t>(m.collectives().size());
    for (const std::vector<RankId>& g : p.groups()) {
      std::vector<RankId> members;
      members.reserve(g.size());
      for (RankId r : g) members.push_back(rank_of(r));
      m.AddGroup(std::move(members));
    }
    const auto offset = static_cast<TaskId>(m.num_tasks());
    out.first_task.push_back(offset);
    out.first_collective.push_back(collective_offset);
    for (TaskId id = 0; id < static_cast<TaskId>(p.num_tasks()); ++id) {
      Task t = p.task(id);
      const RankId own = t.rank;
      t.rank = rank_of(t.rank);
      if (t.peer >= 0) t.peer = rank_of(t.peer);
      if (t.collective >= 0) t.collective += collective_offset;
      remapped_deps.clear();
      for (TaskId d : p.deps(id)) remapped_deps.push_back(d + offset);
      if (remapped_deps.empty() && part.start_s > 0)
        remapped_deps.push_back(delay[static_cast<std::size_t>(own)]);
      m.AddTask(t, remapped_deps);
    }
    for (Collective c : p.collectives()) {
      c.group += group_offset;
      for (TaskId& t : c.tasks) t += offset;
      m.AddCollectiveRecord(std::move(c));
    }
  }
  return out;
}

}  // namespace dtsim::plan
