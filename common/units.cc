#include "common/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace dtsim {
namespace {

struct Unit {
  const char* name;
  double scale;  // multiply by this to get the base unit
};

// Bytes: decimal and binary prefixes.
const std::vector<Unit>& ByteUnits() {
  static const std::vector<Unit> units = {
      {"B", 1.0},         {"KB", 1e3},         {"kB", 1e3},          {"MB", 1e6},
      {"GB", 1e9},        {"TB", 1e12},        {"KiB", 1024.0},      {"MiB", 1048576.0},
      {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  return units;
}

// Bandwidth in bytes/s. Lower-case 'b' is bits, upper-case 'B' is bytes.
const std::vector<Unit>& BandwidthUnits() {
  static const std::vector<Unit> units = {
      {"bps", 1.0 / 8},   {"Kbps", 1e3 / 8},   {"kbps", 1e3 / 8},    {"Mbps", 1e6 / 8},
      {"Gbps", 1e9 / 8},  {"Tbps", 1e12 / 8},  {"b/s", 1.0 / 8},     {"Kb/s", 1e3 / 8},
      {"Mb/s", 1e6 / 8},  {"Gb/s", 1e9 / 8},   {"Tb/s", 1e12 / 8},   {"Bps", 1.0},
      {"KBps", 1e3},      {"kBps", 1e3},       {"MBps", 1e6},        {"GBps", 1e9},
      {"TBps", 1e12},     {"B/s", 1.0},        {"KB/s", 1e3},        {"kB/s", 1e3},
      {"MB/s", 1e6},      {"GB/s", 1e9},       {"TB/s", 1e12},       {"KiB/s", 1024.0},
      {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0}};
  return units;
}

const std::vector<Unit>& TimeUnits() {
  static const std::vector<Unit> units = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3},
                                          {"s", 1.0},   {"min", 60.0}, {"h", 3600.0}};
  return units;
}

const std::vector<Unit>& FlopRateUnits() {
  static const std::vector<Unit> units = {
      {"FLOPS", 1.0},    {"KFLOPS", 1e3},    {"MFLOPS", 1e6},    {"GFLOPS", 1e9},
      {"TFLOPS", 1e12},  {"PFLOPS", 1e15},   {"FLOP/s", 1.0},    {"KFLOP/s", 1e3},
      {"MFLOP/s", 1e6},  {"GFLOP/s", 1e9},   {"TFLOP/s", 1e12},  {"PFLOP/s", 1e15},
      {"Gflops", 1e9},   {"Tflops", 1e12},   {"Pflops", 1e15}};
  return units;
}

const std::vector<Unit>& UnitsFor(Dimension dim) {
  switch (dim) {
    case Dimension::kBytes: return ByteUnits();
    case Dimension::kBandwidth: return BandwidthUnits();
    case Dimension::kTime: return TimeUnits();
    case Dimension::kFlopRate: return FlopRateUnits();
  }
  return ByteUnits();
}

const char* ExampleFor(Dimension dim) {
  switch (dim) {
    case Dimension::kBytes: return "'16GiB' or '25MB'";
    case Dimension::kBandwidth: return "'25Gbps' (bits) or '3.125GBps' (bytes)";
    case Dimension::kTime: return "'5us' or '1.5ms'";
    case Dimension::kFlopRate: return "'125TFLOPS'";
  }
  return "";
}

std::string UnitList(Dimension dim) {
  std::string s;
  for (const Unit& u : UnitsFor(dim)) {
    if (!s.empty()) s += ", ";
    s += u.name;
  }
  return s;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string Format3(double v, const char* const* prefixes, int n_prefixes, double step,
                    const char* suffix) {
  int i = 0;
  double a = std::fabs(v);
  while (i + 1 < n_prefixes && a >= step) {
    a /= step;
    v /= step;
    ++i;
  }
  char buf[64];
  if (a >= 100 || a == 0)
    std::snprintf(buf, sizeof buf, "%.0f %s%s", v, prefixes[i], suffix);
  else if (a >= 10)
    std::snprintf(buf, sizeof buf, "%.1f %s%s", v, prefixes[i], suffix);
  else
    std::snprintf(buf, sizeof buf, "%.2f %s%s", v, prefixes[i], suffix);
  return buf;
}

const char* const kDecimal[] = {"", "K", "M", "G", "T", "P", "E"};

}  // namespace

const char* DimensionName(Dimension dim) {
  switch (dim) {
    case Dimension::kBytes: return "size";
    case Dimension::kBandwidth: return "bandwidth";
    case Dimension::kTime: return "time";
    case Dimension::kFlopRate: return "compute rate";
  }
  return "quantity";
}

double ParseQuantity(std::string_view text, Dimension dim, const SourceLocation& where) {
  const std::string s = Trim(text);
  const std::string what = DimensionName(dim);
  const std::string hint = std::string("write a number followed by a unit, e.g. ") +
                           ExampleFor(dim) + "; accepted units: " + UnitList(dim);
  if (s.empty()) throw UserError(where, "expected a " + what + ", got an empty value", hint);
  const char* begin = s.c_str();
  char* end = nullptr;
  double value = std::strtod(begin, &end);
  if (end == begin) {
    throw UserError(where, "expected a " + what + " (number with unit), got '" + s + "'", hint);
  }
  if (!std::isfinite(value)) {
    throw UserError(where, "expected a finite " + what + ", got '" + s + "'", hint);
  }
  std::string unit = Trim(std::string_view(end));
  if (value < 0) {
    throw UserError(where, "negative " + what + " '" + s + "': expected a value >= 0", hint);
  }
  if (unit.empty()) {
    if (value == 0) return 0.0;
    throw UserError(where, "the " + what + " '" + s + "' has no unit", hint);
  }
  for (const Unit& u : UnitsFor(dim)) {
    if (unit == u.name) return value * u.scale;
  }
  throw UserError(where, "unknown " + what + " unit '" + unit + "' in '" + s + "'", hint);
}

std::string FormatBytes(double bytes) { return Format3(bytes, kDecimal, 7, 1000.0, "B"); }
std::string FormatBandwidth(double bytes_per_s) {
  return Format3(bytes_per_s, kDecimal, 7, 1000.0, "B/s");
}
std::string FormatFlopRate(double flop_per_s) {
  return Format3(flop_per_s, kDecimal, 7, 1000.0, "FLOP/s");
}
std::string FormatCount(double count) { return Format3(count, kDecimal, 7, 1000.0, ""); }

std::string FormatSeconds(double seconds) {
  char buf[64];
  double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  if (a < 1e-6) std::snprintf(buf, sizeof buf, "%.3g ns", seconds * 1e9);
  else if (a < 1e-3) std::snprintf(buf, sizeof buf, "%.3g us", seconds * 1e6);
  else if (a < 1) std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
  else if (a < 120) std::snprintf(buf, sizeof buf, "%.3g s", seconds);
  else if (a < 7200) std::snprintf(buf, sizeof buf, "%.3g min", seconds / 60);
  else std::snprintf(buf, sizeof buf, "%.3g h", seconds / 3600);
  return buf;
}

SimTime SecondsToNs(double seconds) {
  DTSIM_CHECK(seconds >= 0 && !std::isnan(seconds), "time must be non-negative");
  if (!(seconds * 1e9 <= static_cast<double>(kMaxSimTime))) {
    throw UserError("a simulated duration of " + FormatSeconds(seconds) +
                        " is longer than dtsim's clock holds (2^62 ns, about 146 years)",
                    "check the latencies, launch costs, delays and rates of the scenario: one "
                    "of them is far out of range");
  }
  return static_cast<SimTime>(std::llround(seconds * 1e9));
}

SimTime AddSimTime(SimTime a, SimTime b) {
  DTSIM_CHECK(a >= 0 && b >= 0, "simulated times are non-negative");
  if (a > kMaxSimTime - b) {
    throw UserError("the simulated run lasts more than dtsim's clock holds (2^62 ns, about 146 "
                    "years)",
                    "check the latencies, launch costs, delays and rates of the scenario: one "
                    "of them is far out of range");
  }
  return a + b;
}

}  // namespace dtsim
