#include "exec/runtime/plan_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <numeric>
#include <set>
#include <thread>
#include <unordered_map>

#include "common/error.h"
#include "exec/data/batch_prefetcher.h"
#include "exec/runtime/comm_thread.h"
#include "exec/runtime/model_runtime.h"
#include "exec/runtime/runtime_util.h"
#include "exec/runtime/ps_runner.h"
#include "exec/runtime/result_gather.h"
#include "exec/train/checkpoint.h"

namespace dtsim::exec {
namespace {

using runtime_util::Clock;
using runtime_util::Seconds;
using plan::Task;
using plan::TaskId;
using plan::TaskKind;

bool IsCompute(TaskKind k) {
  return k == TaskKind::kForward || k == TaskKind::kBackwardInput ||
         k == TaskKind::kBackwardWeight || k == TaskKind::kBackward;
}

// Tag of a pipeline transfer: direction 0 = activation, 1 = gradient.
int TransferTag(int iteration, int micro_batch, int direction) {
  return 1 + ((iteration % 64) * 512 + (micro_batch % 256) * 2 + direction) % 30000;
}

// User errors of running `plan` on `comm` with `options` (before any rank
// starts talking).
void CheckRunnable(const plan::Plan& plan, const Communicator& comm, const ExecOptions& options) {
  if (comm.size() != plan.num_ranks())
    throw UserError("the plan has " + std::to_string(plan.num_ranks()) + " ranks but " +
                        std::to_string(comm.size()) + " processes run it",
                    "start as many ranks as the scenario has devices (dtsim exec --ranks N)");
  if (plan.num_materialized() != plan.num_ranks())
    throw InternalError("real execution needs every rank materialized");
  bool servers = false;
  for (int r = 0; r < plan.num_ranks(); ++r) servers = servers || plan.IsServer(r);
  if (options.eval_every < 0)
    throw UserError("eval_every must be >= 0", "give the iterations between evaluations");
  if (options.eval_every > 0) {
    if (options.eval_data == nullptr || options.eval_samples < 1)
      throw UserError("held-out evaluation needs evaluation data and eval_samples >= 1",
                      "give a data set with a test split");
    if (servers && plan.IsServer(0))
      throw UserError("held-out evaluation of a parameter-server plan needs rank 0 to be a worker",
                      "place the servers after the workers");
  }
  if (!servers) return;
  if (options.checkpoint_every > 0 || options.resume)
    throw UserError("checkpoints of parameter-server runs are not supported yet",
                    "run parameter-server scenarios without checkpoint_every / resume");
  if (plan.sync.averaging_period > 1 && plan.sync.averaged != plan::Averaged::kParameters)
    throw InternalError("local SGD over parameter servers pushes parameters");
}

AllReduceAlgorithm AlgorithmFor(plan::CollectiveAlgorithm a, bool mpi) {
  if (mpi) return AllReduceAlgorithm::kMpi;
  // Hierarchical all-reduce needs nodes; on one machine a ring is what it is.
  return a == plan::CollectiveAlgorithm::kTree ? AllReduceAlgorithm::kTree
                                               : AllReduceAlgorithm::kRing;
}

// One rank's view of the plan and its state while running it.
class RankRunner {
 public:
  RankRunner(const plan::Plan& plan, const models::ModelGraph& graph, const Dataset& data,
             Communicator& comm, Backend& backend, const ExecOptions& options)
      : plan_(plan), graph_(graph), data_(data), comm_(comm), backend_(backend),
        options_(options), me_(comm.rank()),
        host_memory_(backend.HostMemory()), buckets_(plan.buckets),
        average_parameters_(plan.sync.averaged == plan::Averaged::kParameters) {
    Layout();
    RuntimeOptions ro;
    ro.micro_batch = micro_batch_;
    ro.slots = micro_batches_;
    ro.begin = begin_;
    ro.end = end_;
    ro.seed = options.seed;
    ro.samples_per_step = static_cast<std::int64_t>(micro_batch_) * micro_batches_;
    runtime_ = std::make_unique<ModelRuntime>(graph, backend, ro);
    optimizer_ = std::make_unique<Optimizer>(backend, runtime_->num_params(), options.optimizer);
    input_ = std::make_unique<BatchPrefetcher>(data, micro_batch_, options.input_threads);
    for (int r = 0; r < plan.num_ranks(); ++r) ps_ = ps_ || plan.IsServer(r);
    if (ps_) echoed_version_.assign(static_cast<std::size_t>(plan.num_ranks()), 0.0f);
    fwd_cursor_.assign(static_cast<std::size_t>(micro_batches_), end_);
    bwd_cursor_.assign(static_cast<std::size_t>(micro_batches_), begin_);
    // A slowdown sleeps after each task for a multiple of its duration, so
    // it needs the duration at once.
    defer_ = options.slowdown.empty() &&
             (options.task_timing == TaskTiming::kMarks ||
              (options.task_timing == TaskTiming::kAuto && backend.Asynchronous()));
    // Collectives on their own thread (comm_thread.h) where the rank's
    // buffers are host memory and the plan has no point-to-point traffic:
    // the executor then never calls the communicator while they run.
    bool sends = false;
    for (const Task& t : plan.tasks()) sends = sends || t.kind == TaskKind::kSend;
    if (options.comm_thread && host_memory_ && !sends && !ps_ && comm.size() > 1)
      comm_thread_ = std::make_unique<CommThread>();
  }

  // Some collective ran on the comm thread (local SGD's parameter averages
  // follow the update and run on the rank's thread).
  bool overlapped_comm() const { return comm_thread_ && comm_thread_->submitted() > 0; }

  ExecResult Run();

