// The plan: the one description of a training job that both the simulator
// (sim/) and the real-execution backends (exec/) consume.
//
// A plan is a per-rank task graph. Every task runs on one stream of one rank
// (a compute stream and a communication stream per rank, like two CUDA
// streams); tasks of a stream run one at a time in the order they were added
// (program order). Dependencies across streams and ranks are explicit edges.
// A collective (all-reduce, ...) is one Collective record plus one task per
// member rank on that rank's comm stream; it starts when every member has
// reached it.
//
// The vocabulary covers pipeline (send/recv, micro-batches), tensor-parallel
// (collectives inside forward/backward) and parameter-server plans; builders
// in this folder produce the plans (data_parallel.h for now).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dtsim::plan {

using TaskId = std::int32_t;
using RankId = std::int32_t;

enum class TaskKind : std::uint8_t {
  kForward,         // forward of one op for one micro-batch
  kBackwardInput,   // gradient w.r.t. the op's input
  kBackwardWeight,  // gradient w.r.t. the op's parameters
  kOptimizer,       // parameter update of the rank's parameters
  kCollective,      // this rank's part of a Collective
  kSend,            // point-to-point (pipeline activations, PS push/pull)
  kRecv,
};
const char* TaskKindName(TaskKind k);

enum class StreamKind : std::uint8_t { kCompute = 0, kComm = 1 };
constexpr int kNumStreams = 2;
const char* StreamKindName(StreamKind s);

enum class CollectiveOp : std::uint8_t { kAllReduce, kReduceScatter, kAllGather, kBroadcast };
const char* CollectiveOpName(CollectiveOp op);

// Matches config::CollectiveAlgorithm; the plan does not depend on config.
enum class CollectiveAlgorithm : std::uint8_t { kRing, kTree, kHierarchical };
const char* CollectiveAlgorithmName(CollectiveAlgorithm a);

struct Task {
  TaskKind kind = TaskKind::kForward;
  StreamKind stream = StreamKind::kCompute;
  RankId rank = 0;
  std::int32_t iteration = 0;
  std::int32_t micro_batch = 0;
  std::int32_t op = -1;          // model op index for compute tasks, else -1
  std::int32_t batch = 0;        // samples this compute task processes
  std::int32_t collective = -1;  // index into Plan::collectives for kCollective
  std::int64_t params = 0;       // parameters updated (kOptimizer)
  RankId peer = -1;              // kSend/kRecv: the other rank
  double bytes = 0;              // kSend/kRecv payload
};

struct Collective {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  double bytes = 0;               // payload per rank (the buffer being reduced)
  std::int32_t group = 0;         // index into Plan::groups
  std::int32_t iteration = 0;
  std::int32_t bucket = 0;        // gradient bucket number within the iteration
  std::vector<TaskId> tasks;      // one per member, in group order
};

// Where a rank lives in the cluster.
struct RankPlacement {
  std::int32_t node = 0;
  std::int32_t local = 0;  // device index within the node
};

class Plan {
 public:
  // Adds a task after every task already on its (rank, stream) and returns its
  // id. `deps` must be earlier task ids. REQUIRES: task.rank < num_ranks().
  TaskId AddTask(const Task& task, std::span<const TaskId> deps = {});
  // Adds a collective over `group` and its member tasks (one per rank, on the
  // comm stream); member r depends on deps_per_member[r]. Returns the
  // collective's index.
  std::int32_t AddCollective(Collective c, const std::vector<std::vector<TaskId>>& deps_per_member,
                             std::int32_t iteration);
  std::int32_t AddGroup(std::vector<RankId> ranks);

  std::size_t num_tasks() const { return tasks_.size(); }
  const Task& task(TaskId id) const { return tasks_[static_cast<std::size_t>(id)]; }
  const std::vector<Task>& tasks() const { return tasks_; }
  std::span<const TaskId> deps(TaskId id) const;
  std::size_t num_deps() const { return dep_ids_.size(); }
  const std::vector<Collective>& collectives() const { return collectives_; }
  const std::vector<std::vector<RankId>>& groups() const { return groups_; }

  // Placement of ranks; set by the builder.
  std::vector<RankPlacement> ranks;
  std::int32_t num_ranks() const { return static_cast<std::int32_t>(ranks.size()); }

  // Facts about the job, set by the builder.
  std::string model_name;
  std::string strategy;              // "data", ...
  std::int32_t iterations = 1;
  std::int64_t samples_per_iteration = 0;  // global batch
  std::int32_t batch_per_rank = 0;
  // Ops each rank holds (model op indices), for placement listings.
  std::vector<std::vector<std::int32_t>> ops_on_rank;

 private:
  std::vector<Task> tasks_;
  // Dependencies in CSR form: deps of task i are dep_ids_[dep_begin_[i] .. dep_begin_[i+1]).
  std::vector<std::int64_t> dep_begin_{0};
  std::vector<TaskId> dep_ids_;
  std::vector<Collective> collectives_;
  std::vector<std::vector<RankId>> groups_;
};

}  // namespace dtsim::plan
