#include "plan/plan.h"

#include "common/error.h"

namespace dtsim::plan {

const char* TaskKindName(TaskKind k) {
  switch (k) {
    case TaskKind::kForward: return "forward";
    case TaskKind::kBackwardInput: return "backward_input";
    case TaskKind::kBackwardWeight: return "backward_weight";
    case TaskKind::kBackward: return "backward";
    case TaskKind::kOptimizer: return "optimizer";
    case TaskKind::kCollective: return "collective";
    case TaskKind::kSend: return "send";
    case TaskKind::kRecv: return "recv";
  }
  return "?";
}

const char* StreamKindName(StreamKind s) {
  return s == StreamKind::kCompute ? "compute" : "comm";
}

const char* CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kReduce: return "reduce";
    case CollectiveOp::kAllToAll: return "all_to_all";
    case CollectiveOp::kBarrier: return "barrier";
  }
  return "?";
}

const char* CollectiveAlgorithmName(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::kRing: return "ring";
    case CollectiveAlgorithm::kTree: return "tree";
    case CollectiveAlgorithm::kHierarchical: return "hierarchical";
  }
  return "?";
}

const char* RankRoleName(RankRole r) { return r == RankRole::kWorker ? "worker" : "server"; }

TaskId Plan::AddTask(const Task& task, std::span<const TaskId> deps) {
  DTSIM_CHECK(task.rank >= 0 && task.rank < num_ranks() && IsMaterialized(task.rank),
              "task rank out of range or not materialized");
  DTSIM_CHECK(task.min_deps >= 0 && task.min_deps <= static_cast<std::int32_t>(deps.size()),
              "min_deps exceeds the number of dependencies");
  const TaskId id = static_cast<TaskId>(tasks_.size());
  for (TaskId d : deps) DTSIM_CHECK(d >= 0 && d < id, "dependency must be an earlier task");
  tasks_.push_back(task);
  dep_ids_.insert(dep_ids_.end(), deps.begin(), deps.end());
  dep_begin_.push_back(static_cast<std::int64_t>(dep_ids_.size()));
  return id;
}

void Plan::Reserve(std::size_t tasks, std::size_t deps) {
  tasks_.reserve(tasks);
  dep_begin_.reserve(tasks + 1);
  dep_ids_.reserve(deps);
}

std::span<const TaskId> Plan::deps(TaskId id) const {
  const auto i = static_cast<std::size_t>(id);
  return {dep_ids_.data() + dep_begin_[i], dep_ids_.data() + dep_begin_[i + 1]};
}

void Plan::MaterializePrefix(std::int32_t count) {
  std::vector<bool> mask(ranks.size(), false);
  for (std::int32_t r = 0; r < count && r < num_ranks(); ++r) mask[static_cast<std::size_t>(r)] = true;
  materialized_ = std::move(mask);
}

std::int32_t Plan::num_materialized() const {
  if (materialized_.empty()) return num_ranks();
  std::int32_t n = 0;
  for (bool m : materialized_) n += m;
  return n;
}

std::int32_t Plan::AddGroup(std::vector<RankId> members) {
  for (RankId r : members) DTSIM_CHECK(r >= 0 && r < num_ranks(), "group rank out of range");
  groups_.push_back(std::move(members));
  return static_cast<std::int32_t>(groups_.size() - 1);
}

std::int32_t Plan::AddCollective(Collective c, const std::vector<std::vector<TaskId>>& deps_per_member,
                                 std::int32_t iteration) {
  DTSIM_CHECK(c.group >= 0 && c.group < static_cast<std::int32_t>(groups_.size()),
              "collective group out of range");
  const auto& all_members = groups_[static_cast<std::size_t>(c.group)];
  std::vector<RankId> members;
  for (RankId r : all_members)
    if (IsMaterialized(r)) members.push_back(r);
  DTSIM_CHECK(deps_per_member.size() == members.size(),
              "one dependency list per materialized member");
  const auto index = static_cast<std::int32_t>(collectives_.size());
  c.iteration = iteration;
  c.tasks.clear();
  for (std::size_t m = 0; m < members.size(); ++m) {
    Task t;
    t.kind = TaskKind::kCollective;
    t.stream = StreamKind::kComm;
    t.rank = members[m];
    t.iteration = iteration;
    t.collective = index;
    c.tasks.push_back(AddTask(t, deps_per_member[m]));
  }
  collectives_.push_back(std::move(c));
  return index;
}

void Plan::SetOverlap(std::int32_t c, std::int32_t chunks, std::vector<TaskId> with,
                      std::vector<TaskId> second) {
  DTSIM_CHECK(c >= 0 && c < static_cast<std::int32_t>(collectives_.size()) && chunks >= 1,
              "overlap of an unknown collective");
  for (const std::vector<TaskId>* list : {&with, &second})
    for (TaskId id : *list)
      DTSIM_CHECK(id >= 0 && static_cast<std::size_t>(id) < tasks_.size(), "overlap with an unknown task");
  Collective& x = collectives_[static_cast<std::size_t>(c)];
  x.overlap_chunks = chunks;
  x.overlap_with = std::move(with);
  x.overlap_with_second = std::move(second);
}

std::int32_t Plan::AddCollectiveRecord(Collective c) {
  DTSIM_CHECK(c.group >= 0 && c.group < static_cast<std::int32_t>(groups_.size()),
              "collective group out of range");
  const auto index = static_cast<std::int32_t>(collectives_.size());
  std::size_t m = 0;
  for (RankId r : groups_[static_cast<std::size_t>(c.group)]) {
    if (!IsMaterialized(r)) continue;
    DTSIM_CHECK(m < c.tasks.size(), "a collective record lacks a member task");
    const TaskId id = c.tasks[m++];
    DTSIM_CHECK(id >= 0 && static_cast<std::size_t>(id) < tasks_.size(), "member task out of range");
    const Task& t = tasks_[static_cast<std::size_t>(id)];
    DTSIM_CHECK(t.kind == TaskKind::kCollective && t.rank == r && t.collective == index,
                "a collective record's member task does not match its group");
  }
  DTSIM_CHECK(m == c.tasks.size(), "a collective record has more member tasks than its group");
  collectives_.push_back(std::move(c));
  return index;
}

}  // namespace dtsim::plan
