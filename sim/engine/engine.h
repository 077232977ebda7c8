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
#include "sim/cost/task_costs.h"

namespace dtsim::sim {

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
