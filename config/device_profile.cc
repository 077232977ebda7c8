// Device profile files (docs/device_profile.md): writer, strict reader, and
// how a profile's numbers enter a scenario.
#include "config/device_profile.h"

#include <cmath>
#include <limits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/units.h"
#include "common/yaml_reader.h"

namespace dtsim::config {
namespace {

namespace fs = std::filesystem;

// Units the writer uses: one per dimension, so that files compare easily.
constexpr double kGiga = 1e9;   // GFLOP/s, GB/s
constexpr double kMicro = 1e-6; // us
constexpr double kNano = 1e-9;  // ns

// Six significant digits: far below the run-to-run noise of a measurement.
std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string WithUnit(double v, double scale, const char* unit) {
  std::string s = Number(v / scale);
  s += ' ';
  s += unit;
  return s;
}

// A double-quoted YAML string; quotes and backslashes escaped, control
// characters dropped (host names and device descriptions have none).
std::string Quoted(const std::string& text) {
  std::string s = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') s += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) s += c;
  }
  s += '"';
  return s;
}

// "21.8 GFLOP/s" or "9.1 GB/s": the rate of a measurement, for comments.
std::string RateComment(const ProfileMeasurement& m) {
  if (m.flops > 0) return FormatFlopRate(m.flops / m.seconds);
  if (m.bytes > 0) return FormatBandwidth(m.bytes / m.seconds);
  return FormatSeconds(m.seconds) + " per call";
}

double ReadEfficiency(const YamlValue& v) {
  const double e = v.AsNumber();
  if (!(e > 0 && e <= 1)) {
    v.Fail("expected an efficiency in (0, 1], got " + v.Describe(),
           "an efficiency is the achieved rate divided by peak_fp32");
  }
  // Measured, not typed: memory-bound kinds (pooling, activations) are
  // timed as FLOP rates, far below the GEMM peak they are divided by. On a
  // CPU whose AVX-512 GEMM runs 195 GFLOP/s, max pooling ran 0.35 GFLOP/s
  // (0.0018) and, on a loaded machine, 0.0006; calibrate wrote that and
  // this reader refused it. 1e-6 still keeps op times inside the
  // simulation's clock (a TFLOP at 1e-6 of a TFLOP/s is 1e6 s).
  if (e < kMinMeasuredEfficiency) {
    v.Fail("the efficiency " + v.Describe() + " is below 1e-6, the least dtsim accepts",
           "an efficiency is the achieved rate divided by peak_fp32");
  }
  return e;
}

// A list of {<key>: N >= 1, efficiency: e} rows, by N (dense_efficiency_by_rows,
// conv_efficiency_by_flops).
std::map<std::int64_t, double> ReadEfficiencyTable(const YamlValue& v, const char* key) {
  std::map<std::int64_t, double> table;
  for (const YamlValue& item : v.AsSequence()) {
    const YamlMap row = item.AsMap({key, "efficiency"});
    const std::int64_t at = row.Require(key).AsInt64(1, std::numeric_limits<std::int64_t>::max());
    table[at] = ReadEfficiency(row.Require("efficiency"));
  }
  return table;
}

double ReadNonNegative(const YamlValue& v) {
  const double x = v.AsNumber();
  if (x < 0) v.Fail("expected a number >= 0, got " + v.Describe());
  return x;
}

ProfileMeasurement ReadMeasurement(const YamlValue& v) {
  const YamlMap m =
      v.AsMap({"group", "name", "shape", "flops", "bytes", "seconds", "repeats"});
  ProfileMeasurement r;
  r.group = m.Require("group").AsString();
  r.name = m.Require("name").AsString();
  if (auto x = m.Get("shape")) r.shape = x->AsString();
  if (auto x = m.Get("flops")) r.flops = ReadNonNegative(*x);
  if (auto x = m.Get("bytes")) r.bytes = ReadNonNegative(*x);
  const YamlValue seconds = m.Require("seconds", "the median time of one run, in seconds");
  r.seconds = seconds.AsNumber();
  if (!(r.seconds > 0)) {
    seconds.Fail("expected a time > 0 in seconds, got " + seconds.Describe());
  }
  r.repeats = m.Require("repeats").AsInt(1);
  return r;
}

ProfileLink ReadLink(const YamlValue& v) {
  const YamlMap m = v.AsMap({"bandwidth", "latency", "ranks"});
  ProfileLink l;
  l.bw_bytes_per_s = m.Require("bandwidth").AsPositiveQuantity(Dimension::kBandwidth);
  l.latency_s = m.Require("latency").AsQuantity(Dimension::kTime);
  if (auto x = m.Get("ranks")) l.ranks = x->AsInt(2);
  return l;
}

ProfileProvenance ReadProvenance(const YamlValue& v) {
  const YamlMap m =
      v.AsMap({"date", "host", "dtsim_version", "backend", "threads", "quick", "measurements"});
  ProfileProvenance p;
  p.date = m.Require("date").AsString();
  p.host = m.Require("host").AsString();
  p.dtsim_version = m.Require("dtsim_version").AsString();
  p.backend = m.Require("backend").AsString();
  if (auto x = m.Get("threads")) p.threads = x->AsInt(1);
  if (auto x = m.Get("quick")) p.quick = x->AsBool();
  if (auto x = m.Get("measurements")) {
    for (const YamlValue& item : x->AsSequence()) p.measurements.push_back(ReadMeasurement(item));
  }
  return p;
}

// Replaces the entry named like `spec.name` (ignoring case) or appends it.
template <typename Spec>
void Put(Spec spec, std::vector<Spec>* entries) {
  for (Spec& e : *entries) {
    if (EqualsIgnoreCase(e.name, spec.name)) {
      e = std::move(spec);
      return;
    }
  }
  entries->push_back(std::move(spec));
}

}  // namespace