 private:
  void Layout();
  void RunTask(TaskId id, int iteration, IterationTimes& times);
  void RunTaskBody(TaskId id, int iteration, IterationTimes& times);
  // Loads the task's slot before its first forward task; the seconds waited.
  double LoadOnFirstForward(const Task& t, int iteration);
  // Queues the ops of a forward or backward task on the backend.
  void RunCompute(const Task& t);
  // Waits for the deferred compute tasks (defer_) and adds their device
  // times to `times` and the timeline.
  void FlushDeferred(IterationTimes& times);
  void ReceiveDeps(TaskId id, int iteration, IterationTimes& times);
  void ForwardTo(int slot, models::OpId end);
  void BackwardTo(int slot, models::OpId begin);
  // Sets the slot's inputs and labels for `iteration` and asks the input
  // pipeline for the next iteration's; returns the seconds spent waiting.
  double LoadSlot(int slot, int iteration);
  std::int64_t FirstSample(int slot, int iteration) const;
  void Collective(const Task& t, IterationTimes& times);
  ParamRange BucketRange(std::int32_t bucket) const;
  void SharedWeightAllReduce(const plan::Collective& c, const std::vector<int>& group,
                             IterationTimes& times);
  void OptimizerStep(IterationTimes& times);
  void PullShard(plan::RankId server, IterationTimes& times);
  void PushShard(plan::RankId server, IterationTimes& times);
  void SaveCheckpoint(int step);
  int Resume();
  // Held-out evaluation after `iterations` (ExecOptions::eval_every), with
  // this rank's training seconds so far: evaluates together with the other
  // ranks and appends the point (returns true when it reaches a stop
  // target), or, in parameter-server plans, keeps worker 0's parameters for
  // EvaluateKept (returns false).
  bool EvaluateOrKeep(int iterations, double trained, std::vector<EvalPoint>* out);
  void EvaluateKept(std::vector<EvalPoint>* out);
  struct KeptParams {
    EvalPoint point;  // updates, samples, train_seconds
    std::vector<float> params;
  };
  std::vector<KeptParams> kept_;

