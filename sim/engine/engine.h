// The discrete-event engine: executes a plan in virtual time (integer
// nanoseconds) given the duration of every task.
//
// Semantics (the plan's, see plan/plan.h): each (rank, stream) runs its tasks
// one at a time in program order; a task starts when it is at the head of its
// stream, the stream is idle and all its dependencies have finished. The
// member tasks of a collective each hold their comm stream from the moment
// they are ready; the collective starts when the last member is ready and
// all members finish together. kSend tasks hold no stream: they start as
// soon as their dependencies allow. Server ranks' streams take tasks in the
// order they become ready. A task with min_deps = k starts after k of its
// dependencies.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/units.h"
#include "plan/plan.h"

namespace dtsim::sim {

struct TaskCosts {
  std::vector<SimTime> task_ns;        // per task; ignored for collective members
  std::vector<SimTime> collective_ns;  // per collective
  // The host (sim/cost/host_costs.h); empty = no host model. Each rank's host
  // thread issues the rank's tasks one after another in task id order
  // (program order across its streams), spending host_ns[t] on task t. A
  // task starts no earlier than host_lead_ns[t] (<= host_ns[t]) after the
  // host began issuing it (the step's setup and its first kernel's launch)
  // and ends no earlier than the host finished issuing it (a task of many
  // kernels runs as they are launched); a collective starts once issued.
  // After issuing a task with host_sync[t] set, the host waits until that
  // task has finished before it issues the next.
  std::vector<SimTime> host_ns = {};
  std::vector<SimTime> host_lead_ns = {};
  std::vector<std::uint8_t> host_sync = {};
  // Before issuing a task with host_await[t] set, the host spends
  // host_await_setup_ns[t] (the step's setup, part of host_ns[t]), then
  // waits until the task's dependencies on server ranks have finished: a
  // parameter server's reply, which the worker's framework receives on the
  // host before it runs the step. Empty = no such task.
  std::vector<std::uint8_t> host_await = {};
  std::vector<SimTime> host_await_setup_ns = {};
  // The input pipeline; empty = none. input_ns[r]: time rank r's share of
  // its node's pipeline takes to prepare one iteration's batch (0: the
  // rank reads no input). The first compute task of each iteration of
  // rank r waits for its batch; batch k is prepared after batch k - 1 and
  // once batch k - input_prefetch has been taken; with input_prefetch = 0,
  // once that task asks for it (it is able to start otherwise): the step
  // loads its own batch.
  std::vector<SimTime> input_ns = {};
  int input_prefetch = 2;
  // The priced time of every compute task of the plan summed (seconds), and
  // of it fp8's FP8 GEMMs and its casts and amax/scale updates
  // (sim/cost/cost_model.h ComputeParts), for the reports' split of compute.
  double compute_priced_s = 0;
  double fp8_gemm_s = 0;
  double fp8_cast_s = 0;
  // The same sum with the optimizer steps, by where each time came from
  // (sim/cost/measured_costs.h CostSource: measured, interpolated, modelled).
  double priced_by_source_s[3] = {0, 0, 0};
  // With an op-cost table: the ops (model op ids, ascending) some pass of
  // which the table could not price.
  std::vector<std::int32_t> modelled_ops = {};
};

// Optional time-dependent behaviour. The default is the static costs.
class EngineHooks {
 public:
  virtual ~EngineHooks() = default;
  // When a compute task of nominal duration `ns` that starts at `start` ends
  // (stragglers: interference windows, per-step noise).
  virtual SimTime ComputeEnd(const plan::Task& task, SimTime start, SimTime ns) {
    (void)task;
    return AddSimTime(start, ns);
  }
  // When collective `collective` (an index into the plan's collectives),
  // which starts at `start` and takes `ns` on the network as priced, ends
  // (links whose bandwidth changes over time).
  virtual SimTime CollectiveEnd(std::int32_t collective, SimTime start, SimTime ns) {
    (void)collective;
    return AddSimTime(start, ns);
  }
  // When a kSend task that starts at `start` ends (a network model that
  // reserves links); the default is its static cost.
  virtual SimTime TransferEnd(const plan::Task& task, SimTime start, SimTime ns) {
    (void)task;
    return AddSimTime(start, ns);
  }
  // The kSend tasks one rank starts at the same instant `start` (a server
  // answering all its workers at once), ns[i] the static cost of tasks[i]:
  // sets ends[i]. They may share their sender's link (the default treats
  // them one by one with TransferEnd, in order).
  virtual void TransferGroupEnds(std::span<const plan::Task* const> tasks, SimTime start,
                                 std::span<const SimTime> ns, std::span<SimTime> ends) {
    for (std::size_t i = 0; i < tasks.size(); ++i) ends[i] = TransferEnd(*tasks[i], start, ns[i]);
  }
};

struct TaskTiming {
  SimTime start = 0;  // for collective members: when the collective started
  SimTime end = 0;
  SimTime ready = 0;  // when the task could have started on its own side
};

struct EngineResult {
  std::vector<TaskTiming> timing;  // per task
  // With a host model: when the host began and finished issuing each task
  // (the host thread of the trace), and per task how long it waited for
  // the host (able to start otherwise, until the host issued it, plus the
  // time it ran longer than its own cost because its kernels were still
  // being launched) or for its input batch. Empty without one.
  std::vector<SimTime> host_begin, host_end;
  std::vector<SimTime> host_wait_ns, input_wait_ns;
  SimTime makespan = 0;
  std::uint64_t events = 0;        // completion events processed
};

// Runs `plan` to completion. Throws InternalError if the plan deadlocks
// (a dependency cycle through stream order). `hooks` may be nullptr.
EngineResult RunEngine(const plan::Plan& plan, const TaskCosts& costs,
                       EngineHooks* hooks = nullptr);

}  // namespace dtsim::sim
