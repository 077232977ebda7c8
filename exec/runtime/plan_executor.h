// PlanExecutor: runs a plan (plan/plan.h) for real, one MPI rank per plan
// rank. Each rank walks its own tasks in task-id order (a topological order
// that is each stream's program order):
//   kForward / kBackward*  -> ModelRuntime::Forward / Backward over the
//                             task's ops (and the free ops between tasks);
//   kSend                  -> Isend of the pipeline activation or gradient;
//                             a task that depends on another rank's kSend
//                             first receives it;
//   kCollective            -> all-reduce of the bucket's gradients over the
//                             collective's group with the plan's algorithm
//                             (ring or tree over point-to-point, or MPI's),
//                             or the sum of a shared table's gradient over
//                             the stages using it (a tied embedding);
//   kOptimizer             -> the optimizer step.
// A plan is replayed: real iteration i runs the tasks of plan iteration
// i % H (H = plan.sync.averaging_period: 1 for data parallelism).
//
// Data: sample indices are a pure function of (iteration, replica,
// micro-batch), so a replica sees the same samples however many replicas
// there are: n workers x m samples see what one worker x n m samples sees.
//
// Local SGD (plan.sync.averaged = parameters): on averaging iterations each
// rank first updates alone, then the bucket collectives average the
// parameters over their group (sum, then 1/N: all ranks, or a hierarchical
// level's group); with plain SGD and H = 1 that equals averaging gradients.
// Post-local SGD (plan.sync.post_local_steps): the first steps run the
// averaging iteration (H - 1) as synchronous data parallelism, averaging
// gradients before the update. The outer optimizer (plan.sync.outer) steps
// at each average over all ranks, from the initial parameters; not with
// --resume (the checkpoint does not hold its state).
//
// Parameter-server plans (plan/parameter_server.h): workers run the tasks
// above and pull / push shards at the plan's kSend tasks; server ranks run
// exec/runtime/ps_runner.h (synchronous k-of-n or asynchronous updates).
//
// Not executed for real (UserError): tensor parallelism, interleaved
// virtual stages; checkpoints of parameter-server plans.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exec/backend.h"
#include "exec/comm/communicator.h"
#include "exec/data/dataset.h"
#include "exec/runtime/held_out_eval.h"
#include "exec/runtime/optimizer.h"
#include "models/graph.h"
#include "plan/plan.h"

namespace dtsim::exec {

// ExecOptions::task_timing.
enum class TaskTiming { kAuto, kWaitEach, kMarks };

struct ExecOptions {
  int iterations = 20;  // real iterations to run, >= 1
  // The plan says how its replicas stay in step (plan::Plan::sync: H, what
  // is averaged, post-local steps, the outer optimizer) and which gradients
  // each collective carries (plan::Plan::buckets); these options do not.
  // Use MPI's own all-reduce instead of the plan's ring or tree.
  bool mpi_allreduce = false;
  // Run gradient collectives on a second thread (exec/runtime/comm_thread.h)
  // while the rank goes on with its backward, where the plan lets them
  // (a collective waits for the backward tasks it depends on, and the tasks
  // that depend on it wait for it: parallelism.overlap's plans overlap, the
  // others do not). Only for host-memory backends (CPU) running plans
  // without point-to-point transfers (data parallelism, local SGD) on 2+
  // ranks; elsewhere the collectives run on the rank's one thread. The bits
  // computed are the same either way.
  bool comm_thread = true;
  // Device backends: sums `count` floats of a device buffer over `group`
  // (NCCL) and returns true, or returns false when it cannot (then the
  // executor stages through host memory and MPI). Empty = always MPI.
  std::function<bool(float* device_buffer, std::int64_t count, const std::vector<int>& group)>
      device_all_reduce;
  OptimizerOptions optimizer;
  std::uint64_t seed = 1;
  // Input pipeline (exec/data/batch_prefetcher.h): threads that draw the
  // next iteration's batches while this one trains. 0 = each batch is drawn
  // on the training thread when its first forward task needs it. Results do
  // not depend on it; the time a rank waits for its batch is
  // IterationTimes::input either way.
  int input_threads = 0;
  // Per plan rank, compute slowdown factor (>= 1): after each compute task
  // the rank sleeps (factor - 1) x the task's duration. Empty = none.
  std::vector<double> slowdown;
  // Checkpoints: every `checkpoint_every` iterations (0 = never) into
  // checkpoint_dir/rank-R/; `resume` starts from the newest step whose
  // checkpoint is valid on every rank (the ranks agree on it; UserError on
  // every rank when there is none, or when it leaves no iteration to run).
  int checkpoint_every = 0;
  std::string checkpoint_dir;
  bool resume = false;
  // Record every task's interval (ExecResult::timeline).
  bool record_timeline = false;
  // How compute tasks are timed. kAuto: by device marks where the backend
  // is asynchronous (Backend::Asynchronous: CUDA), else by waiting after
  // each. Marks let the host queue the next task while the device runs this
  // one, as frameworks do (waiting after each of ResNet-50's 320 tasks left
  // an H100 idle 10% of the step); a task's compute time is then the device
  // time between its marks. kWaitEach: wait after every task. kMarks: marks
  // on any backend (on the CPU backend they read the host clock; tests).
  TaskTiming task_timing = TaskTiming::kAuto;
  // Held-out evaluation (held_out_eval.h), every eval_every iterations (0 =
  // never), of the first eval_samples samples of *eval_data:
  //  - plans whose every rank holds the whole model (data parallelism, local
  //    SGD): before the first iteration and after every eval_every-th (and
  //    the last), the ranks evaluate together, each eval_samples / ranks of
  //    the samples (rounded down to whole micro-batches), on the replicas'
  //    average (local SGD's replicas differ between averages; it is
  //    computed for the evaluation only). The run stops after the first
  //    evaluation that reaches stop_at_accuracy (> 0) or stop_at_loss (> 0).
  //  - parameter-server plans: worker 0 (which must be rank 0) keeps the
  //    parameters it pulled at those iterations, with the servers' update
  //    count, and evaluates them after the run; the run does not stop early.
  // Evaluations are outside every iteration's time. Other plans: UserError.
  int eval_every = 0;
  const Dataset* eval_data = nullptr;
  std::int64_t eval_samples = 0;
  double stop_at_accuracy = 0;
  double stop_at_loss = 0;
  // Called on the rank that holds the loss (the lowest such rank) after
  // every `log_every` iterations with the seeds' step line.
  int log_every = 10;
  std::function<void(const std::string&)> log;
  // Called on any rank with a warning (a damaged checkpoint skipped on
  // resume). Empty = none.
  std::function<void(const std::string&)> warn;
};

// One task of one rank as it ran (record_timeline), in microseconds since
// the run's start barrier. Ranks on one machine share the monotonic clock,
// so their timelines line up.
struct TimelineEvent {
  std::int32_t rank = 0;
  std::int32_t task = 0;        // plan task id (a receive: the other rank's kSend)
  std::int32_t iteration = 0;   // real iteration
  bool receive = false;         // waiting for and taking in another rank's send
  double start_us = 0;
  double end_us = 0;
};

// What one rank measured; Gather() combines ranks.
struct IterationTimes {
  double seconds = 0;  // first task start to last task end on this rank
  double compute = 0;  // inside forward/backward/optimizer tasks
  double comm = 0;     // inside collectives, receives and send waits
  double input = 0;    // waiting for the input pipeline's batches
};

struct ExecResult {
  // The iterations this run executed, first_iteration .. options.iterations
  // - 1 (a resumed run skips those its checkpoint holds). Per iteration run,
  // per rank (ranks x iterations after Gather).
  std::vector<std::vector<IterationTimes>> times;
  std::vector<double> losses;   // per iteration run (mean over replicas holding the loss)
  std::int64_t samples_per_iteration = 0;
  int first_iteration = 0;      // the step resumed from; 0 when not resumed
  // This rank's parameters at the end (its own ops'; not the copies of
  // shared tables it holds, ModelRuntime::weight_copies).
  std::vector<float> final_params;
  // Where final_params starts in the whole model's flat parameter buffer
  // (a pipeline stage's first parameter, a server's shard; else 0).
  std::int64_t params_offset = 0;
  std::uint64_t bytes_sent = 0;     // this rank, communication layer
  // The collectives ran on the comm thread (ExecOptions::comm_thread).
  bool overlapped_comm = false;

