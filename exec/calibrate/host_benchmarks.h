// Measurements of the host rather than a device: what ranks that share a
// core pay each time they hand a message to each other.
#pragma once

#include <optional>

#include "config/device_profile.h"
#include "exec/calibrate/timing.h"

namespace dtsim::exec {

// Whether this process can pin two threads to one of its cores (what
// MeasureSchedulerHandoff needs).
bool CanPinThreads();

// Two threads pinned to one core hand a turn back and forth `handoffs`
// times, each busy-waiting for its turn as an MPI rank polls for a
// message. Neither blocks, so each handoff lasts until the scheduler
// preempts the waiting thread: one scheduler slice. Returns the group
// "scheduler" measurement with seconds per handoff, or nullopt where the
// threads cannot be pinned (no affinity support, not permitted).
// REQUIRES: handoffs >= 1.
std::optional<config::ProfileMeasurement> MeasureSchedulerHandoff(int handoffs,
                                                                  const TimingOptions& timing);

}  // namespace dtsim::exec
