// The discrete-event engine: executes a plan in virtual time (integer
// nanoseconds) given the duration of every task.
//
// Semantics (the plan's, see plan/plan.h): each (rank, stream) runs its tasks
// one at a time in program order; a task starts when it is at the head of its
// stream, the stream is idle and all its dependencies have finished. The
// member tasks of a collective each hold their comm stream from the moment
// they are ready; the collective starts when the last member is ready and
// all members finish together.
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
// (a dependency cycle through stream order).
EngineResult RunEngine(const plan::Plan& plan, const TaskCosts& costs);

}  // namespace dtsim::sim
