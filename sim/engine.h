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
#include <vector>

#include "common/units.h"
#include "plan/plan.h"

namespace dtsim::sim {

struct TaskCosts {
  std::vector<SimTime> task_ns;        // per task; ignored for collective members
  std::vector<SimTime> collective_ns;  // per collective
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
  // When a kSend task that starts at `start` ends (a network model that
  // reserves links); the default is its static cost.
  virtual SimTime TransferEnd(const plan::Task& task, SimTime start, SimTime ns) {
    (void)task;
    return AddSimTime(start, ns);
  }
};

struct TaskTiming {
  SimTime start = 0;  // for collective members: when the collective started
  SimTime end = 0;
  SimTime ready = 0;  // when the task could have started on its own side
};

struct EngineResult {
  std::vector<TaskTiming> timing;  // per task
  SimTime makespan = 0;
  std::uint64_t events = 0;        // completion events processed
};

// Runs `plan` to completion. Throws InternalError if the plan deadlocks
// (a dependency cycle through stream order). `hooks` may be nullptr.
EngineResult RunEngine(const plan::Plan& plan, const TaskCosts& costs,
                       EngineHooks* hooks = nullptr);

}  // namespace dtsim::sim