  const plan::Plan& plan_;
  const models::ModelGraph& graph_;
  const Dataset& data_;
  Communicator& comm_;
  Backend& backend_;
  const ExecOptions& options_;
  const int me_;
  const bool host_memory_;  // the backend's buffers are host memory (MPI reads them directly)
  const std::vector<plan::GradientBucket>& buckets_;  // the plan's (empty: whole buffer)
  const bool average_parameters_;                    // plan.sync.averaged == kParameters
  models::OpId begin_ = 0, end_ = 0;
  int micro_batch_ = 1, micro_batches_ = 1;
  int replica_ = 0, replicas_ = 1;
  std::vector<std::vector<TaskId>> tasks_;  // per plan iteration, this rank's, id order
  std::unique_ptr<ModelRuntime> runtime_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<BatchPrefetcher> input_;
  std::vector<float> staging_;
  std::vector<models::OpId> fwd_cursor_;  // per slot: next op to run forward
  std::vector<models::OpId> bwd_cursor_;  // per slot: ops >= this have run backward
  std::set<TaskId> received_;
  std::vector<std::pair<std::vector<float>, SendRequest>> pending_sends_;
  // Local SGD: parameter ranges to average after the update, and over
  // which ranks.
  std::vector<std::pair<ParamRange, std::vector<int>>> deferred_averages_;
  bool averaging_now_ = false;  // this iteration averages parameters
  // The outer optimizer's state (plan::Sync::outer), per parameter.
  std::vector<float> outer_prev_, outer_m_;
  Clock::time_point run_start_;
  // Device marks (ExecOptions::task_timing): compute tasks are queued
  // without waiting, each between two backend marks, and timed when the
  // next task that needs the device idle (or the iteration's end) flushes
  // them. The anchor mark is queued on an idle device at anchor_time_, which
  // maps marks onto the host clock for the timeline.
  struct DeferredTask {
    TaskId id;
    int iteration, start_mark, end_mark;
  };
  bool defer_ = false;
  std::vector<DeferredTask> deferred_;
  int anchor_mark_ = -1;
  Clock::time_point anchor_time_;
  std::vector<TimelineEvent> events_;
  void Record(TaskId task, int iteration, Clock::time_point a, Clock::time_point b, bool receive) {
    if (!options_.record_timeline) return;
    events_.push_back({me_, task, iteration, receive,
                       std::chrono::duration<double, std::micro>(a - run_start_).count(),
                       std::chrono::duration<double, std::micro>(b - run_start_).count()});
  }
  std::vector<bool> loaded_;  // per slot, this iteration
  // Parameter-server plans (ps_runner.h): the version of each server's last
  // pull (indexed by rank), echoed in pushes; whether this iteration's own
  // optimizer step has run.
  bool ps_ = false;
  std::vector<float> echoed_version_;
  bool stepped_ = false;
  // Collectives handed to the comm thread this iteration: by task id, the
  // job's ticket; each job's interval, written by the job and read here
  // once its ticket is waited for.
  struct AsyncCollective {
    TaskId id = 0;
    int iteration = 0;
    std::int64_t ticket = 0;
    Clock::time_point start, end;
  };
  std::unordered_map<TaskId, std::int64_t> tickets_;
  std::deque<AsyncCollective> async_;  // not yet accounted, in ticket order
  void SubmitCollective(TaskId id, const Task& t, int iteration);
  // Waits for the job with `ticket` and accounts the finished ones.
  void WaitCollective(std::int64_t ticket, IterationTimes& times);
  // Declared last: destroyed first, so its jobs never outlive what they use.
  std::unique_ptr<CommThread> comm_thread_;
};

// This rank's op range, micro-batching, replica and tasks by iteration.
void RankRunner::Layout() {
  const auto& ops = plan_.ops_on_rank[static_cast<std::size_t>(me_)];
  DTSIM_CHECK(!ops.empty(), "rank without ops");
  begin_ = static_cast<models::OpId>(*std::min_element(ops.begin(), ops.end()));
  end_ = static_cast<models::OpId>(*std::max_element(ops.begin(), ops.end())) + 1;
  if (static_cast<models::OpId>(ops.size()) != end_ - begin_)
    throw UserError("rank " + std::to_string(me_) + " holds non-contiguous model chunks",
                    "interleaved pipeline schedules are simulated only; use gpipe or 1f1b");
  // Ranks holding the same ops are replicas of each other.
  for (int r = 0; r < plan_.num_ranks(); ++r) {
    if (plan_.ops_on_rank[static_cast<std::size_t>(r)] != ops) continue;
    if (r < me_) ++replica_;
    if (r != me_) ++replicas_;
  }
  tasks_.assign(static_cast<std::size_t>(plan_.iterations), {});
  int max_mb = 0;
  for (TaskId id = 0; id < static_cast<TaskId>(plan_.num_tasks()); ++id) {
    const Task& t = plan_.task(id);
    if (t.rank != me_) continue;
    tasks_[static_cast<std::size_t>(t.iteration)].push_back(id);
    if (IsCompute(t.kind)) {
      micro_batch_ = t.batch;
      max_mb = std::max(max_mb, t.micro_batch);
    }
  }
  micro_batches_ = max_mb + 1;
}

std::int64_t RankRunner::FirstSample(int slot, int iteration) const {
  const std::int64_t per_replica = static_cast<std::int64_t>(micro_batch_) * micro_batches_;
  return static_cast<std::int64_t>(iteration) * per_replica * replicas_ +
         replica_ * per_replica + static_cast<std::int64_t>(slot) * micro_batch_;
}

double RankRunner::LoadSlot(int slot, int iteration) {
  const auto start = Clock::now();
  BatchPrefetcher::Batch batch = input_->Take(FirstSample(slot, iteration));
  const double waited = Seconds(start, Clock::now());
  if (iteration + 1 < options_.iterations) input_->Prefetch(FirstSample(slot, iteration + 1));
  runtime_->SetInput(slot, batch->x.data());
  runtime_->SetLabels(slot, batch->labels.data());
  input_->Recycle(std::move(batch));
  return waited;
}

// Runs forward from the slot's cursor up to (not including) `end`; a task
// before the cursor is a recomputation and runs its ops again.
void RankRunner::ForwardTo(int slot, models::OpId end) {
  auto& cursor = fwd_cursor_[static_cast<std::size_t>(slot)];
  for (models::OpId v = cursor; v < end; ++v) runtime_->Forward(v, slot);
  cursor = std::max(cursor, end);
}

void RankRunner::BackwardTo(int slot, models::OpId begin) {
  auto& cursor = bwd_cursor_[static_cast<std::size_t>(slot)];
  for (models::OpId v = cursor; v-- > begin;) runtime_->Backward(v, slot);
  cursor = std::min(cursor, begin);
}

// Receives what other ranks' kSend tasks that `id` depends on carry.
void RankRunner::ReceiveDeps(TaskId id, int iteration, IterationTimes& times) {
  const Task& t = plan_.task(id);
  for (TaskId d : plan_.deps(id)) {
    const Task& send = plan_.task(d);
    if (send.kind != TaskKind::kSend || send.rank == me_ || received_.count(d)) continue;
    received_.insert(d);
    if (plan_.IsServer(send.rank)) {
      const auto start = Clock::now();
      PullShard(send.rank, times);
      Record(d, iteration, start, Clock::now(), true);
      continue;
    }
    const bool gradient = t.kind != TaskKind::kForward;
    const std::int64_t n = gradient ? runtime_->boundary_output_elements()
                                    : runtime_->boundary_input_elements();
    staging_.resize(static_cast<std::size_t>(n));
    const auto start = Clock::now();
    comm_.Recv(send.rank, TransferTag(iteration, send.micro_batch, gradient ? 1 : 0),
               staging_.data(), static_cast<std::size_t>(n));
    const auto end = Clock::now();
    times.comm += Seconds(start, end);
    Record(d, iteration, start, end, true);
    if (gradient)
      runtime_->SetBoundaryOutputGrads(send.micro_batch, staging_.data());
    else
      runtime_->SetBoundaryInputs(send.micro_batch, staging_.data());
  }
}

void RankRunner::RunTask(TaskId id, int iteration, IterationTimes& times) {
  ReceiveDeps(id, iteration, times);
  const Task& t = plan_.task(id);
  if (comm_thread_) {
    for (TaskId d : plan_.deps(id)) {
      const auto it = tickets_.find(d);
      if (it != tickets_.end()) WaitCollective(it->second, times);
    }
    if (t.kind == TaskKind::kCollective && !averaging_now_ &&
        plan_.collectives()[static_cast<std::size_t>(t.collective)].shared_op < 0) {
      SubmitCollective(id, t, iteration);
      return;
    }
  }
  if (defer_ && IsCompute(t.kind)) {
    times.input += LoadOnFirstForward(t, iteration);
    if (anchor_mark_ < 0) {
      backend_.Synchronize();
      anchor_time_ = Clock::now();
      anchor_mark_ = backend_.Mark();
    }
    const int start = backend_.Mark();
    RunCompute(t);
    deferred_.push_back({id, iteration, start, backend_.Mark()});
    return;
  }
  if (t.kind != TaskKind::kRecv) FlushDeferred(times);
  const auto start = Clock::now();
  RunTaskBody(id, iteration, times);
  Record(id, iteration, start, Clock::now(), false);
}

void RankRunner::FlushDeferred(IterationTimes& times) {
  if (anchor_mark_ < 0) return;
  backend_.Synchronize();
  const auto at = [&](int mark) {
    const std::chrono::duration<double> since(backend_.MarkSeconds(anchor_mark_, mark));
    return anchor_time_ + std::chrono::duration_cast<Clock::duration>(since);
  };
  for (const DeferredTask& d : deferred_) {
    times.compute += backend_.MarkSeconds(d.start_mark, d.end_mark);
    Record(d.id, d.iteration, at(d.start_mark), at(d.end_mark), false);
  }
  deferred_.clear();
  backend_.ClearMarks();
  anchor_mark_ = -1;
}

double RankRunner::LoadOnFirstForward(const Task& t, int iteration) {
  const auto k = static_cast<std::size_t>(t.micro_batch);
  if (t.kind != TaskKind::kForward || loaded_[k]) return 0;
  loaded_[k] = true;
  fwd_cursor_[k] = begin_;
  bwd_cursor_[k] = end_;
  return LoadSlot(t.micro_batch, iteration);
}

void RankRunner::RunCompute(const Task& t) {
  const int slot = t.micro_batch;
  if (t.kind == TaskKind::kForward) {
    const auto k = static_cast<std::size_t>(slot);
    const auto last = static_cast<models::OpId>(t.op + t.op_count);
    // A forward before the cursor re-computes kept activations (the
    // plan's recomputation): they are still here, so nothing runs.
    if (static_cast<models::OpId>(t.op) >= fwd_cursor_[k] || last > fwd_cursor_[k])
      ForwardTo(slot, last);
    return;
  }
  ForwardTo(slot, end_);  // free ops after the last forward task
  BackwardTo(slot, static_cast<models::OpId>(t.op));
}

void RankRunner::RunTaskBody(TaskId id, int iteration, IterationTimes& times) {
  const Task& t = plan_.task(id);
  const int slot = t.micro_batch;
  const auto start = Clock::now();
  double input_wait = 0;  // inside `start` .. end, but not compute
  switch (t.kind) {
    case TaskKind::kForward:
    case TaskKind::kBackwardInput:
    case TaskKind::kBackwardWeight:
    case TaskKind::kBackward:
      input_wait = LoadOnFirstForward(t, iteration);
      times.input += input_wait;
      RunCompute(t);
      break;
    case TaskKind::kSend: {
      if (plan_.IsServer(t.peer)) {
        PushShard(t.peer, times);
        return;
      }
      // The payload depends on what the send follows on this rank.
      bool gradient = false;
      for (TaskId d : plan_.deps(id))
        if (plan_.task(d).rank == me_ && plan_.task(d).kind != TaskKind::kForward) gradient = true;
      std::vector<float> payload;
      if (gradient) {
        BackwardTo(slot, begin_);
        payload.resize(static_cast<std::size_t>(runtime_->boundary_input_elements()));
        runtime_->GetBoundaryInputGrads(slot, payload.data());
      } else {
        ForwardTo(slot, end_);
        payload.resize(static_cast<std::size_t>(runtime_->boundary_output_elements()));
        runtime_->GetBoundaryOutputs(slot, payload.data());
      }
      const auto send_start = Clock::now();
      SendRequest request = comm_.Isend(t.peer, TransferTag(iteration, slot, gradient ? 1 : 0),
                                        payload.data(), payload.size());
      times.comm += Seconds(send_start, Clock::now());
      pending_sends_.emplace_back(std::move(payload), std::move(request));
      return;
    }
    case TaskKind::kRecv: return;  // receives happen where the data is used
    case TaskKind::kCollective: Collective(t, times); return;
    case TaskKind::kOptimizer: OptimizerStep(times); return;
  }
  backend_.Synchronize();
  const double took = Seconds(start, Clock::now()) - input_wait;
  times.compute += took;
  const double factor = options_.slowdown.empty()
                            ? 1.0
                            : options_.slowdown[static_cast<std::size_t>(me_)];
  if (factor > 1.0)
    std::this_thread::sleep_for(std::chrono::duration<double>((factor - 1.0) * took));
}

// The parameters of a data-parallel bucket: a contiguous range, as its ops'
// parameters are adjacent.
ParamRange RankRunner::BucketRange(std::int32_t bucket) const {
  std::int64_t lo = runtime_->num_params(), hi = 0;
  const plan::GradientBucket& b = buckets_[static_cast<std::size_t>(bucket)];
  for (std::int32_t op = b.first_op; op < b.end_op; ++op) {
    const ParamRange r = runtime_->OpParams(static_cast<models::OpId>(op));
    if (r.count == 0) continue;
    lo = std::min(lo, r.offset);
    hi = std::max(hi, r.offset + r.count);
  }
  return lo < hi ? ParamRange{lo, hi - lo} : ParamRange{0, 0};
}

// Hands a gradient collective to the comm thread: the sum over the group,
// then the mean, as Collective() does on host memory (the mean multiplies
// each element once: the same bits as the backend's Scale).
void RankRunner::SubmitCollective(TaskId id, const Task& t, int iteration) {
  const plan::Collective& c = plan_.collectives()[static_cast<std::size_t>(t.collective)];
  const auto& members = plan_.groups()[static_cast<std::size_t>(c.group)];
  std::vector<int> group(members.begin(), members.end());
  const ParamRange range =
      buckets_.empty() ? ParamRange{0, runtime_->num_params()} : BucketRange(c.bucket);
  float* data = runtime_->grads() + range.offset;
  const AllReduceAlgorithm algorithm = AlgorithmFor(c.algorithm, options_.mpi_allreduce);
  async_.push_back({id, iteration, 0, {}, {}});
  AsyncCollective* record = &async_.back();  // deque: stable while others are added
  const std::int64_t ticket = comm_thread_->Submit([this, record, data, range, algorithm,
                                                    group = std::move(group)] {
    record->start = Clock::now();
    comm_.AllReduceSum(data, static_cast<std::size_t>(range.count), algorithm, group);
    const float inv = 1.0f / static_cast<float>(group.size());
    for (std::int64_t i = 0; i < range.count; ++i) data[i] *= inv;
    record->end = Clock::now();
  });
  record->ticket = ticket;
  tickets_[id] = ticket;
}

void RankRunner::WaitCollective(std::int64_t ticket, IterationTimes& times) {
  comm_thread_->WaitFor(ticket);
  while (!async_.empty() && async_.front().ticket <= ticket) {
    const AsyncCollective& done = async_.front();
    times.comm += Seconds(done.start, done.end);
    Record(done.id, done.iteration, done.start, done.end, false);
    async_.pop_front();
  }
}

// All-reduces the collective's share of this rank's buffer: a data-parallel
// bucket (a contiguous range: its ops' parameters are adjacent), or every
// gradient of the stage (pipeline replicas).
void RankRunner::Collective(const Task& t, IterationTimes& times) {
  const plan::Collective& c = plan_.collectives()[static_cast<std::size_t>(t.collective)];
  const auto& group = plan_.groups()[static_cast<std::size_t>(c.group)];
  ParamRange range{0, runtime_->num_params()};
  if (c.shared_op >= 0) {
    // A table shared across stages: the stages' gradients of it add up (the
    // unsplit model accumulates both uses into one gradient), so the sum is
    // not divided by the group's size.
    SharedWeightAllReduce(c, group, times);
    return;
  }
  if (!buckets_.empty()) range = BucketRange(c.bucket);
  if (averaging_now_) {
    // Parameters, after the local update, over the collective's group.
    deferred_averages_.emplace_back(range, std::vector<int>(group.begin(), group.end()));
    return;
  }
  float* data = runtime_->grads() + range.offset;
  const auto start = Clock::now();
  const bool host = host_memory_;
  if (!host && !options_.mpi_allreduce && options_.device_all_reduce &&
      options_.device_all_reduce(data, range.count, group)) {
    backend_.Scale(range.count, 1.0f / static_cast<float>(group.size()), data);
    backend_.Synchronize();
    times.comm += Seconds(start, Clock::now());
    return;
  }
  float* buffer = data;
  if (!host) {
    staging_.resize(static_cast<std::size_t>(range.count));
    backend_.Download(staging_.data(), data, range.count);
    buffer = staging_.data();
  }
  comm_.AllReduceSum(buffer, static_cast<std::size_t>(range.count),
                     AlgorithmFor(c.algorithm, options_.mpi_allreduce), group);
  if (!host) backend_.Upload(data, staging_.data(), range.count);
  // The loss is averaged over each replica's samples: the mean over all
  // replicas is the sum over N.
  backend_.Scale(range.count, 1.0f / static_cast<float>(group.size()), data);
  backend_.Synchronize();
  times.comm += Seconds(start, Clock::now());
}

void RankRunner::SharedWeightAllReduce(const plan::Collective& c, const std::vector<int>& group,
                                       IterationTimes& times) {
  const ParamRange range = runtime_->WeightParams(static_cast<models::OpId>(c.shared_op));
  float* data = runtime_->grads() + range.offset;
  const auto start = Clock::now();
  if (host_memory_ || options_.mpi_allreduce || !options_.device_all_reduce ||
      !options_.device_all_reduce(data, range.count, group)) {
    float* buffer = data;
    if (!host_memory_) {
      staging_.resize(static_cast<std::size_t>(range.count));
      backend_.Download(staging_.data(), data, range.count);
      buffer = staging_.data();
    }
    comm_.AllReduceSum(buffer, static_cast<std::size_t>(range.count),
                       AlgorithmFor(c.algorithm, options_.mpi_allreduce), group);
    if (!host_memory_) backend_.Upload(data, staging_.data(), range.count);
  }
  backend_.Synchronize();
  times.comm += Seconds(start, Clock::now());
}

void RankRunner::OptimizerStep(IterationTimes& times) {
  stepped_ = true;
  const auto start = Clock::now();
  optimizer_->Step(runtime_->params(), runtime_->grads());
  runtime_->ZeroGrads();
  backend_.Synchronize();
  times.compute += Seconds(start, Clock::now());
  if (deferred_averages_.empty()) return;
  // Local SGD: average the replicas' parameters over each collective's group.
  const auto comm_start = Clock::now();
  for (const auto& [range, group] : deferred_averages_) {
    staging_.resize(static_cast<std::size_t>(range.count));
    backend_.Download(staging_.data(), runtime_->params() + range.offset, range.count);
    comm_.AllReduceSum(staging_.data(), static_cast<std::size_t>(range.count),
                       options_.mpi_allreduce ? AllReduceAlgorithm::kMpi : AllReduceAlgorithm::kRing,
                       group);
    const float inv = 1.0f / static_cast<float>(group.size());
    for (float& x : staging_) x *= inv;
    const plan::OuterOptimizer& outer = plan_.sync.outer;
    if (outer.nesterov && static_cast<int>(group.size()) == comm_.size()) {
      // DiLoCo's outer step on the averaged range (Douillard et al. 2023,
      // Algorithm 1, Nesterov as PyTorch's SGD(nesterov=True)).
      const float lr = outer.lr, mu = outer.momentum;
      for (std::int64_t i = 0; i < range.count; ++i) {
        const auto k = static_cast<std::size_t>(range.offset + i);
        float& x = staging_[static_cast<std::size_t>(i)];
        const float delta = outer_prev_[k] - x;
        outer_m_[k] = mu * outer_m_[k] + delta;
        x = outer_prev_[k] - lr * (delta + mu * outer_m_[k]);
        outer_prev_[k] = x;
      }
    }
    backend_.Upload(runtime_->params() + range.offset, staging_.data(), range.count);
  }
  deferred_averages_.clear();
  times.comm += Seconds(comm_start, Clock::now());
}

// Receives `server`'s shard of the parameters (ps_runner.h) into this
// replica.
void RankRunner::PullShard(plan::RankId server, IterationTimes& times) {
  const std::vector<plan::ParamSpan>& spans = ServerSpans(plan_, server);
  staging_.resize(static_cast<std::size_t>(kPsHeader + SpanElements(spans)));
  const auto start = Clock::now();
  comm_.Recv(server, kPsPullTag, staging_.data(), staging_.size());
  echoed_version_[static_cast<std::size_t>(server)] = staging_[0];
  const float* from = staging_.data() + kPsHeader;
  for (const plan::ParamSpan& span : spans) {
    backend_.Upload(runtime_->params() + span.offset, from, span.count);
    from += span.count;
  }
  times.comm += Seconds(start, Clock::now());
}

// Sends `server` this replica's gradients of its shard, or its parameters
// after this iteration's own update (average_parameters; the update runs
// here when the plan has no optimizer task on workers).
void RankRunner::PushShard(plan::RankId server, IterationTimes& times) {
  if (average_parameters_ && !stepped_) OptimizerStep(times);
  const std::vector<plan::ParamSpan>& spans = ServerSpans(plan_, server);
  std::vector<float> payload(static_cast<std::size_t>(kPsHeader + SpanElements(spans)));
  payload[0] = echoed_version_[static_cast<std::size_t>(server)];
  const float* from = average_parameters_ ? runtime_->params() : runtime_->grads();
  float* to = payload.data() + kPsHeader;
  for (const plan::ParamSpan& span : spans) {
    backend_.Download(to, from + span.offset, span.count);
    to += span.count;
  }
  const auto start = Clock::now();
  SendRequest request = comm_.Isend(server, kPsPushTag, payload.data(), payload.size());
  times.comm += Seconds(start, Clock::now());
  pending_sends_.emplace_back(std::move(payload), std::move(request));
}

void RankRunner::SaveCheckpoint(int step) {
  Checkpoint ckpt;
  ckpt.step = step;
  ckpt.tensors = optimizer_->State();
  ckpt.tensors["params"] = runtime_->DownloadParams();
  ckpt.counters["optimizer_steps"] = optimizer_->steps();
  ckpt.counters["seed"] = static_cast<std::int64_t>(options_.seed);
  SaveCheckpointToDir(options_.checkpoint_dir + "/rank-" + std::to_string(me_), ckpt);
}

// Every rank's `mine` (>= -1, < 2^63 - 1), in rank order. Values travel
// as three 21-bit pieces per rank through a float sum, exact (a float holds
// integers below 2^24; each slot has one non-zero contributor).
std::vector<std::int64_t> AllGatherInt64(Communicator& comm, std::int64_t mine) {
  constexpr int kPieces = 3, kBits = 21;
  const auto ranks = static_cast<std::size_t>(comm.size());
  std::vector<float> buf(ranks * kPieces, 0.0f);
  const auto shifted = static_cast<std::uint64_t>(mine + 1);
  for (int k = 0; k < kPieces; ++k)
    buf[static_cast<std::size_t>(comm.rank()) * kPieces + static_cast<std::size_t>(k)] =
        static_cast<float>((shifted >> (kBits * k)) & ((1u << kBits) - 1));
  if (ranks > 1) {
    std::vector<int> world(ranks);
    for (std::size_t r = 0; r < ranks; ++r) world[r] = static_cast<int>(r);
    comm.AllReduceSum(buf.data(), buf.size(), AllReduceAlgorithm::kMpi, world);
  }
  std::vector<std::int64_t> out(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    std::uint64_t v = 0;
    for (int k = 0; k < kPieces; ++k)
      v |= static_cast<std::uint64_t>(buf[r * kPieces + static_cast<std::size_t>(k)]) << (kBits * k);
    out[r] = static_cast<std::int64_t>(v) - 1;
  }
  return out;
}

// Loads the checkpoint of `step` in `dir` and checks that it belongs to
// this run (seed, this stage's parameter count). Returns the reason it
// cannot be used, or "" with *ckpt filled.
std::string TryCheckpoint(const std::string& dir, std::int64_t step, std::uint64_t seed,
                          std::int64_t params, Checkpoint* ckpt) {
  const std::string path = CheckpointPath(dir, step);
  try {
    *ckpt = LoadCheckpoint(path);
  } catch (const UserError& e) {
    return e.where().ToString() + ": " + e.message();
  }
  if (ckpt->step != step)
    return path + ": holds step " + std::to_string(ckpt->step) + ", its name says " +
           std::to_string(step);
  const auto stored_seed = ckpt->counters.find("seed");
  if (stored_seed == ckpt->counters.end() ||
      stored_seed->second != static_cast<std::int64_t>(seed))
    return path + ": written with seed " +
           (stored_seed == ckpt->counters.end() ? std::string("(none)")
                                                : std::to_string(stored_seed->second)) +
           ", this run uses " + std::to_string(seed);
  const auto p = ckpt->tensors.find("params");
  if (p == ckpt->tensors.end() || static_cast<std::int64_t>(p->second.size()) != params)
    return path + ": its parameters do not match this model and stage (" +
           std::to_string(p == ckpt->tensors.end() ? 0 : p->second.size()) + " instead of " +
           std::to_string(params) + ")";
  return "";
}

// Returns the iteration to start from: the newest checkpoint step that is
// valid on every rank. Ranks agree on it over the communicator (each
// proposes its newest valid step no newer than every proposal so far, until
// all propose the same), so a checkpoint damaged on some ranks only makes
// every rank fall back to the previous common one instead of leaving the
// ranks in different collectives. Throws UserError on every rank when no
// step is valid everywhere (or no checkpoint exists).
int RankRunner::Resume() {
  const std::string dir = options_.checkpoint_dir + "/rank-" + std::to_string(me_);
  const std::vector<std::int64_t> steps = CheckpointSteps(dir);
  std::vector<std::string> rejected;  // this rank's unusable checkpoints, newest first
  std::int64_t bound = INT64_MAX;
  std::int64_t proposal = -1;
  Checkpoint ckpt;
  auto next_checked = steps.rbegin();  // steps newer than this were tried
  std::int64_t agreed = -1;
  for (;;) {
    // This rank's newest valid step <= bound (-1: none).
    if (proposal > bound || proposal < 0) {
      proposal = -1;
      for (; next_checked != steps.rend(); ++next_checked) {
        if (*next_checked > bound) continue;
        const std::string why =
            TryCheckpoint(dir, *next_checked, options_.seed, runtime_->num_params(), &ckpt);
        if (why.empty()) {
          proposal = *next_checked++;
          break;
        }
        rejected.push_back(why);
      }
    }
    const std::vector<std::int64_t> all = AllGatherInt64(comm_, proposal);
    const std::int64_t low = *std::min_element(all.begin(), all.end());
    if (low == *std::max_element(all.begin(), all.end()) || low < 0) {
      agreed = low;
      break;
    }
    bound = low;
  }
  // How many checkpoint files each rank had, and could not use: none at all
  // means "nothing to resume from", not "damaged".
  const std::vector<std::int64_t> files =
      AllGatherInt64(comm_, static_cast<std::int64_t>(steps.size()));
  const std::vector<std::int64_t> unusable =
      AllGatherInt64(comm_, static_cast<std::int64_t>(rejected.size()));
  if (agreed < 0) {
    if (*std::max_element(files.begin(), files.end()) == 0)
      throw UserError(SourceLocation{options_.checkpoint_dir},
                      "--resume: there is no checkpoint to resume from",
                      "run with --checkpoint-every N first, or leave out --resume");
    // Every rank says the same, with what it knows of the others.
    std::string msg = "--resume: no checkpoint step is valid on every rank (";
    for (std::size_t r = 0; r < files.size(); ++r) {
      msg += r > 0 ? "; rank " : "rank ";
      msg += std::to_string(r) + ": " + std::to_string(files[r]) + " checkpoint(s), " +
             std::to_string(unusable[r]) + " unusable";
    }
    msg += ")";
    if (!rejected.empty()) msg += "; here the newest unusable is " + rejected.front();
    throw UserError(SourceLocation{dir}, msg,
                    "start over without --resume, or restore the checkpoints of every rank-R "
                    "folder");
  }
  if (options_.warn) {
    for (const std::string& why : rejected) options_.warn("skipping a checkpoint: " + why);
    if (me_ == 0 && std::accumulate(unusable.begin(), unusable.end(), std::int64_t{0}) > 0)
      options_.warn("resuming from step " + std::to_string(agreed) +
                    ", the newest checkpoint valid on every rank");
  }
  runtime_->UploadParams(ckpt.tensors["params"]);
  optimizer_->SetState(ckpt.tensors, ckpt.counters["optimizer_steps"]);
  return static_cast<int>(agreed);
}

bool RankRunner::EvaluateOrKeep(int iterations, double trained, std::vector<EvalPoint>* out) {
  // `trained` is this rank's; data-parallel ranks report their mean (they
  // leave each evaluation together, so it differs little between them).
  EvalPoint p;
  p.samples = static_cast<std::int64_t>(iterations) * plan_.samples_per_iteration;
  if (ps_) {
    if (replica_ != 0) return false;
    // The servers' update count at this worker's last pull (0 before any).
    float version = 0;
    for (int r = 0; r < plan_.num_ranks(); ++r)
      if (plan_.IsServer(r)) {
        version = echoed_version_[static_cast<std::size_t>(r)];
        break;
      }
    p.updates = static_cast<std::int64_t>(version);
    p.train_seconds = trained;
    kept_.push_back({p, runtime_->DownloadParams()});
    return false;
  }
  p.updates = iterations;
  std::vector<int> world(static_cast<std::size_t>(comm_.size()));
  for (std::size_t r = 0; r < world.size(); ++r) world[r] = static_cast<int>(r);
  // Local SGD's replicas differ between averages: evaluate their mean.
  std::vector<float> own;
  if (average_parameters_ && replicas_ > 1) {
    own = runtime_->DownloadParams();
    std::vector<float> mean = own;
    comm_.AllReduceSum(mean.data(), mean.size(), AllReduceAlgorithm::kMpi, world);
    for (float& v : mean) v /= static_cast<float>(replicas_);
    runtime_->UploadParams(mean);
  }
  const std::int64_t share = options_.eval_samples / replicas_;
  const EvalSums sums = EvaluateRange(*runtime_, *options_.eval_data, replica_ * share, share);
  if (!own.empty()) runtime_->UploadParams(own);
  std::vector<float> total = {static_cast<float>(sums.loss), static_cast<float>(sums.correct),
                              static_cast<float>(sums.count), static_cast<float>(trained)};
  if (replicas_ > 1) comm_.AllReduceSum(total.data(), total.size(), AllReduceAlgorithm::kMpi, world);
  if (total[2] <= 0)
    throw UserError("eval_samples " + std::to_string(options_.eval_samples) +
                        " leaves no whole micro-batch of " + std::to_string(micro_batch_) +
                        " per rank to evaluate",
                    "raise eval_samples to at least ranks x micro-batch");
  p.loss = total[0] / total[2];
  p.accuracy = total[1] / total[2];
  p.train_seconds = total[3] / static_cast<double>(replicas_);
  out->push_back(p);
  return (options_.stop_at_accuracy > 0 && p.accuracy >= options_.stop_at_accuracy) ||
         (options_.stop_at_loss > 0 && p.loss <= options_.stop_at_loss);
}

void RankRunner::EvaluateKept(std::vector<EvalPoint>* out) {
  const std::vector<float> own = kept_.empty() ? std::vector<float>{} : runtime_->DownloadParams();
  for (KeptParams& k : kept_) {
    runtime_->UploadParams(k.params);
    const EvalSums sums = EvaluateRange(*runtime_, *options_.eval_data, 0, options_.eval_samples);
    if (sums.count <= 0)
      throw UserError("eval_samples " + std::to_string(options_.eval_samples) +
                          " is less than one micro-batch of " + std::to_string(micro_batch_),
                      "raise eval_samples");
    k.point.loss = sums.loss / sums.count;
    k.point.accuracy = sums.correct / sums.count;
    out->push_back(k.point);
  }
  if (!own.empty()) runtime_->UploadParams(own);
  kept_.clear();
}

ExecResult RankRunner::Run() {
  ExecResult result;
  result.samples_per_iteration = plan_.samples_per_iteration;
  const int h = plan_.sync.averaging_period;
  if (h < 1 || plan_.iterations < h)
    throw InternalError("the plan needs at least averaging_period iterations");
  const int first = options_.resume ? Resume() : 0;
  result.first_iteration = first;
  if (plan_.sync.outer.nesterov) {
    if (options_.resume)
      throw UserError("--resume with an outer optimizer: checkpoints do not hold its state",
                      "run from the start");
    outer_prev_ = runtime_->DownloadParams();
    outer_m_.assign(outer_prev_.size(), 0.0f);
  }
  const int n = options_.iterations;
  if (first >= n)  // every rank agreed on `first`: all stop here
    throw UserError(SourceLocation{options_.checkpoint_dir},
                    "--resume: the checkpoint to resume from is at step " +
                        std::to_string(first) + ", and this run has " + std::to_string(n) +
                        " iterations: nothing is left to run",
                    "raise --iterations above " + std::to_string(first));
  // Only the iterations this run executes: [first, n).
  std::vector<IterationTimes> mine(static_cast<std::size_t>(n - first));
  std::vector<double> losses(static_cast<std::size_t>(n - first), 0.0);
  const int every = options_.eval_every;
  if (every > 0 && (begin_ != 0 || end_ != graph_.num_ops()))
    throw UserError("held-out evaluation needs every worker to hold the whole model",
                    "evaluate data-parallel, local SGD or parameter-server plans (pipeline and "
                    "model-parallel plans are not evaluated yet)");
  // Training time so far: the wall time since the start barrier less the
  // evaluations' (what a user waits for, iterations and what runs between
  // them, without the measuring).
  double evaluating = 0;
  auto evaluate = [&](int iterations) {
    const auto start = Clock::now();
    const bool reached = EvaluateOrKeep(iterations, Seconds(run_start_, start) - evaluating,
                                        &result.eval);
    evaluating += Seconds(start, Clock::now());
    return reached;
  };
  // The rank that logs: the lowest one holding the loss.
  comm_.Barrier();
  run_start_ = Clock::now();
  int ran = n;  // iterations run, up to the target's stop
  if (every > 0) evaluate(first);
  for (int i = first; i < n; ++i) {
    IterationTimes& times = mine[static_cast<std::size_t>(i - first)];
    const auto start = Clock::now();
    runtime_->SetStep(i);
    if (ps_) runtime_->ZeroGrads();  // no optimizer task may have zeroed them
    stepped_ = false;
    loaded_.assign(static_cast<std::size_t>(micro_batches_), false);
    received_.clear();
    // Plan iteration i % H: with local SGD only every H-th one averages.
    // Post-local SGD's synchronous phase runs the averaging iteration as
    // data parallelism (gradients averaged before the update).
    const bool synchronous_phase = i < plan_.sync.post_local_steps;
    averaging_now_ = average_parameters_ && !synchronous_phase;
    for (TaskId id : tasks_[static_cast<std::size_t>(synchronous_phase ? h - 1 : i % h)])
      RunTask(id, i, times);
    if (comm_thread_) {
      WaitCollective(comm_thread_->submitted(), times);
      tickets_.clear();
    }
    FlushDeferred(times);
    const auto wait_start = Clock::now();
    for (auto& [payload, request] : pending_sends_) request.Wait();
    pending_sends_.clear();
    times.comm += Seconds(wait_start, Clock::now());
    times.seconds = Seconds(start, Clock::now());
    if (runtime_->holds_loss()) {
      double sum = 0;
      for (int k = 0; k < micro_batches_; ++k) sum += runtime_->Loss(k);
      double& loss = losses[static_cast<std::size_t>(i - first)];
      loss = sum / micro_batches_;
      const bool logger = replica_ == 0;
      if (logger && options_.log && options_.log_every > 0 &&
          ((i + 1) % options_.log_every == 0 || i + 1 == n)) {
        char line[160];
        std::snprintf(line, sizeof line, "step %d, loss = %.2f (%.1f examples/sec; %.3f sec/batch)",
                      i + 1, loss,
                      static_cast<double>(plan_.samples_per_iteration) / times.seconds,
                      times.seconds);
        options_.log(line);
      }
    }
    if (options_.checkpoint_every > 0 && (i + 1) % options_.checkpoint_every == 0)
      SaveCheckpoint(i + 1);
    if (every > 0 && ((i + 1) % every == 0 || i + 1 == n) &&
        evaluate(i + 1)) {
      ran = i + 1;
      break;
    }
  }
  mine.resize(static_cast<std::size_t>(ran - first));
  losses.resize(static_cast<std::size_t>(ran - first));
  if (ps_ && every > 0) EvaluateKept(&result.eval);
  result.final_params = runtime_->DownloadParams();
  result.final_params.resize(static_cast<std::size_t>(runtime_->own_params()));
  for (models::OpId v = 0; v < begin_; ++v) result.params_offset += graph_.op(v).params;
  result.bytes_sent = static_cast<std::uint64_t>(comm_.stats().bytes_sent);
  RankReport report{mine, {}, {}};
  if (runtime_->holds_loss()) report.losses = losses;
  GatherResult(comm_, report, &result);
  if (options_.record_timeline) GatherTimeline(comm_, events_, &result);
  return result;
}

}  // namespace

ExecResult ExecutePlan(const plan::Plan& plan, const models::ModelGraph& graph,
                       const Dataset& data, Communicator& comm, Backend& backend,
                       const ExecOptions& options) {
  if (options.iterations < 1) throw UserError("iterations must be at least 1");
  CheckRunnable(plan, comm, options);
  if (plan.IsServer(comm.rank())) return RunParameterServer(plan, graph, comm, backend, options);
  RankRunner runner(plan, graph, data, comm, backend, options);
  ExecResult result = runner.Run();
  result.overlapped_comm = runner.overlapped_comm();
  return result;
}

}  // namespace dtsim::exec