std::string DeviceProfileProblem(const DeviceProfile& p) {
  if (p.device.empty()) return "device profile: the device name is empty";
  if (!(p.peak_fp32_flop_per_s > 0) || !std::isfinite(p.peak_fp32_flop_per_s))
    return "device profile: peak_fp32 must be > 0";
  if (!(p.memory_bw_bytes_per_s > 0) || !std::isfinite(p.memory_bw_bytes_per_s))
    return "device profile: memory_bandwidth must be > 0";
  if (!(p.kernel_launch_s >= 0) || !std::isfinite(p.kernel_launch_s))
    return "device profile: kernel_launch must be >= 0";
  for (const auto& [kind, e] : p.compute_efficiency) {
    if (!(e >= kMinMeasuredEfficiency && e <= 1)) {
      return std::string("device profile: compute_efficiency.") + models::OpKindName(kind) +
             " must be in [1e-6, 1]";
    }
  }
  for (const auto& [rows, e] : p.dense_efficiency_by_rows) {
    if (rows < 1 || !(e >= kMinMeasuredEfficiency && e <= 1))
      return "device profile: dense_efficiency_by_rows needs rows >= 1 and efficiency in "
             "[1e-6, 1]";
  }
  for (const auto& [flops, e] : p.conv_efficiency_by_flops) {
    if (flops < 1 || !(e >= kMinMeasuredEfficiency && e <= 1))
      return "device profile: conv_efficiency_by_flops needs flops >= 1 and efficiency in "
             "[1e-6, 1]";
  }
  if (!(p.scheduler_handoff_s >= 0) || !std::isfinite(p.scheduler_handoff_s))
    return "device profile: scheduler_handoff must be >= 0";
  for (const auto& [kind, seconds] : p.input_draw_s_per_element) {
    if (kind.empty() || !(seconds > 0) || !std::isfinite(seconds))
      return "device profile: input_draw needs a dataset name and a time > 0";
  }
  if (p.link) {
    if (!(p.link->bw_bytes_per_s > 0) || !std::isfinite(p.link->bw_bytes_per_s))
      return "device profile: link bandwidth must be > 0";
    if (!(p.link->latency_s >= 0) || !std::isfinite(p.link->latency_s))
      return "device profile: link latency must be >= 0";
    if (p.link->ranks < 2) return "device profile: a link needs ranks >= 2";
  }
  const ProfileProvenance& v = p.provenance;
  if (v.date.empty() || v.host.empty() || v.dtsim_version.empty() || v.backend.empty())
    return "device profile: provenance needs date, host, dtsim_version and backend";
  for (const ProfileMeasurement& m : v.measurements) {
    if (m.group.empty() || m.name.empty()) return "device profile: a measurement has no name";
    if (!(m.seconds > 0) || !std::isfinite(m.seconds) || m.repeats < 1 || !(m.flops >= 0) ||
        !(m.bytes >= 0)) {
      return "device profile: measurement '" + m.group + " " + m.name + "' is not valid";
    }
  }
  return "";
}

