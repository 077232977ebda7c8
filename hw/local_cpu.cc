// LocalCpuDevice: reads the OS (ProbeLocalCpu), then applies the model in
// hw/local_cpu.h (CpuDeviceFromProbe). No global state.
#include "hw/local_cpu.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace dtsim::hw {
namespace {

constexpr int kFmaUnitsPerCore = 2;               // assumed, see local_cpu.h
constexpr double kMemBwPerCoreBytesPerS = 10e9;   // bytes/s, estimate
constexpr double kMemBwCapBytesPerS = 200e9;      // bytes/s, estimate
constexpr double kDefaultClockHz = 2e9;           // when /proc/cpuinfo has none
constexpr double kDefaultMemoryBytes = 8.0 * 1024 * 1024 * 1024;  // when /proc/meminfo has none
constexpr double kGiB = 1024.0 * 1024 * 1024;     // bytes

std::string_view Trim(std::string_view s) {
  const char* kSpace = " \t\r\n";
  size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  size_t end = s.find_last_not_of(kSpace);
  return s.substr(begin, end - begin + 1);
}

// Leading decimal number of `s` (after spaces), or nullopt.
std::optional<double> LeadingNumber(std::string_view s) {
  s = Trim(s);
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr == s.data()) return std::nullopt;
  return value;
}

// True when the space-separated `words` contain `word`.
bool HasWord(std::string_view words, std::string_view word) {
  size_t pos = 0;
  while (pos < words.size()) {
    size_t end = words.find(' ', pos);
    if (end == std::string_view::npos) end = words.size();
    if (words.substr(pos, end - pos) == word) return true;
    pos = end + 1;
  }
  return false;
}

// The fields of /proc/cpuinfo the model uses. Per-processor fields are taken
// from the first processor; the clock is the highest "cpu MHz" seen.
struct CpuInfo {
  int processors = 0;     // "processor" entries
  std::string model;      // "model name"
  std::string flags;      // "flags" (x86) or "Features" (Arm)
  int siblings = 0;       // logical CPUs per package
  int cores = 0;          // "cpu cores": physical cores per package
  double max_mhz = 0;     // highest "cpu MHz"
};

CpuInfo ParseCpuInfo(std::string_view text) {
  CpuInfo info;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = Trim(line.substr(0, colon));
    std::string_view value = Trim(line.substr(colon + 1));
    if (key == "processor") {
      ++info.processors;
    } else if (key == "model name" && info.model.empty()) {
      info.model = value;
    } else if ((key == "flags" || key == "Features") && info.flags.empty()) {
      info.flags = value;
    } else if (key == "siblings" && info.siblings == 0) {
      info.siblings = static_cast<int>(LeadingNumber(value).value_or(0));
    } else if (key == "cpu cores" && info.cores == 0) {
      info.cores = static_cast<int>(LeadingNumber(value).value_or(0));
    } else if (key == "cpu MHz") {
      info.max_mhz = std::max(info.max_mhz, LeadingNumber(value).value_or(0));
    }
  }
  return info;
}

// Nominal clock in Hz from a model name like "... CPU @ 2.30GHz", or nullopt.
std::optional<double> NominalClockHz(std::string_view model) {
  size_t at = model.rfind('@');
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = Trim(model.substr(at + 1));
  std::optional<double> ghz = LeadingNumber(rest);
  if (!ghz || *ghz <= 0 || rest.find("GHz") == std::string_view::npos) return std::nullopt;
  return *ghz * 1e9;
}

// MemTotal of /proc/meminfo in bytes (the file's "kB" are KiB), or nullopt.
std::optional<double> MemTotalBytes(std::string_view text) {
  size_t pos = text.find("MemTotal:");
  if (pos == std::string_view::npos) return std::nullopt;
  std::optional<double> kib = LeadingNumber(text.substr(pos + 9));
  if (!kib || *kib <= 0) return std::nullopt;
  return *kib * 1024;
}

std::optional<std::string> ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();  // /proc files report size 0: read until EOF
  return text.str();
}

std::string FormatNumber(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

}  // namespace

CpuProbe ProbeLocalCpu() {
  CpuProbe probe;
  probe.cpuinfo = ReadFile("/proc/cpuinfo");
  probe.meminfo = ReadFile("/proc/meminfo");
  probe.logical_cpus = std::thread::hardware_concurrency();
  return probe;
}