  // Parameter-server plans (0 otherwise), summed over the server ranks:
  std::int64_t server_updates = 0;  // optimizer steps (or averages) applied
  std::int64_t pushes_applied = 0;  // worker pushes that went into an update
  std::int64_t pushes_dropped = 0;  // k-of-n: late pushes received and discarded
  // Staleness of an applied push: updates its server applied between the
  // worker's pull of the parameters it used and this push (0 in synchronous
  // steps). Mean over applied pushes, and maximum.
  double mean_staleness = 0;
  std::int64_t max_staleness = 0;
  // record_timeline: every worker rank's tasks (complete on rank 0 only).
  std::vector<TimelineEvent> timeline;
  // This rank only (servers): pushes averaged by each update, in order.
  std::vector<std::int32_t> update_contributions;
  // This rank only (servers): the spans of the flat parameter buffer that
  // final_params concatenates (plan::Plan::server_params).
  std::vector<plan::ParamSpan> param_spans;
  // Parameter-server plans, every server rank in rank order (gathered):
  // elements held, and the bytes of the pushes it received and the pulls
  // it sent over the run (each message's version header included).
  struct ServerTraffic {
    int rank = 0;
    std::int64_t params = 0;
    std::int64_t push_bytes = 0;
    std::int64_t pull_bytes = 0;
  };
  std::vector<ServerTraffic> servers;
  // ExecOptions::eval_every: the evaluations in order, on rank 0. updates =
  // iterations run (parameter servers: the servers' updates at the pull);
  // samples = training samples all workers had consumed; train_seconds = the
  // wall time from the run's start barrier to it, less the evaluations
  // before it (mean over ranks; parameter servers: worker 0's). A run stopped at its target has fewer iterations than
  // asked.
  std::vector<EvalPoint> eval;
};

// Runs `plan` on this process's rank (comm.rank()). REQUIRES: comm.size()
// == plan.num_ranks(), every rank materialized. Worker final_params of a
// parameter-server plan are the worker's replica (its last pull, plus its
// own update when it pushes parameters); servers hold the trained shards. The result's `times` and
// `losses` are complete on every rank (gathered with comm).
ExecResult ExecutePlan(const plan::Plan& plan, const models::ModelGraph& graph,
                       const Dataset& data, Communicator& comm, Backend& backend,
                       const ExecOptions& options);

}  // namespace dtsim::exec
