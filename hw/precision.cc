// Precision and GPU architecture names, and DeviceSpec::PeakFlopRate with its
// fallbacks.
#include <string>
#include <string_view>

#include "common/error.h"
#include "hw/catalog.h"
#include "hw/catalog_internal.h"

namespace dtsim::hw {
namespace {

constexpr Precision kAllPrecisions[] = {Precision::kFp32, Precision::kTf32, Precision::kFp16,
                                        Precision::kBf16, Precision::kFp8};

}  // namespace

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
    case Precision::kFp8: return "fp8";
  }
  DTSIM_CHECK(false, "unknown Precision value " + std::to_string(static_cast<int>(p)));
}

bool IsMixedPrecision(Precision p) {
  return p == Precision::kFp16 || p == Precision::kBf16 || p == Precision::kFp8;
}

Precision ParsePrecision(std::string_view name) { return ParsePrecision(name, SourceLocation{}); }

Precision ParsePrecision(std::string_view name, const SourceLocation& where) {
  std::string accepted;
  for (Precision p : kAllPrecisions) {
    if (internal::EqualsIgnoreCase(name, PrecisionName(p))) return p;
    if (!accepted.empty()) accepted += ", ";
    accepted += PrecisionName(p);
  }
  throw UserError(where, "unknown precision '" + std::string(name) + "'",
                  "use one of: " + accepted);
}

const char* GpuArchName(GpuArch arch) {
  switch (arch) {
    case GpuArch::kUnknown: return "unknown";
    case GpuArch::kKepler: return "kepler";
    case GpuArch::kMaxwell: return "maxwell";
    case GpuArch::kPascal: return "pascal";
    case GpuArch::kVolta: return "volta";
    case GpuArch::kTuring: return "turing";
    case GpuArch::kAmpere: return "ampere";
    case GpuArch::kHopper: return "hopper";
  }
  DTSIM_CHECK(false, "unknown GpuArch value " + std::to_string(static_cast<int>(arch)));
}

GpuArch ParseGpuArch(std::string_view name, const SourceLocation& where) {
  constexpr GpuArch kAll[] = {GpuArch::kKepler, GpuArch::kMaxwell, GpuArch::kPascal,
                              GpuArch::kVolta,  GpuArch::kTuring,  GpuArch::kAmpere,
                              GpuArch::kHopper};
  std::string accepted;
  for (GpuArch a : kAll) {
    if (internal::EqualsIgnoreCase(name, GpuArchName(a))) return a;
    if (!accepted.empty()) accepted += ", ";
    accepted += GpuArchName(a);
  }
  throw UserError(where, "unknown GPU architecture '" + std::string(name) + "'",
                  "use one of: " + accepted);
}

double DeviceSpec::PeakFlopRate(Precision p) const {
  DTSIM_CHECK(fp32_flop_per_s > 0, "device '" + name + "' has no fp32 rate");
  double rate = 0;  // flop/s; 0 = not supported, fall back to fp32
  switch (p) {
    case Precision::kFp32: rate = fp32_flop_per_s; break;
    case Precision::kTf32: rate = tf32_flop_per_s; break;
    case Precision::kFp16: rate = fp16_flop_per_s; break;
    case Precision::kBf16: rate = bf16_flop_per_s; break;
    case Precision::kFp8: rate = fp8_flop_per_s; break;
  }
  return rate > 0 ? rate : fp32_flop_per_s;
}

}  // namespace dtsim::hw