DeviceSpec CpuDeviceFromProbe(const CpuProbe& probe) {
  CpuInfo info = probe.cpuinfo ? ParseCpuInfo(*probe.cpuinfo) : CpuInfo{};
  std::vector<std::string> defaults;  // which fallbacks were used

  // Cores.
  int logical = static_cast<int>(probe.logical_cpus);
  std::string logical_from = "std::thread::hardware_concurrency";
  if (logical <= 0) {
    logical = info.processors;
    logical_from = "processors in /proc/cpuinfo";
  }
  if (logical <= 0) {
    logical = 1;
    logical_from = "default";
    defaults.push_back("1 logical CPU (count unknown)");
  }
  int threads_per_core = 1;
  if (info.cores > 0 && info.siblings > info.cores) threads_per_core = info.siblings / info.cores;
  int cores = std::max(1, (logical + threads_per_core - 1) / threads_per_core);

  // Clock.
  double clock_hz = kDefaultClockHz;
  std::string clock_from = "default";
  if (std::optional<double> nominal = NominalClockHz(info.model)) {
    clock_hz = *nominal;
    clock_from = "nominal clock in the model name";
  } else if (info.max_mhz > 0) {
    clock_hz = info.max_mhz * 1e6;
    clock_from = "highest 'cpu MHz' in /proc/cpuinfo";
  } else {
    defaults.push_back("2 GHz clock (none in /proc/cpuinfo)");
  }

  // SIMD width and FMA.
  int lanes = 4;
  std::string isa = "sse/neon";
  if (HasWord(info.flags, "avx512f")) {
    lanes = 16;
    isa = "avx512f";
  } else if (HasWord(info.flags, "avx2") || HasWord(info.flags, "avx")) {
    lanes = 8;
    isa = HasWord(info.flags, "avx2") ? "avx2" : "avx";
  }
  // ARMv8 Advanced SIMD ("asimd") always has FMA.
  bool has_fma = HasWord(info.flags, "fma") || HasWord(info.flags, "asimd");
  if (info.flags.empty()) defaults.push_back("4 fp32 lanes without FMA (no CPU flags)");
  int flop_per_cycle = kFmaUnitsPerCore * lanes * (has_fma ? 2 : 1);

  // Memory.
  std::optional<double> memory = probe.meminfo ? MemTotalBytes(*probe.meminfo) : std::nullopt;
  if (!memory) defaults.push_back("8 GiB memory (no MemTotal in /proc/meminfo)");

  DeviceSpec spec;
  spec.name = "local-cpu";
  spec.kind = "cpu";
  spec.fp32_flop_per_s = cores * clock_hz * flop_per_cycle;
  spec.memory_bytes = memory.value_or(kDefaultMemoryBytes);
  spec.memory_bw_bytes_per_s = std::min(cores * kMemBwPerCoreBytesPerS, kMemBwCapBytesPerS);

  std::string model = info.model.empty() ? "unknown model" : info.model;
  spec.source = "local CPU '" + model + "': " + std::to_string(cores) + " cores (" +
                std::to_string(logical) + " logical CPUs from " + logical_from + ", " +
                std::to_string(threads_per_core) + " per core) x " +
                FormatNumber(clock_hz / 1e9) + " GHz (" + clock_from + ") x " +
                std::to_string(flop_per_cycle) + " flop/cycle (" +
                std::to_string(kFmaUnitsPerCore) + " FMA units, assumed, x " +
                std::to_string(lanes) + " fp32 lanes (" + isa + ") x " +
                (has_fma ? "2 flop per FMA" : "1 (no FMA)") + "); memory " +
                FormatNumber(spec.memory_bytes / kGiB) + " GiB (" +
                (memory ? "MemTotal in /proc/meminfo" : "default") +
                "); memory bandwidth ESTIMATE, to be calibrated (e.g. STREAM): " +
                FormatNumber(kMemBwPerCoreBytesPerS / 1e9) + " GB/s per core, capped at " +
                FormatNumber(kMemBwCapBytesPerS / 1e9) + " GB/s";
  if (!probe.cpuinfo) spec.source += "; /proc/cpuinfo unreadable";
  if (!probe.meminfo) spec.source += "; /proc/meminfo unreadable";
  for (size_t i = 0; i < defaults.size(); ++i) {
    spec.source += (i == 0 ? "; defaults used: " : ", ") + defaults[i];
  }
  return spec;
}

DeviceSpec LocalCpuDevice() { return CpuDeviceFromProbe(ProbeLocalCpu()); }

}  // namespace dtsim::hw
