// Calibration of a local device: runs the benchmarks of
// device_benchmarks.h and link_benchmarks.h with fixed lists of shapes and
// turns what they measured into a device profile (config/device_profile.h)
// for scenarios. `dtsim calibrate` (tools/calibrate_command.cc) drives it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/device_profile.h"
#include "exec/backend.h"
#include "exec/comm/communicator.h"

namespace dtsim::exec {

struct CalibrateOptions {
  // Fewer shapes, smaller batches, 3 timed runs instead of 5: about 2.5 s on
  // one core of a 2-core Xeon VM, for tests. The full run takes about 30 s
  // there.
  bool quick = false;
};

// Called after each measurement with its 1-based index among `total`.
using CalibrationProgress =
    std::function<void(const config::ProfileMeasurement& m, int index, int total)>;

// Measures `backend`: GEMM rates by shape, convolution rates by shape,
// memory bandwidth (copy and axpy over 64 MiB buffers), the per-call
// overhead, and one forward+backward of every op kind of
// CalibratedOpKinds(). `progress` may be empty.
std::vector<config::ProfileMeasurement> MeasureDevice(Backend& backend,
                                                      const CalibrateOptions& options,
                                                      const CalibrationProgress& progress);

// Collective over `comm` (every rank calls it): ping-pong between ranks 0
// and 1 from 4-byte to 64 MiB messages (16 MiB with quick). The results are
// rank 0's; `progress` is called on every rank. REQUIRES: comm.size() >= 2.
std::vector<config::ProfileMeasurement> MeasureLink(Communicator& comm,
                                                    const CalibrateOptions& options,
                                                    const CalibrationProgress& progress);

// The profile of what `provenance.measurements` holds:
//   peak_fp32        = the best "gemm" rate
//   memory_bandwidth = the best "memory" rate
//   kernel_launch    = the "launch" measurement's seconds per call
//   compute_efficiency[kind] = min(1, rate of the "op" measurement / peak)
//   link (when "ping_pong" measurements exist): latency = one-way time of the
//     smallest message; bandwidth = largest message / (its one-way time -
//     latency), so that latency + bytes / bandwidth gives back both
//     measurements (the simulator's link model); ranks = `ranks`.
// Throws UserError when a gemm, memory or launch measurement is missing.
config::DeviceProfile BuildDeviceProfile(const std::string& device,
                                         const config::ProfileProvenance& provenance,
                                         int ranks);

}  // namespace dtsim::exec
