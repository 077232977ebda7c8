// The plan: the one description of a training job that both the simulator
// (sim/) and the real-execution backends (exec/) consume.
//
// A plan is a per-rank task graph. Every task runs on one stream of one rank
// (a compute stream and a communication stream per rank, like two CUDA
// streams); tasks of a stream run one at a time in the order they were added
// (program order). Dependencies across streams and ranks are explicit edges.
// A collective (all-reduce, ...) is one Collective record plus one task per
// member rank on that rank's comm stream; it starts when every member has
// reached it. A point-to-point transfer is one kSend task on the sender; it
// holds no stream (transfers run concurrently, limited by the links), and
// what the receiver does with the data depends on it. Server ranks' streams
// run their tasks in the order they become ready rather than in program
// order (a server serves whichever worker comes first).
//
// Symmetric plans: when workers do exactly the same as others, a builder may
// materialize only some ranks (representatives); collectives still span all
// ranks of their group (and are priced so), but only materialized members
// have tasks. The simulator uses this to price 1,024 identical
// workers at the cost of one.
//
// The vocabulary covers pipeline (send/recv, micro-batches), tensor-parallel
// (collectives inside forward/backward) and parameter-server plans; builders
// in this folder produce the plans (data_parallel.h for now).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plan/sync.h"

namespace dtsim::plan {

using TaskId = std::int32_t;
using RankId = std::int32_t;

enum class TaskKind : std::uint8_t {
  kForward,         // forward of one op for one micro-batch
  kBackwardInput,   // gradient w.r.t. the op's input
  kBackwardWeight,  // gradient w.r.t. the op's parameters
  kBackward,        // both gradients at once (fused tasks of several ops)
  kOptimizer,       // parameter update of the rank's parameters
  kCollective,      // this rank's part of a Collective
  kSend,            // point-to-point (pipeline activations, PS push/pull)
  kRecv,
};
const char* TaskKindName(TaskKind k);
// Forward, either backward, or both: a task of the compute stream that runs ops.
inline bool IsComputeKind(TaskKind k) {
  return k == TaskKind::kForward || k == TaskKind::kBackwardInput ||
         k == TaskKind::kBackwardWeight || k == TaskKind::kBackward;
}

enum class StreamKind : std::uint8_t { kCompute = 0, kComm = 1 };
constexpr int kNumStreams = 2;
const char* StreamKindName(StreamKind s);

// Broadcast and reduce have their root at the group's first rank; a
// barrier moves no data (its bytes are 0).
enum class CollectiveOp : std::uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kAllToAll,
  kBarrier,
};
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
  std::int32_t op_count = 1;     // compute tasks may cover ops [op, op + op_count)
  std::int32_t batch = 0;        // samples this compute task processes
  std::int32_t collective = -1;  // index into Plan::collectives for kCollective
  std::int64_t params = 0;       // parameters updated (kOptimizer)
  RankId peer = -1;              // kSend: the receiving rank
  double bytes = 0;              // kSend payload
  // >= 0: the task takes exactly this many seconds instead of its op's
  // priced time: a compute task (kForward, op -1) of an imported trace, its
  // kernel's measured duration (plan/chakra_import.h).
  double seconds = -1;
  // Start once this many of the task's dependencies have finished (k of n,
  // e.g. a server aggregating the first k workers' gradients); 0 = all.
  std::int32_t min_deps = 0;
  // Contributions a server-side kOptimizer task aggregates (>= 1).
  std::int32_t contributions = 1;
  // kOptimizer: memory traffic per parameter on top of the update itself
  // (local SGD's outer optimizer, (de)quantizing compressed averages).
  // Priced by the simulator; real execution does the work it stands for.
  float extra_bytes_per_param = 0;
  // Symmetric plans: identical transfers this kSend stands for, itself
  // included (for traffic totals).
  std::int32_t copies = 1;
};

struct Collective {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  double bytes = 0;               // payload per rank (the buffer being reduced)
  std::int32_t group = 0;         // index into Plan::groups
  std::int32_t iteration = 0;
  std::int32_t bucket = 0;        // gradient bucket number within the iteration
  // >= 0: an all-reduce of the gradient of this model op's parameters, of
  // which each member holds a copy: the embedding table that a tied LM head
  // in another pipeline stage shares (Megatron-LM's embedding group of the
  // first and last stage, _allreduce_embedding_grads). -1: the bucket's or
  // the stage's gradients.
  std::int32_t shared_op = -1;
  // True for a tensor-parallel all-reduce of activations (forward) or of
  // input gradients (backward) inside a tensor group: not a parameter
  // gradient, so reports do not count it as a gradient bucket.
  bool activations = false;
  // Overlap with compute (plan/hybrid.h: tp_comm_overlap, dp_overlap): the
  // collective runs in `overlap_chunks` pieces beside the compute tasks
  // `overlap_with` (of its first member's rank), which stand for the window
  // it may hide under. 0 = not overlapped: it takes its whole time.
  std::int32_t overlap_chunks = 0;
  std::vector<TaskId> overlap_with;
  // The share of the collective that may overlap (dp_overlap with the
  // distributed optimizer: the reduce-scatter under the backward, the
  // all-gather under the next forward, each half of an all-reduce's time).
  std::vector<TaskId> overlap_with_second;
  std::vector<TaskId> tasks;      // one per member, in group order
  // Symmetric plans: identical collectives over other groups this one
  // stands for, itself included (for traffic totals).
  std::int32_t copies = 1;
  // Summed on the hosts instead of the devices: each member copies its
  // buffer to host memory, each node's host sums its members' copies, the
  // hosts all-reduce among themselves, and the result is copied back.
  bool via_host = false;
};