std::string DeviceProfileYaml(const DeviceProfile& p) {
  const std::string problem = DeviceProfileProblem(p);
  DTSIM_CHECK(problem.empty(), problem);
  std::ostringstream o;
  o << "# dtsim device profile (docs/device_profile.md), written by `dtsim calibrate`.\n"
    << "# A scenario uses it with `cluster: {device_profile: <this file>}`.\n"
    << "format: " << kDeviceProfileFormat << "\n"
    << "device: " << Quoted(p.device) << "\n"
    << "peak_fp32: " << WithUnit(p.peak_fp32_flop_per_s, kGiga, "GFLOP/s")
    << "  # best GEMM rate\n"
    << "memory_bandwidth: " << WithUnit(p.memory_bw_bytes_per_s, kGiga, "GB/s")
    << "  # best streaming rate\n"
    << "kernel_launch: " << WithUnit(p.kernel_launch_s, kMicro, "us")
    << "  # time of a tiny op\n";
  if (!p.compute_efficiency.empty()) {
    o << "compute_efficiency:  # achieved rate / peak_fp32, forward + backward\n";
    for (const auto& [kind, e] : p.compute_efficiency) {
      o << "  " << models::OpKindName(kind) << ": " << Number(e) << "\n";
    }
  }
  if (!p.dense_efficiency_by_rows.empty()) {
    o << "dense_efficiency_by_rows:  # dense layers by the rows of their GEMM (batch x positions)\n";
    for (const auto& [rows, e] : p.dense_efficiency_by_rows)
      o << "  - {rows: " << rows << ", efficiency: " << Number(e) << "}\n";
  }
  if (!p.conv_efficiency_by_flops.empty()) {
    o << "conv_efficiency_by_flops:  # convolutions by their forward FLOPs per sample\n";
    for (const auto& [flops, e] : p.conv_efficiency_by_flops)
      o << "  - {flops: " << flops << ", efficiency: " << Number(e) << "}\n";
  }
  if (!p.input_draw_s_per_element.empty()) {
    o << "input_draw:  # dtsim exec's synthetic batches, per input element\n";
    for (const auto& [kind, seconds] : p.input_draw_s_per_element)
      o << "  " << kind << ": " << WithUnit(seconds, kNano, "ns") << "\n";
  }
  if (p.scheduler_handoff_s > 0)
    o << "scheduler_handoff: " << WithUnit(p.scheduler_handoff_s, kMicro, "us")
      << "  # until a busy-waiting process gets a shared core\n";
  if (p.link) {
    o << "link:  # between MPI ranks on this machine\n"
      << "  bandwidth: " << WithUnit(p.link->bw_bytes_per_s, kGiga, "GB/s") << "\n"
      << "  latency: " << WithUnit(p.link->latency_s, kMicro, "us") << "\n"
      << "  ranks: " << p.link->ranks << "\n";
  }
  const ProfileProvenance& v = p.provenance;
  o << "provenance:\n"
    << "  date: " << Quoted(v.date) << "\n"
    << "  host: " << Quoted(v.host) << "\n"
    << "  dtsim_version: " << Quoted(v.dtsim_version) << "\n"
    << "  backend: " << Quoted(v.backend) << "\n"
    << "  threads: " << v.threads << "\n"
    << "  quick: " << (v.quick ? "true" : "false") << "\n";
  if (!v.measurements.empty()) {
    o << "  measurements:  # median of `repeats` timed runs after warm-up\n";
    for (const ProfileMeasurement& m : v.measurements) {
      o << "    - {group: " << Quoted(m.group) << ", name: " << Quoted(m.name);
      if (!m.shape.empty()) o << ", shape: " << Quoted(m.shape);
      o << ", flops: " << Number(m.flops) << ", bytes: " << Number(m.bytes)
        << ", seconds: " << Number(m.seconds) << ", repeats: " << m.repeats << "}  # "
        << RateComment(m) << "\n";
    }
  }
  return o.str();
}

