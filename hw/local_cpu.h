// LocalCpuDevice (hw/catalog.h) in two parts: ProbeLocalCpu reads the OS,
// CpuDeviceFromProbe is a pure function of what was read, so tests can feed
// it any /proc text, including none.
//
// The model, for one "cpu" device covering the cores dtsim may use:
//   fp32 flop/s      = physical cores x clock x flop per cycle per core
//   flop/cycle/core  = 2 FMA units (assumed; some Xeon Silver/Bronze and client
//                      parts have 1 for AVX-512) x SIMD fp32 lanes x 2 flop per
//                      FMA (x 1 when the CPU has no FMA)
//   SIMD lanes       = 16 (flag avx512f), 8 (avx2 or avx), 4 (SSE, Arm NEON)
//   physical cores   = logical CPUs / (siblings / "cpu cores"), i.e. SMT
//                      siblings share one core's FMA units
//   clock            = the nominal "@ 2.30GHz" of the model name when present
//                      (stable across runs), else the highest "cpu MHz"
//   memory           = MemTotal of /proc/meminfo
//   memory bandwidth = min(cores x 10 GB/s, 200 GB/s): an ESTIMATE (one core
//                      streams ~10 GB/s; 200 GB/s is ~2/3 of 8 channels of
//                      DDR5-4800), to be calibrated, e.g. with STREAM
//   tf32/fp16/bf16   = 0: they fall back to the fp32 rate
// Whatever cannot be read falls back to a default (1 core, 2 GHz, 4 lanes
// without FMA, 8 GiB), and source says which defaults were used.
#pragma once

#include <optional>
#include <string>

#include "hw/catalog.h"

namespace dtsim::hw {

// What LocalCpuDevice reads from the operating system.
struct CpuProbe {
  std::optional<std::string> cpuinfo;  // text of /proc/cpuinfo; nullopt: unreadable
  std::optional<std::string> meminfo;  // text of /proc/meminfo; nullopt: unreadable
  unsigned logical_cpus = 0;           // std::thread::hardware_concurrency(); 0: unknown
};

// Reads /proc/cpuinfo, /proc/meminfo and the number of logical CPUs. Never
// throws for missing files.
CpuProbe ProbeLocalCpu();

// The "local-cpu" device described by `probe` (model above). Never throws;
// the result always passes DeviceSpec::Problem().
DeviceSpec CpuDeviceFromProbe(const CpuProbe& probe);

}  // namespace dtsim::hw