enum class RankRole : std::uint8_t {
  kWorker,  // trains on its own data
  kServer,  // parameter-server task: holds a shard of the variables
};
const char* RankRoleName(RankRole r);

// Where a rank lives in the cluster.
struct RankPlacement {
  std::int32_t node = 0;
  std::int32_t local = 0;  // device index within the node (servers: after the devices)
  RankRole role = RankRole::kWorker;
};

// Elements [offset, offset + count) of the model's flat parameter buffer
// (exec/runtime/model_runtime.h's layout).
struct ParamSpan {
  std::int64_t offset = 0;
  std::int64_t count = 0;
  bool operator==(const ParamSpan&) const = default;
};

class Plan {
 public:
  // Adds a task after every task already on its (rank, stream) and returns its
  // id. `deps` must be earlier task ids. REQUIRES: task.rank < num_ranks().
  TaskId AddTask(const Task& task, std::span<const TaskId> deps = {});
  // Adds a collective over `group` and its member tasks (one per materialized
  // member, on the comm stream); member r depends on deps_per_member[r]
  // (one list per materialized member). Returns the collective's index.
  std::int32_t AddCollective(Collective c, const std::vector<std::vector<TaskId>>& deps_per_member,
                             std::int32_t iteration);
  std::int32_t AddGroup(std::vector<RankId> ranks);
  // Adds a collective whose member tasks are already in the plan: c.tasks
  // holds one kCollective task per materialized member of c.group, in group
  // order, each naming this collective's index (plan/merge.cc copies plans
  // this way). Returns the collective's index.
  std::int32_t AddCollectiveRecord(Collective c);
  // Declares collective `c` overlapped with compute (Collective's
  // overlap_chunks, overlap_with, overlap_with_second): tasks emitted after
  // the collective (the GEMM an all-gather feeds) are named here.
  // REQUIRES: chunks >= 1 and every id an existing task.
  void SetOverlap(std::int32_t c, std::int32_t chunks, std::vector<TaskId> with,
                  std::vector<TaskId> second = {});
  // Room for `tasks` tasks and `deps` dependencies in all (a hint; nothing
  // changes but the capacity).
  void Reserve(std::size_t tasks, std::size_t deps);

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
  // Which ranks have tasks (all by default). Set before adding tasks.
  void MaterializeOnly(std::vector<bool> mask) { materialized_ = std::move(mask); }
  void MaterializePrefix(std::int32_t count);  // ranks [0, count)
  bool IsMaterialized(RankId r) const {
    return materialized_.empty() || materialized_[static_cast<std::size_t>(r)];
  }
  std::int32_t num_materialized() const;
  bool IsServer(RankId r) const {
    return ranks[static_cast<std::size_t>(r)].role == RankRole::kServer;
  }

  // Facts about the job, set by the builder.
  std::string model_name;
  Strategy strategy = Strategy::kData;  // the builder that made it (StrategyName for output)
  // How the replicas stay in step (averaging period, what is averaged,
  // outer optimizer, hierarchical groups, servers); set by the builder.
  Sync sync;
  // Data-parallel plans (data, local SGD): the gradient buckets that
  // Collective::bucket indexes, in the order backward fills them. Empty for
  // other plans, whose gradient collectives each cover the rank's whole
  // parameter buffer or one shared op.
  std::vector<GradientBucket> buckets;
  std::int32_t iterations = 1;
  std::int64_t samples_per_iteration = 0;  // global batch
  std::int32_t batch_per_rank = 0;
  // Ops each rank holds (model op indices), for placement listings.
  std::vector<std::vector<std::int32_t>> ops_on_rank;
  // Parameter-server plans: per server (the s-th server rank), the spans of
  // the flat parameter buffer it holds, in buffer order; its pulls and
  // pushes carry exactly these elements, concatenated (plan/ps_placement.h).
  // Empty for other plans.
  std::vector<std::vector<ParamSpan>> server_params;

 private:
  std::vector<Task> tasks_;
  // Dependencies in CSR form: deps of task i are dep_ids_[dep_begin_[i] .. dep_begin_[i+1]).
  std::vector<std::int64_t> dep_begin_{0};
  std::vector<TaskId> dep_ids_;
  std::vector<Collective> collectives_;
  std::vector<std::vector<RankId>> groups_;
  std::vector<bool> materialized_;  // empty = all
};

}  // namespace dtsim::plan