DeviceProfile ParseDeviceProfile(const std::string& yaml_text, const std::string& filename) {
  const YamlValue root = YamlValue::Root(ParseYamlDocument(yaml_text, filename), filename);
  if (root.IsNull()) {
    root.Fail("the device profile is empty", "write one with `dtsim calibrate`");
  }
  const YamlMap m = root.AsMap({"format", "device", "peak_fp32", "memory_bandwidth",
                                "kernel_launch", "compute_efficiency", "dense_efficiency_by_rows",
                                "conv_efficiency_by_flops", "scheduler_handoff", "input_draw",
                                "link", "provenance"});
  const YamlValue format = m.Require("format", "the format version, 1");
  if (format.AsInt(1) != kDeviceProfileFormat) {
    format.Fail("unsupported device profile format " + format.Describe(),
                "this dtsim reads format " + std::to_string(kDeviceProfileFormat) +
                    "; measure again with `dtsim calibrate`");
  }
  DeviceProfile p;
  p.device = m.Require("device").AsString();
  p.peak_fp32_flop_per_s = m.Require("peak_fp32").AsPositiveQuantity(Dimension::kFlopRate);
  p.memory_bw_bytes_per_s =
      m.Require("memory_bandwidth").AsPositiveQuantity(Dimension::kBandwidth);
  p.kernel_launch_s = m.Require("kernel_launch").AsQuantity(Dimension::kTime);
  if (auto x = m.Get("compute_efficiency")) {
    std::vector<std::string> kinds;
    for (models::OpKind k : models::AllOpKinds()) kinds.emplace_back(models::OpKindName(k));
    const YamlMap efficiencies = x->AsMap(kinds);
    for (const YamlMap::Entry& e : efficiencies.entries()) {
      for (models::OpKind k : models::AllOpKinds()) {
        if (e.key == models::OpKindName(k)) p.compute_efficiency[k] = ReadEfficiency(e.value);
      }
    }
  }
  if (auto x = m.Get("dense_efficiency_by_rows"))
    p.dense_efficiency_by_rows = ReadEfficiencyTable(*x, "rows");
  if (auto x = m.Get("conv_efficiency_by_flops"))
    p.conv_efficiency_by_flops = ReadEfficiencyTable(*x, "flops");
  if (auto x = m.Get("input_draw")) {
    const YamlMap draws = x->AsMap({"class_image", "teacher", "tokens"});
    for (const YamlMap::Entry& e : draws.entries())
      p.input_draw_s_per_element[e.key] = e.value.AsPositiveQuantity(Dimension::kTime);
  }
  if (auto x = m.Get("scheduler_handoff"))
    p.scheduler_handoff_s = x->AsQuantity(Dimension::kTime, 1.0);
  if (auto x = m.Get("link")) p.link = ReadLink(*x);
  p.provenance = ReadProvenance(m.Require("provenance"));
  return p;
}

DeviceProfile LoadDeviceProfile(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw UserError(SourceLocation{path}, "cannot read device profile '" + path + "'",
                    "write one with `dtsim calibrate --out " + path + "`");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw UserError(SourceLocation{path}, "cannot read device profile '" + path + "'");
  return ParseDeviceProfile(text.str(), path);
}

void ApplyDeviceProfile(const DeviceProfile& profile, const std::string& source, Scenario* s) {
  const hw::HardwareCatalog catalog = ScenarioCatalog(*s);
  const hw::DeviceSpec* base = catalog.FindDevice(s->cluster.device);
  if (base == nullptr) {
    throw UserError("device profile: unknown device '" + s->cluster.device + "'",
                    "cluster.device must name a catalog device");
  }
  if (s->workload.cost_model == CostModelKind::kKernels) {
    throw UserError(s->workload.cost_model_where,
                    "cost_model: kernels cannot use a device profile",
                    "a profile measures roofline efficiencies; set cost_model: roofline or "
                    "remove cluster.device_profile");
  }
  hw::DeviceSpec device = *base;
  // Measured rates replace the datasheet's: the kernel model's SM count and
  // generation no longer describe them.
  device.arch = hw::GpuArch::kUnknown;
  device.sm_count = 0;
  device.fp32_flop_per_s = profile.peak_fp32_flop_per_s;
  device.tf32_flop_per_s = device.fp16_flop_per_s = device.bf16_flop_per_s = 0;
  device.memory_bw_bytes_per_s = profile.memory_bw_bytes_per_s;
  device.source = "device profile " + source + " (" + profile.device + ", measured on " +
                  profile.provenance.host + " " + profile.provenance.date + ")";
  Put(std::move(device), &s->cluster.custom_devices);

  if (profile.link) {
    const hw::LinkSpec* base_link = catalog.FindLink(s->cluster.intra_node_link);
    if (base_link == nullptr) {
      throw UserError("device profile: unknown link '" + s->cluster.intra_node_link + "'",
                      "cluster.intra_node_link must name a catalog link");
    }
    hw::LinkSpec link = *base_link;
    link.bw_bytes_per_s = profile.link->bw_bytes_per_s;
    link.latency_s = profile.link->latency_s;
    link.source = "device profile " + source + " (" + std::to_string(profile.link->ranks) +
                  " ranks on " + profile.provenance.host + ")";
    Put(std::move(link), &s->cluster.custom_links);
  }

  WorkloadConfig& w = s->workload;
  for (const auto& [kind, e] : profile.compute_efficiency) w.compute_efficiency.emplace(kind, e);
  if (!w.kernel_launch_s) w.kernel_launch_s = profile.kernel_launch_s;
  if (w.dense_efficiency_by_rows.empty())
    w.dense_efficiency_by_rows = profile.dense_efficiency_by_rows;
  if (w.conv_efficiency_by_flops.empty())
    w.conv_efficiency_by_flops = profile.conv_efficiency_by_flops;
  if (!w.memory_efficiency) w.memory_efficiency = 1.0;
}

}  // namespace dtsim::config
