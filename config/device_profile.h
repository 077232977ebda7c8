// A device profile: what `dtsim calibrate` measured on a real device, in a
// YAML file (format: docs/device_profile.md) that a scenario names under
// `cluster.device_profile` to use measured numbers in place of datasheet ones.
//
//   peak fp32 rate (best GEMM) --> DeviceSpec::fp32_flop_per_s
//   memory bandwidth (copy)    --> DeviceSpec::memory_bw_bytes_per_s
//   per-kind efficiencies      --> WorkloadConfig::compute_efficiency
//   kernel launch overhead     --> WorkloadConfig::kernel_launch_s
//   link between ranks         --> the intra-node LinkSpec
//
// The reader is as strict as the scenario loader: unknown keys, missing
// units and out-of-range values are UserErrors at file:line:column.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "models/op.h"

namespace dtsim::config {

// Version of the format this build writes and reads (the `format` key).
inline constexpr int kDeviceProfileFormat = 1;

// One raw measurement: a piece of work timed `repeats` times after warm-up
// runs; `seconds` is the median. A rate is flops / seconds (compute) or
// bytes / seconds (memory, messages).
struct ProfileMeasurement {
  std::string group;    // "gemm", "conv2d", "memory", "op", "launch", "ping_pong"
  std::string name;     // what was run, e.g. "m512 n512 k512", "copy 64MiB", "dense"
  std::string shape;    // for group "op": the shape run, e.g. "n256 1024->1024"; else ""
  double flops = 0;     // work of one run, FLOPs (0 for transfers)
  double bytes = 0;     // bytes moved by one run (memory traffic or message size)
  double seconds = 0;   // median time of one run, > 0
  int repeats = 1;      // timed runs the median is taken over, >= 1
};

// The measured link between two ranks (MPI processes on one machine).
struct ProfileLink {
  double bw_bytes_per_s = 0;  // large-message bandwidth, one direction, > 0
  double latency_s = 0;       // small-message one-way latency, >= 0
  int ranks = 2;              // ranks the measurement ran with
};

// Where and when the profile was measured.
struct ProfileProvenance {
  std::string date;           // ISO 8601, UTC, e.g. "2025-01-31T12:00:00Z"
  std::string host;           // host name
  std::string dtsim_version;  // e.g. "0.1.0"
  std::string backend;        // the Backend measured, e.g. "cpu"
  int threads = 1;            // threads its kernels ran on (dtsim calibrate --threads)
  bool quick = false;         // measured with `--quick` (fewer, smaller runs)
  std::vector<ProfileMeasurement> measurements;
};

// The least efficiency (achieved rate / peak_fp32) a profile may hold:
// measured rates of memory-bound kinds sit far below the GEMM peak.
inline constexpr double kMinMeasuredEfficiency = 1e-6;

struct DeviceProfile {
  std::string device;                  // what was measured, e.g. "cpu (Intel Xeon ...)"
  double peak_fp32_flop_per_s = 0;     // best measured GEMM rate, > 0
  double memory_bw_bytes_per_s = 0;    // best measured streaming rate, > 0
  double kernel_launch_s = 0;          // time of a tiny op (dispatch cost), >= 0
  // Achieved rate of one forward+backward of the kind / peak, in (0, 1].
  std::map<models::OpKind, double> compute_efficiency;
  // Dense layers by the rows of their GEMM (batch x positions): achieved
  // rate / peak, in (0, 1]; the cost model interpolates in log2(rows).
  // Empty = compute_efficiency's dense value at every size.
  std::map<std::int64_t, double> dense_efficiency_by_rows;
  // Convolutions by their forward FLOPs per sample (3x3 layers from 16 to
  // 64 channels): achieved rate / peak. Small convolutions run below the
  // large ones' rate (im2col's share, short GEMMs). Empty = compute_efficiency's
  // conv2d value at every size.
  std::map<std::int64_t, double> conv_efficiency_by_flops;
  std::optional<ProfileLink> link;     // absent when measured with one rank
  // Time until a busy-waiting process gets the core it shares with another
  // busy process (one scheduler slice): what each message costs ranks that
  // outnumber the cores. 0 = not measured.
  double scheduler_handoff_s = 0;
  // What `dtsim exec` spends drawing its synthetic batches on a rank's
  // thread, seconds per input element, by dataset (class_image, teacher,
  // tokens). Empty = not measured.
  std::map<std::string, double> input_draw_s_per_element;
  ProfileProvenance provenance;
};

// "" when `p` can be written and read back: peak and memory bandwidth > 0
// and finite, launch >= 0, efficiencies in (0, 1], a link (if any) with
// bandwidth > 0 and latency >= 0, measurements with seconds > 0 and
// repeats >= 1; otherwise the first problem.
std::string DeviceProfileProblem(const DeviceProfile& p);

// The profile as YAML text (docs/device_profile.md), numbers with six
// significant digits; rates are repeated in comments for people.
// REQUIRES: DeviceProfileProblem(p) is empty (DTSIM_CHECK).
std::string DeviceProfileYaml(const DeviceProfile& p);

// Parses a profile; `filename` names the source in errors. Throws UserError
// at file:line:column on malformed YAML, unknown or missing keys, values
// without units, out-of-range values and a format version other than
// kDeviceProfileFormat.
DeviceProfile ParseDeviceProfile(const std::string& yaml_text, const std::string& filename);
// Same from a file; a missing or unreadable file is a UserError naming it.
DeviceProfile LoadDeviceProfile(const std::string& path);

// Puts the profile's numbers into a scenario, as `cluster.device_profile`
// does (docs/scenario.md):
//  - the device named s->cluster.device is replaced in the scenario's
//    catalog (through cluster.custom_devices) by a copy whose fp32 rate and
//    memory bandwidth are the profile's; its tf32/fp16/bf16 rates are cleared
//    so that every precision runs at the measured fp32 rate; its memory
//    capacity stays;
//  - when the profile has a link, the link named cluster.intra_node_link is
//    replaced the same way by one with the measured bandwidth and latency;
//  - workload.compute_efficiency gains the profile's kinds it does not list,
//    workload.kernel_launch_s and workload.memory_efficiency are set unless
//    already set (memory efficiency 1: the profile's bandwidth is an achieved
//    rate, not a datasheet peak).
// `source` names the profile in the replaced entries' `source` field.
// Throws UserError when cluster.device or cluster.intra_node_link is not in
// the scenario's catalog.
void ApplyDeviceProfile(const DeviceProfile& profile, const std::string& source, Scenario* s);

}  // namespace dtsim::config
