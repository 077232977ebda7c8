// Hardware catalog: compute devices and links with datasheet numbers.
// Every built-in entry names its source (datasheet, whitepaper) in `source`.
// Scenarios add their own devices and links to a copy of the built-in catalog.
//
// Conventions of the built-in entries (details beside each table):
//  - flop/s are peak DENSE rates (NVIDIA quotes tensor rates "with sparsity",
//    i.e. doubled; those are halved here) at the boost clock.
//  - A device is what one CUDA device sees: a K80 board is two "K80" devices.
//  - GPU memory sizes are binary: NVIDIA's "80GB" A100 has 80 GiB (nvidia-smi
//    shows 81920 MiB). Bandwidths are decimal (GB/s = 1e9 bytes/s).
//  - Link bandwidth is per direction, after line coding (PCIe 128b/130b).
//
// Built-in names (lookup ignores case; aliases in hw/gpus.cc, hw/links.cc):
//  GPUs:  K20m K80 M40 P40 P100-PCIe-16GB P100-SXM2 V100-PCIe-16GB V100-PCIe-32GB
//         V100-SXM2-16GB V100-SXM2-32GB T4 A100-PCIe-40GB A100-PCIe-80GB
//         A100-SXM4-40GB A100-SXM4-80GB H100-PCIe H100-SXM H200-SXM GTX-980
//         TITAN-X-Maxwell GTX-1080Ti TITAN-X-Pascal TITAN-Xp
//  Links: pcie3-x16 pcie4-x16 pcie5-x16 nvlink1 nvlink2 nvlink3 nvlink4
//         nvswitch-v100 nvswitch-a100 nvswitch-h100 1GbE 10GbE 25GbE 40GbE
//         100GbE 200GbE 400GbE 25GbE-RoCE 100GbE-RoCE 200GbE-RoCE 400GbE-RoCE
//         ib-edr ib-hdr ib-ndr
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace dtsim::hw {

// Arithmetic precision of training, as a scenario names it.
enum class Precision {
  kFp32,  // plain fp32 (CUDA cores)
  kTf32,  // fp32 storage, tf32 tensor cores (A100 and later)
  kFp16,  // mixed precision, fp16 tensor cores
  kBf16,  // mixed precision, bf16 tensor cores
  // bf16 mixed precision whose linear (dense) layers' GEMMs run on FP8
  // tensor cores, as NVIDIA Transformer Engine's fp8_autocast does
  // (Hopper, Ada, Blackwell); everything else stays bf16/fp32 (sim/cost/op_kernels.h).
  kFp8,
};
const char* PrecisionName(Precision p);  // "fp32", "tf32", "fp16", "bf16", "fp8"
// True for the precisions that train with 16-bit weights and an fp32 master
// copy of them: fp16, bf16 and fp8 (whose weights are bf16 between steps).
bool IsMixedPrecision(Precision p);
// Parses a precision name, ignoring case. Throws UserError listing the
// accepted names (at `where` in the second form) when `name` is unknown.
Precision ParsePrecision(std::string_view name);
Precision ParsePrecision(std::string_view name, const SourceLocation& where);

// GPU generation, for the kernel-level cost model (sim/cost/gpu_kernel_model.h): which
// math units exist and which kernels the libraries pick. kUnknown (user
// devices, CPUs) keeps the roofline.
enum class GpuArch { kUnknown, kKepler, kMaxwell, kPascal, kVolta, kTuring, kAmpere, kHopper };
const char* GpuArchName(GpuArch arch);  // "kepler", ...; "unknown"
// Parses an architecture name, ignoring case. Throws UserError at `where`
// listing the accepted names.
GpuArch ParseGpuArch(std::string_view name, const SourceLocation& where);

struct DeviceSpec {
  std::string name;         // catalog key, e.g. "A100-SXM4-80GB"
  std::string kind = "gpu"; // "gpu" or "cpu"
  // Peak dense throughput per precision, flop/s. 0 = not supported; PeakFlopRate
  // then falls back (tf32 -> fp32, fp16/bf16 without tensor cores -> fp32).
  double fp32_flop_per_s = 0;
  double tf32_flop_per_s = 0;
  double fp16_flop_per_s = 0;
  double bf16_flop_per_s = 0;
  // FP8 (E4M3/E5M2) tensor cores, Hopper and later; 0 = none, and training
  // in fp8 is refused on the device (no fallback).
  double fp8_flop_per_s = 0;
  double memory_bytes = 0;
  double memory_bw_bytes_per_s = 0;
  // Microarchitecture, for the kernel-level cost model: the generation, the
  // streaming multiprocessors (each runs the peak rate / sm_count) and the L2
  // cache. 0 / kUnknown = not given: the simulator prices this device with
  // the roofline (sim/cost/cost_model.h).
  GpuArch arch = GpuArch::kUnknown;
  int sm_count = 0;
  double l2_bytes = 0;
  std::string source;       // where the numbers come from

  // True when the kernel-level cost model can price this device: a GPU with
  // its architecture and SM count.
  bool HasMicroarchitecture() const {
    return kind == "gpu" && arch != GpuArch::kUnknown && sm_count > 0;
  }
  // Tensor cores (Volta and later): fp16 runs on them. Pascal's packed
  // half2 rate is not a tensor core.
  bool HasTensorCores() const { return arch >= GpuArch::kVolta; }
  // FP8 tensor cores (fp8_flop_per_s > 0).
  bool HasFp8() const { return fp8_flop_per_s > 0; }

  // Peak flop/s for `p`, with the fallbacks above (fp8 without FP8 tensor
  // cores falls back to fp32 like the others; scenarios refuse it before).
  // Always > 0 for a valid spec.
  // REQUIRES: fp32_flop_per_s > 0 (DTSIM_CHECK).
  double PeakFlopRate(Precision p) const;

  // "" when the spec is valid, otherwise what is wrong, e.g.
  // "device 'x': memory_bw_bytes_per_s must be > 0". Valid: non-empty name,
  // kind "gpu" or "cpu", fp32, memory and memory bandwidth > 0, every number
  // finite and >= 0. Config code turns a problem into a UserError with the
  // location of the entry.
  std::string Problem() const;
};

// A link type. Bandwidth is per direction (links are full duplex).
struct LinkSpec {
  std::string name;              // catalog key, e.g. "nvlink3", "100GbE"
  double bw_bytes_per_s = 0;     // per direction, per device port / NIC
  double latency_s = 0;          // one hop, end to end through one switch
  std::string source;

  // "" when valid (non-empty name, finite bandwidth > 0, finite latency >= 0),
  // otherwise what is wrong.
  std::string Problem() const;
};

class HardwareCatalog {
 public:
  // The built-in devices and links (a new copy each call; no global state).
  static HardwareCatalog BuiltIn();

  // Another name for an entry, e.g. "v100" for "V100-SXM2-32GB".
  struct Alias {
    std::string alias;
    std::string target;  // name of the entry
  };

  // Case-insensitive lookup of an entry's name, then of an alias; nullptr
  // when absent. The pointer is valid until the next Add*.
  const DeviceSpec* FindDevice(std::string_view name) const;
  const LinkSpec* FindLink(std::string_view name) const;
  // Adds or replaces (same name, ignoring case; the replacement keeps the
  // old position) an entry.
  // REQUIRES: spec.Problem() is empty (DTSIM_CHECK); validate user input first.
  void AddDevice(DeviceSpec spec);
  void AddLink(LinkSpec spec);
  // Adds or replaces an alias. Entry names take precedence over aliases.
  // REQUIRES: `target` names an entry present now (DTSIM_CHECK).
  void AddDeviceAlias(std::string alias, std::string target);
  void AddLinkAlias(std::string alias, std::string target);

  const std::vector<DeviceSpec>& devices() const { return devices_; }
  const std::vector<LinkSpec>& links() const { return links_; }
  const std::vector<Alias>& device_aliases() const { return device_aliases_; }
  const std::vector<Alias>& link_aliases() const { return link_aliases_; }

 private:
  std::vector<DeviceSpec> devices_;
  std::vector<LinkSpec> links_;
  std::vector<Alias> device_aliases_;
  std::vector<Alias> link_aliases_;
};

// Describes the machine dtsim runs on as a "cpu" device (cores from the OS,
// clock and SIMD width from /proc/cpuinfo, memory from /proc/meminfo), for
// validating predictions against real CPU runs. Peak flop/s is
// cores x clock x flops-per-cycle (FMA units x SIMD lanes x 2); memory
// bandwidth is a per-core streaming estimate stated in the source field.
// Never throws for missing or unreadable /proc files: it falls back to stated
// defaults and says so in source. Name "local-cpu", kind "cpu". See
// hw/local_cpu.h for the assumptions.
DeviceSpec LocalCpuDevice();

}  // namespace dtsim::hw
