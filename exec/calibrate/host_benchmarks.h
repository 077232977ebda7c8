// Measurements of the host rather than a device: what ranks that share a
// core pay each time they hand a message to each other.
#pragma once

#include <optional>
#include <string>
#include <vector>

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

// The synthetic datasets `dtsim exec` draws its batches from
// (exec/data/synthetic_dataset.h), by the name the profile uses.
const std::vector<std::string>& SyntheticDatasetKinds();  // class_image, teacher, tokens

// Draws batches of the synthetic dataset `kind` on this thread, as an exec
// rank does: CIFAR-10-sized images (3 x 32 x 32, 10 classes), teacher
// inputs of 1,024 values (10 classes, 32 hidden units) or 128-token
// sequences (vocabulary 1,000). Group "input_draw", name `kind`, seconds
// per input element (a pixel, a value, a token), bytes = elements per run.
// REQUIRES: kind is one of SyntheticDatasetKinds().
config::ProfileMeasurement MeasureSyntheticDraw(const std::string& kind,
                                                const TimingOptions& timing);

}  // namespace dtsim::exec
