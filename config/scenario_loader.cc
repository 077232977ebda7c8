// Reads a scenario file (format: docs/scenario.md) into config::Scenario.
//
// Each section has its own Read* function that declares the section's keys,
// reads them with YamlValue's typed reads and leaves the defaults of
// scenario.h for absent keys. Every error is a UserError at the offending
// key or value.
#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/yaml_reader.h"
#include "config/device_profile.h"
#include "config/scenario.h"
#include "config/jobs_loader.h"
#include "config/section_readers.h"
#include "config/strategy_keys.h"
#include "models/model_file.h"

namespace dtsim::config {
namespace {

namespace fs = std::filesystem;

constexpr std::array kTopologies = {Topology::kSingleSwitch, Topology::kFatTree};
constexpr std::array kStrategies = {Strategy::kData, Strategy::kParameterServer,
                                    Strategy::kLocalSgd, Strategy::kHybrid, Strategy::kModel};
constexpr std::array kSchedules = {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB,
                                   PipelineSchedule::kInterleaved, PipelineSchedule::kPipeDream2BW,
                                   PipelineSchedule::kPipeDream};
constexpr std::array kOptimizers = {OptimizerKind::kSgd, OptimizerKind::kMomentum,
                                    OptimizerKind::kAdam};
constexpr std::array kBatchBalances = {BatchBalance::kEven, BatchBalance::kBySpeed};
constexpr std::array kContextParallelKinds = {plan::ContextParallelKind::kRing,
                                              plan::ContextParallelKind::kUlysses};
constexpr std::array kSyncModes = {SyncMode::kSynchronous, SyncMode::kAsynchronous};
constexpr std::array kPlacements = {ServerPlacement::kDedicated, ServerPlacement::kColocated};
constexpr std::array kPayloads = {PsPayload::kGradients, PsPayload::kParameters};
constexpr std::array kTransports = {AveragingTransport::kAllReduce,
                                    AveragingTransport::kParameterServer};
constexpr std::array kAlgorithms = {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree,
                                    CollectiveAlgorithm::kHierarchical};
// Simulation engines sim/ provides (sim/simulator.h).
const std::vector<std::string> kEngines = {"analytic", "simgrid"};

const std::vector<std::string> kTopLevelKeys = {
    "name", "seed", "engine", "cluster", "workload", "parallelism", "stragglers", "failures",
    "link_events",
    "simgrid", "outputs", "jobs"};
const std::vector<std::string> kWorkloadKeys = {
    "model", "batch_per_device", "precision", "iterations", "compute_efficiency",
    "memory_efficiency", "kernel_launch", "optimizer_bytes_per_param", "cost_model", "cost_table", "framework",
    "input"};
const std::vector<std::string> kClusterKeys = {
    "nodes", "devices_per_node", "device", "intra_node_link", "host_link", "network", "devices",
    "links", "device_profile", "node_groups", "gpu_speed_spread"};
const std::vector<std::string> kNetworkKeys = {
    "link", "topology", "nics_per_node", "nodes_per_leaf", "oversubscription", "spine_latency",
    "collective_latency", "protocols", "transport", "intra_node_transport"};
const std::vector<std::string> kParameterServerKeys = {
    "servers", "placement", "device", "replicas_to_aggregate", "payload", "local_aggregation",
    "variable_placement"};
const std::vector<std::string> kParallelismKeys = {
    "strategy", "sync", "algorithm", "bucket_size", "overlap", "averaging_period", "averaging",
    "averaging_groups", "post_local_steps", "outer_optimizer", "averaging_compression",
    "aggregation", "streaming",
    "parameter_server", "tensor_parallel", "pipeline_parallel", "micro_batch_size",
    "global_batch", "schedule", "virtual_stages", "stage_layers", "recompute", "optimizer",
    "zero_stage", "partition", "sequence_parallel", "tp_comm_overlap", "dp_overlap", "stage_replicas", "context_parallel",
    "context_parallel_kind", "expert_parallel", "balance_batch"};

// One of `all`, spelled as `name` spells it.
template <typename E, std::size_t N>
E ReadEnum(const YamlValue& v, const std::array<E, N>& all, const char* (*name)(E),
           std::string_view what) {
  std::vector<std::string> names;
  for (E e : all) names.emplace_back(name(e));
  return all[v.AsChoice(names, what)];
}

// A fraction of a peak rate, in (0, 1].
double ReadEfficiency(const YamlValue& v) {
  const double e = v.AsNumber();
  if (!(e > 0 && e <= 1)) {
    v.Fail("expected an efficiency in (0, 1], got " + v.Describe(),
           "an efficiency is a fraction of the peak rate: 0.8 means 80%");
  }
  // A rate 1000 times below peak is no longer a device; below that, op
  // times leave what the simulation's clock holds.
  if (e < 1e-3) {
    v.Fail("the efficiency " + v.Describe() + " is below 0.001, the least dtsim accepts",
           "an efficiency is a fraction of the peak rate: 0.8 means 80%");
  }
  return e;
}

// Checks that a name read from `v` is unique among those already defined.
void CheckUnique(const YamlValue& v, const std::string& name, std::vector<std::string>* seen,
                 std::string_view what) {
  for (const std::string& s : *seen) {
    if (EqualsIgnoreCase(s, name)) v.Fail(std::string(what) + " '" + name + "' is defined twice");
  }
  seen->push_back(name);
}

hw::DeviceSpec ReadDevice(const YamlValue& v) {
  const YamlMap m = v.AsMap({"name", "kind", "fp32", "tf32", "fp16", "bf16", "fp8", "memory",
                             "memory_bandwidth", "architecture", "sms", "l2", "source"});
  hw::DeviceSpec d;
  d.name = m.Require("name").AsString();
  if (auto x = m.Get("kind")) {
    const std::vector<std::string> kinds = {"gpu", "cpu"};
    d.kind = kinds[x->AsChoice(kinds, "device kind")];
  }
  // fp32 is the rate every other precision falls back to, so it is required.
  d.fp32_flop_per_s = m.Require("fp32").AsPositiveQuantity(Dimension::kFlopRate);
  if (auto x = m.Get("tf32")) d.tf32_flop_per_s = x->AsQuantity(Dimension::kFlopRate);
  if (auto x = m.Get("fp16")) d.fp16_flop_per_s = x->AsQuantity(Dimension::kFlopRate);
  if (auto x = m.Get("bf16")) d.bf16_flop_per_s = x->AsQuantity(Dimension::kFlopRate);
  if (auto x = m.Get("fp8")) d.fp8_flop_per_s = x->AsQuantity(Dimension::kFlopRate);
  d.memory_bytes = m.Require("memory").AsPositiveQuantity(Dimension::kBytes);
  d.memory_bw_bytes_per_s =
      m.Require("memory_bandwidth").AsPositiveQuantity(Dimension::kBandwidth);
  // The kernel cost model's inputs: all three or none.
  const auto arch = m.Get("architecture"), sms = m.Get("sms"), l2 = m.Get("l2");
  if (arch || sms || l2) {
    if (!arch || !sms || !l2)
      v.Fail("a device with any of architecture, sms and l2 needs all three",
             "they describe the GPU to the kernel cost model (docs/scenario.md, Cost models)");
    if (d.kind != "gpu") arch->Fail("architecture, sms and l2 describe a GPU, not a cpu");
    d.arch = hw::ParseGpuArch(arch->AsString(), arch->where());
    d.sm_count = sms->AsInt(1);
    d.l2_bytes = l2->AsPositiveQuantity(Dimension::kBytes);
  }
  d.source = "scenario " + v.where().file;
  if (auto x = m.Get("source")) d.source = x->AsString();
  // The reads above already ensure validity; hw has the last word.
  if (const std::string problem = d.Problem(); !problem.empty()) v.Fail(problem);
  return d;
}

hw::LinkSpec ReadLink(const YamlValue& v) {
  const YamlMap m = v.AsMap({"name", "bandwidth", "latency", "source"});
  hw::LinkSpec l;
  l.name = m.Require("name").AsString();
  l.bw_bytes_per_s = m.Require("bandwidth").AsPositiveQuantity(Dimension::kBandwidth);
  l.latency_s = m.Require("latency").AsQuantity(Dimension::kTime);
  l.source = "scenario " + v.where().file;
  if (auto x = m.Get("source")) l.source = x->AsString();
  if (const std::string problem = l.Problem(); !problem.empty()) v.Fail(problem);
  return l;
}

}  // namespace

std::string ResolveDevice(const YamlValue& v, const hw::HardwareCatalog& catalog) {
  const std::string name = v.AsString();
  if (const hw::DeviceSpec* d = catalog.FindDevice(name)) return d->name;
  std::vector<std::string> known;
  for (const hw::DeviceSpec& d : catalog.devices()) known.push_back(d.name);
  v.Fail("unknown device '" + name + "'",
         UnknownNameHint(name, known, "known devices (or define it under cluster.devices)"));
}

std::string ResolveLink(const YamlValue& v, const hw::HardwareCatalog& catalog) {
  const std::string name = v.AsString();
  if (const hw::LinkSpec* l = catalog.FindLink(name)) return l->name;
  std::vector<std::string> known;
  for (const hw::LinkSpec& l : catalog.links()) known.push_back(l.name);
  v.Fail("unknown link '" + name + "'",
         UnknownNameHint(name, known, "known links (or define it under cluster.links)"));
}

namespace {

NetworkConfig ReadNetwork(const YamlValue& v, const hw::HardwareCatalog& catalog) {
  const YamlMap m = v.AsMap(kNetworkKeys);
  NetworkConfig n;
  if (auto x = m.Get("topology")) n.topology = ReadEnum(*x, kTopologies, TopologyName, "topology");
  if (auto x = m.Get("nics_per_node")) n.nics_per_node = x->AsInt(1);
  if (auto x = m.Get("nodes_per_leaf")) n.nodes_per_leaf = x->AsInt(1);
  if (auto x = m.Get("oversubscription")) {
    n.oversubscription = x->AsNumber();
    if (!(n.oversubscription >= 1 && n.oversubscription <= 1000)) {
      x->Fail("expected an oversubscription in [1, 1000], got " + x->Describe(),
              "oversubscription is the leaf's down/up bandwidth ratio: 1 is non-blocking, "
              "4 means 4:1");
    }
  }
  if (auto x = m.Get("spine_latency")) n.spine_latency_s = x->AsQuantity(Dimension::kTime);
  if (auto x = m.Get("collective_latency")) {
    n.collective_latency_s = x->AsQuantity(Dimension::kTime);
  }
  if (auto x = m.Get("protocols"))
    n.protocols = x->AsChoice({"ideal", "nccl"}, "collective protocol model") == 0 ? "ideal" : "nccl";
  if (auto x = m.Get("transport")) n.transport = ReadTransport(*x);
  if (auto x = m.Get("intra_node_transport")) n.intra_node_transport = ReadTransport(*x);
  if (auto x = m.Get("link")) n.link = ResolveLink(*x, catalog);
  return n;
}

// `base` is the scenario file; a relative device profile is found next to it.
ClusterConfig ReadCluster(const YamlValue& v, const std::string& base) {
  const YamlMap m = v.AsMap(kClusterKeys);
  ClusterConfig c;
  if (auto x = m.Get("nodes")) c.nodes = x->AsInt(1);
  if (auto x = m.Get("devices_per_node")) c.devices_per_node = x->AsInt(1);
  // Rank ids are int; only a devices_per_node > 1 can overflow them.
  if (const std::int64_t devices = std::int64_t{c.nodes} * c.devices_per_node; devices > INT_MAX) {
    m.Require("devices_per_node")
        .Fail("nodes x devices_per_node = " + std::to_string(devices) +
              " devices is more than dtsim can number");
  }
  // Custom entries first: the names below may refer to them.
  std::vector<std::string> names;
  if (auto x = m.Get("devices")) {
    for (const YamlValue& item : x->AsSequence()) {
      c.custom_devices.push_back(ReadDevice(item));
      CheckUnique(item, c.custom_devices.back().name, &names, "device");
    }
  }
  names.clear();
  if (auto x = m.Get("links")) {
    for (const YamlValue& item : x->AsSequence()) {
      c.custom_links.push_back(ReadLink(item));
      CheckUnique(item, c.custom_links.back().name, &names, "link");
    }
  }
  hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  for (const hw::DeviceSpec& d : c.custom_devices) catalog.AddDevice(d);
  for (const hw::LinkSpec& l : c.custom_links) catalog.AddLink(l);

  if (auto x = m.Get("device")) c.device = ResolveDevice(*x, catalog);
  if (auto x = m.Get("intra_node_link")) c.intra_node_link = ResolveLink(*x, catalog);
  if (auto x = m.Get("host_link")) c.host_link = ResolveLink(*x, catalog);
  if (auto x = m.Get("network")) c.network = ReadNetwork(*x, catalog);
  if (auto x = m.Get("node_groups")) ReadNodeGroups(*x, m.Get("nodes"), catalog, &c);
  if (auto x = m.Get("gpu_speed_spread")) {
    c.gpu_speed_spread = x->AsNumber();
    if (!(*c.gpu_speed_spread >= 0 && *c.gpu_speed_spread <= 0.5))
      x->Fail("gpu_speed_spread must be in [0, 0.5]: the coefficient of variation of the GPUs' "
              "speed (0.015 is 1.5%)");
  }
  if (auto x = m.Get("device_profile")) {
    fs::path file = x->AsString();
    if (file.is_relative()) file = fs::path(base).parent_path() / file;
    c.device_profile = file.lexically_normal().string();
    std::error_code ec;
    if (!fs::is_regular_file(c.device_profile, ec)) {
      x->Fail("device profile '" + c.device_profile + "' not found",
              "a relative path is resolved against the scenario file's folder; write a "
              "profile with `dtsim calibrate --out <file>`");
    }
  }
  return c;
}

// `base` is the scenario file; a relative model file is found next to it.
ModelRef ReadModel(const YamlValue& v, const std::string& base) {
  ModelRef ref;
  if (v.IsScalar()) {
    const std::string name = v.AsString();
    std::vector<std::string> known;
    for (const models::ZooEntry& e : models::ZooEntries()) {
      if (EqualsIgnoreCase(e.name, name)) {
        ref.zoo_name = e.name;
        return ref;
      }
      known.push_back(e.name);
    }
    v.Fail("unknown model '" + name + "'",
           UnknownNameHint(name, known, "zoo models (or use {transformer: ...} or {file: ...})"));
  }
  if (!v.IsMap()) {
    v.Fail("expected a zoo model name or a mapping with 'transformer' or 'file', got " +
           v.Describe());
  }
  const YamlMap m = v.AsMap({"transformer", "file"});
  if (m.entries().size() != 1) {
    v.Fail("expected exactly one of 'transformer' or 'file'");
  }
  if (auto x = m.Get("transformer")) {
    ref.transformer = models::ReadTransformerConfig(*x);
    return ref;
  }
  const YamlValue x = m.Require("file");
  fs::path file = x.AsString();
  if (file.is_relative()) file = fs::path(base).parent_path() / file;
  ref.file = file.lexically_normal().string();
  std::error_code ec;
  if (!fs::is_regular_file(ref.file, ec)) {
    x.Fail("model file '" + ref.file + "' not found",
           "a relative path is resolved against the scenario file's folder");
  }
  return ref;
}

// SimGrid's precisions (its --help-cfg: precision/timing, default 1e-9 s;
// precision/work-amount, default 1e-5; surf/precision and maxmin/precision
// are their older names) bound how close two events may be. A value <= 0
// keeps its solver from ever settling (the run never ends); above 1 it
// merges events a second apart. Refused outside (0, 1].
void CheckSimgridItem(const YamlValue& item, const std::string& text) {
  const std::string name = text.substr(0, text.find(':'));
  if (name != "precision/timing" && name != "precision/work-amount" && name != "surf/precision" &&
      name != "maxmin/precision")
    return;
  const std::string value = text.substr(text.find(':') + 1);
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || !(v > 0 && v <= 1))
    item.Fail("SimGrid's " + name + " must be a number in (0, 1], got '" + value + "'",
              "SimGrid's defaults: precision/timing:1e-9, precision/work-amount:1e-5");
}

hw::Precision ReadPrecision(const YamlValue& v) {
  const std::string s = v.AsString();
  try {
    return hw::ParsePrecision(s);
  } catch (const UserError& e) {
    v.Fail(e.message(), e.hint());
  }
}

// fp8 runs linear layers on FP8 tensor cores, which the cluster's device
// must have: refused at workload.precision otherwise (`workload` is that
// section).
void CheckFp8Device(const Scenario& s, const YamlValue& workload) {
  const hw::HardwareCatalog catalog = ScenarioCatalog(s);
  const hw::DeviceSpec* device = catalog.FindDevice(s.cluster.device);
  if (device == nullptr || device->HasFp8()) return;  // an unknown device is refused at its key
  std::string with;
  for (const hw::DeviceSpec& d : catalog.devices())
    if (d.HasFp8()) with += (with.empty() ? "" : ", ") + d.name;
  workload.AsMap(kWorkloadKeys)
      .Require("precision")
      .Fail("precision fp8 needs FP8 tensor cores, which " + device->name + " does not have",
            "FP8 tensor cores come with Hopper, Ada and Blackwell GPUs (in the catalog: " + with +
                "; a device of cluster.devices gives its rate as fp8); use bf16 here");
}

// workload.cost_table: an op-cost table (read now) or a torch.profiler
// trace (imported against the model when simulated).
void ReadCostTable(const YamlValue& x, const std::string& base, WorkloadConfig* w) {
  if (w->cost_model != CostModelKind::kMeasured) {
    x.Fail("cost_table applies to cost_model: measured", "add cost_model: measured");
  }
  fs::path file = x.AsString();
  if (file.is_relative()) file = fs::path(base).parent_path() / file;
  w->cost_table = file.lexically_normal().string();
  w->cost_table_where = x.where();
  std::error_code ec;
  if (!fs::is_regular_file(w->cost_table, ec)) {
    x.Fail("op-cost table '" + w->cost_table + "' not found",
           "a relative path is resolved against the scenario file's folder; write a table "
           "with `dtsim profile SCENARIO --out FILE`");
  }
  if (IsTraceFile(w->cost_table)) return;
  auto table = std::make_shared<OpCostTable>(LoadOpCostTable(w->cost_table));
  if (table->precision != hw::PrecisionName(w->precision)) {
    x.Fail("the op-cost table was measured in " + table->precision + ", and the workload runs in " +
               hw::PrecisionName(w->precision),
           "profile the scenario at its precision, or set workload.precision: " + table->precision);
  }
  w->cost_table_data = std::move(table);
}

WorkloadConfig ReadWorkload(const YamlValue& v, const std::string& base) {
  const YamlMap m = v.AsMap(kWorkloadKeys);
  WorkloadConfig w;
  if (auto x = m.Get("model")) w.model = ReadModel(*x, base);
  if (auto x = m.Get("batch_per_device")) w.batch_per_device = x->AsInt(1);
  if (auto x = m.Get("precision")) w.precision = ReadPrecision(*x);
  if (auto x = m.Get("iterations")) w.iterations = x->AsInt(1);
  if (auto x = m.Get("compute_efficiency")) {
    std::vector<std::string> kinds;
    for (models::OpKind k : models::AllOpKinds()) kinds.emplace_back(models::OpKindName(k));
    const YamlMap efficiencies = x->AsMap(kinds);
    for (const YamlMap::Entry& e : efficiencies.entries()) {
      for (models::OpKind k : models::AllOpKinds()) {
        if (e.key == models::OpKindName(k)) w.compute_efficiency[k] = ReadEfficiency(e.value);
      }
    }
  }
  if (auto x = m.Get("memory_efficiency")) w.memory_efficiency = ReadEfficiency(*x);
  if (auto x = m.Get("kernel_launch")) w.kernel_launch_s = x->AsQuantity(Dimension::kTime);
  if (auto x = m.Get("cost_model")) {
    const std::string kind = x->AsString();
    if (kind == "kernels") {
      w.cost_model = CostModelKind::kKernels;
    } else if (kind == "roofline") {
      w.cost_model = CostModelKind::kRoofline;
    } else if (kind == "measured") {
      w.cost_model = CostModelKind::kMeasured;
    } else {
      x->Fail("unknown cost model '" + kind + "'",
              "use kernels (each op's GPU kernels from their shapes), roofline (one "
              "efficiency per op kind) or measured (an op-cost table, with cost_table)");
    }
    w.cost_model_where = x->where();
    if (w.cost_model == CostModelKind::kKernels) {
      for (const char* key : {"compute_efficiency", "memory_efficiency", "kernel_launch"}) {
        if (auto k = m.Get(key))
          k->Fail(std::string(key) + " applies to the roofline cost model, not to cost_model: "
                  "kernels",
                  "remove it, or set cost_model: roofline");
      }
    }
  }
  if (auto x = m.Get("cost_table")) ReadCostTable(*x, base, &w);
  if (w.cost_model == CostModelKind::kMeasured && w.cost_table.empty()) {
    m.Require("cost_model").Fail("cost_model: measured needs workload.cost_table: FILE",
                                 "write a table with `dtsim profile SCENARIO --out FILE`, or name "
                                 "a torch.profiler trace (docs/measured_costs.md)");
  }
  if (auto x = m.Get("framework")) w.framework = ReadFramework(*x, base);
  if (auto x = m.Get("input")) w.input = ReadInputPipeline(*x);
  if (auto x = m.Get("optimizer_bytes_per_param")) {
    w.optimizer_bytes_per_param = x->AsNumber();
    // Adam in mixed precision moves about 40 bytes a parameter.
    if (!(*w.optimizer_bytes_per_param >= 0 && *w.optimizer_bytes_per_param <= 1000)) {
      x->Fail("expected a number in [0, 1000], got " + x->Describe(),
              "bytes of memory traffic per parameter in the optimizer step: 20 for SGD with "
              "momentum in fp32");
    }
  }
  return w;
}

// even | round_robin | greedy | {partitioned: {max_shard_bytes: SIZE}}
plan::PsPlacementSpec ReadVariablePlacement(const YamlValue& v) {
  using plan::PsPlacementPolicy;
  const char* kPartitionedHint = "write {partitioned: {max_shard_bytes: 4096000B}}";
  if (v.IsMap()) {
    const YamlMap m = v.AsMap({"partitioned"});
    const YamlMap p = m.Require("partitioned", "{max_shard_bytes: SIZE}").AsMap({"max_shard_bytes"});
    return {PsPlacementPolicy::kPartitioned,
            p.Require("max_shard_bytes", "the largest piece, e.g. 4096000B")
                .AsPositiveQuantity(Dimension::kBytes)};
  }
  if (v.IsScalar() && EqualsIgnoreCase(v.AsString(), "partitioned"))
    v.Fail("partitioned needs the size of its pieces", kPartitionedHint);
  const std::array kPolicies = {PsPlacementPolicy::kEven, PsPlacementPolicy::kRoundRobin,
                                PsPlacementPolicy::kGreedy};
  return {ReadEnum(v, kPolicies, plan::PsPlacementPolicyName, "variable placement"), 0};
}

ParameterServerConfig ReadParameterServer(const YamlValue& v) {
  const YamlMap m = v.AsMap(kParameterServerKeys);
  ParameterServerConfig ps;
  if (auto x = m.Get("servers")) ps.servers = x->AsInt(1);
  if (auto x = m.Get("placement")) {
    ps.placement = ReadEnum(*x, kPlacements, ServerPlacementName, "server placement");
  }
  if (auto x = m.Get("device")) ps.device = x->AsString();  // checked against the catalog later
  if (auto x = m.Get("replicas_to_aggregate")) ps.replicas_to_aggregate = x->AsInt(0);
  if (auto x = m.Get("payload")) ps.payload = ReadEnum(*x, kPayloads, PsPayloadName, "payload");
  if (auto x = m.Get("variable_placement")) ps.variable_placement = ReadVariablePlacement(*x);
  if (auto x = m.Get("local_aggregation")) {
    const std::vector<std::string> kinds = {"none", "device", "host"};
    const std::size_t k = x->AsChoice(kinds, "local aggregation");
    ps.aggregate_in_machine = k >= 1;
    ps.aggregate_on_host = k == 2;
  }
  return ps;
}

ParallelismConfig ReadParallelism(const YamlValue& v) {
  const YamlMap m = v.AsMap(kParallelismKeys);
  ParallelismConfig p;
  if (auto x = m.Get("strategy")) p.strategy = ReadEnum(*x, kStrategies, StrategyName, "strategy");
  if (auto x = m.Get("sync")) p.sync = ReadEnum(*x, kSyncModes, SyncModeName, "sync mode");
  if (auto x = m.Get("algorithm")) {
    p.algorithm = ReadEnum(*x, kAlgorithms, CollectiveAlgorithmName, "all-reduce algorithm");
  }
  if (auto x = m.Get("bucket_size")) p.bucket_bytes = x->AsPositiveQuantity(Dimension::kBytes);
  if (auto x = m.Get("overlap")) p.overlap = x->AsBool();
  if (auto x = m.Get("averaging_period")) p.averaging_period = x->AsInt(1);
  if (auto x = m.Get("averaging_groups")) {
    for (const YamlValue& e : x->AsSequence()) {
      const YamlMap level = e.AsMap({"group_size", "period"});
      AveragingLevel l;
      l.group_size = level.Require("group_size").AsInt(1);
      l.period = level.Require("period").AsInt(1);
      const AveragingLevel* prev = p.averaging_groups.empty() ? nullptr : &p.averaging_groups.back();
      if (prev != nullptr && (l.period <= prev->period || l.period % prev->period != 0))
        e.Fail("each level's period must be a multiple of the previous level's (" +
                   std::to_string(prev->period) + ") and larger",
               "list the levels from the most frequent, as PyTorch's hierarchical averager "
               "takes them");
      if (prev != nullptr && (l.group_size <= prev->group_size || l.group_size % prev->group_size != 0))
        e.Fail("each level's group_size must be a multiple of the previous level's (" +
               std::to_string(prev->group_size) + ") and larger");
      p.averaging_groups.push_back(l);
    }
    if (p.averaging_groups.empty()) x->Fail("expected at least one {group_size, period} level");
  }
  if (auto x = m.Get("post_local_steps")) p.post_local_steps = x->AsInt(0);
  if (auto x = m.Get("aggregation")) {
    const std::vector<std::string> kinds = {"device", "host"};
    p.aggregate_on_host = x->AsChoice(kinds, "aggregation") == 1;
  }
  if (auto x = m.Get("outer_optimizer")) {
    const YamlMap o = x->AsMap({"kind", "lr", "momentum"});
    const std::vector<std::string> kinds = {"none", "nesterov"};
    p.outer_optimizer.enabled = o.Require("kind").AsChoice(kinds, "outer optimizer") == 1;
    if (auto y = o.Get("lr")) {
      p.outer_optimizer.lr = y->AsNumber();
      if (!(p.outer_optimizer.lr > 0)) y->Fail("expected an outer learning rate > 0");
    }
    if (auto y = o.Get("momentum")) {
      p.outer_optimizer.momentum = y->AsNumber();
      if (!(p.outer_optimizer.momentum >= 0 && p.outer_optimizer.momentum < 1))
        y->Fail("expected a momentum in [0, 1)");
    }
  }
  if (auto x = m.Get("streaming")) {
    const YamlMap st = x->AsMap({"fragments", "overlap_steps"});
    p.streaming_fragments = st.Require("fragments").AsInt(1);
    if (auto y = st.Get("overlap_steps")) p.streaming_overlap = y->AsInt(0);
  }
  if (auto x = m.Get("averaging_compression")) {
    constexpr std::array kinds = {AveragingCompression::kNone, AveragingCompression::kFp16,
                                  AveragingCompression::kInt8, AveragingCompression::kInt4};
    p.averaging_compression =
        ReadEnum(*x, kinds, AveragingCompressionName, "averaging compression");
  }
  if (auto x = m.Get("averaging")) {
    p.averaging = ReadEnum(*x, kTransports, AveragingTransportName, "averaging transport");
  }
  if (auto x = m.Get("parameter_server")) p.parameter_server = ReadParameterServer(*x);
  HybridConfig& h = p.hybrid;
  if (auto x = m.Get("tensor_parallel")) h.tensor_parallel = x->AsInt(1);
  if (auto x = m.Get("pipeline_parallel")) h.pipeline_parallel = x->AsInt(1);
  if (auto x = m.Get("micro_batch_size")) h.micro_batch_size = x->AsInt(1);
  if (auto x = m.Get("global_batch")) h.global_batch = x->AsInt(0);
  if (auto x = m.Get("schedule")) h.schedule = ReadEnum(*x, kSchedules, PipelineScheduleName, "schedule");
  if (auto x = m.Get("virtual_stages")) h.virtual_stages = x->AsInt(1);
  if (auto x = m.Get("stage_layers")) {
    for (const YamlValue& e : x->AsSequence()) h.stage_layers.push_back(e.AsInt(1));
  }
  if (auto x = m.Get("stage_replicas")) {
    if (x->IsSequence()) {
      for (const YamlValue& e : x->AsSequence()) h.stage_replicas.push_back(e.AsInt(1));
      if (h.stage_replicas.empty()) x->Fail("stage_replicas needs one count per stage, or auto");
    } else {
      x->AsChoice(std::vector<std::string>{"auto"}, "stage_replicas (a list of devices per stage, or auto)");
      h.plan_replicas = true;
    }
  }
  if (auto x = m.Get("partition")) {
    const std::vector<std::string> kinds = {"balanced", "even_layers"};
    h.even_layers = x->AsChoice(kinds, "partition") == 1;
  }
  if (auto x = m.Get("sequence_parallel")) h.sequence_parallel = x->AsBool();
  if (auto x = m.Get("tp_comm_overlap")) h.tp_comm_overlap = x->AsBool();
  if (auto x = m.Get("dp_overlap")) h.dp_overlap = x->AsBool();
  if (auto x = m.Get("context_parallel")) h.context_parallel = x->AsInt(1);
  if (auto x = m.Get("context_parallel_kind"))
    h.context_parallel_kind = ReadEnum(*x, kContextParallelKinds, plan::ContextParallelKindName,
                                       "context_parallel_kind");
  if (auto x = m.Get("expert_parallel")) h.expert_parallel = x->AsInt(1);
  if (auto x = m.Get("recompute")) {
    // true/false as before, or the granularity by name (Megatron-LM's
    // --recompute-granularity full|selective).
    const std::vector<std::string> kinds = {"false", "no", "off", "none", "true",
                                            "yes", "on",    "full", "selective"};
    const std::size_t k = x->AsChoice(kinds, "recompute (true/full, false/none or selective)");
    p.recompute = k >= 4 && k <= 7;
    p.recompute_selective = k == 8;
  }
  if (auto x = m.Get("optimizer")) p.optimizer = ReadEnum(*x, kOptimizers, OptimizerKindName, "optimizer");
  if (auto x = m.Get("balance_batch"))
    p.balance_batch = ReadEnum(*x, kBatchBalances, BatchBalanceName, "batch balance");
  if (auto x = m.Get("zero_stage")) {
    p.zero_stage = x->AsInt(0);
    if (p.zero_stage > 3) x->Fail("expected a ZeRO stage 0, 1, 2 or 3, got " + x->Describe());
  }
  if (p.sync == SyncMode::kAsynchronous && p.strategy != Strategy::kParameterServer) {
    m.Require("sync").Fail("asynchronous training needs strategy: parameter_server",
                           "all-reduce and local SGD are synchronous by construction");
  }
  return p;
}

OutputConfig ReadOutputs(const YamlValue& v) {
  const YamlMap m = v.AsMap({"dir", "json", "csv", "trace", "trace_max_ranks", "link_traffic"});
  OutputConfig o;
  if (auto x = m.Get("dir")) o.dir = x->AsString();
  if (auto x = m.Get("json")) o.json = x->AsBool();
  if (auto x = m.Get("csv")) o.csv = x->AsBool();
  if (auto x = m.Get("trace")) o.trace = x->AsBool();
  if (auto x = m.Get("trace_max_ranks")) o.trace_max_ranks = x->AsInt(1);
  if (auto x = m.Get("link_traffic")) o.link_traffic = x->AsInt(0);
  return o;
}

// Tensor x pipeline parallelism must divide the cluster, and the global batch
// the replicas' micro-batches: well-formed values whose plan cannot be built
// (InfeasiblePlan), reported at the offending key. The checks that need the
// model (heads, layers) are sim::MakeHybridSetup's.
// Hierarchical averaging levels against the cluster and the global period:
// each level's groups must tile the ranks, and its period divide
// averaging_period (the plan repeats every averaging_period steps).
void CheckAveragingLevels(const Scenario& s, const YamlValue& parallelism) {
  const ParallelismConfig& p = s.parallelism;
  if (p.strategy != Strategy::kLocalSgd) return;
  const YamlMap m = parallelism.AsMap(kParallelismKeys);
  if (p.averaging != AveragingTransport::kAllReduce) {
    if (p.outer_optimizer.enabled)
      m.Require("outer_optimizer")
          .Fail("an outer optimizer needs averaging: all_reduce",
                "DiLoCo's outer step runs on every replica after the all-reduce");
    if (p.averaging_compression != AveragingCompression::kNone)
      m.Require("averaging_compression").Fail("compressed averaging needs averaging: all_reduce");
  }
  if (p.streaming_fragments > 1) {
    const YamlValue at = m.Require("streaming");
    if (p.averaging != AveragingTransport::kAllReduce)
      at.Fail("streaming averages need averaging: all_reduce");
    if (!p.averaging_groups.empty())
      at.Fail("streaming fragments and averaging_groups do not combine (yet)");
    if (p.averaging_period % p.streaming_fragments != 0)
      at.FailInfeasible("fragments (" + std::to_string(p.streaming_fragments) +
                            ") must divide averaging_period (" +
                            std::to_string(p.averaging_period) + ")",
                        "fragment f averages at offset f x H / F within each period");
    if (p.streaming_overlap >= p.averaging_period)
      at.FailInfeasible("overlap_steps must be smaller than averaging_period",
                        "a fragment's average must be merged before it averages again");
  }
  if (p.averaging_groups.empty()) return;
  const YamlValue groups = m.Require("averaging_groups");
  if (p.averaging != AveragingTransport::kAllReduce)
    groups.Fail("hierarchical averaging needs averaging: all_reduce",
                "groups average among themselves; the parameter servers average everyone");
  const int n = s.cluster.num_devices();
  const std::vector<YamlValue> levels = groups.AsSequence();
  for (std::size_t i = 0; i < p.averaging_groups.size(); ++i) {
    const AveragingLevel& l = p.averaging_groups[i];
    if (l.group_size >= n || n % l.group_size != 0)
      levels[i].FailInfeasible("group_size " + std::to_string(l.group_size) +
                               " does not divide the " + std::to_string(n) +
                               " ranks into groups smaller than all of them");
    if (l.period >= p.averaging_period || p.averaging_period % l.period != 0)
      levels[i].FailInfeasible("period " + std::to_string(l.period) +
                                   " must divide averaging_period (" +
                                   std::to_string(p.averaging_period) + ") and be smaller",
                               "averaging_period is the period of the global average, the top "
                               "level");
  }
}

// `divides` false: only the well-formedness checks (UserError), not whether
// the split divides (dtsim search replaces the split).
void CheckHybridShape(const Scenario& s, const YamlValue& parallelism, bool divides) {
  if (s.parallelism.strategy != Strategy::kHybrid) return;
  const YamlMap m = parallelism.AsMap(kParallelismKeys);
  const HybridConfig& h = s.parallelism.hybrid;
  const std::int64_t n = s.cluster.num_devices();
  // Each factor is at most INT_MAX: their product fits in 64 bits.
  const std::int64_t tp =
      std::int64_t{h.tensor_parallel} * h.pipeline_parallel * h.context_parallel;
  const auto at = [&](const char* key) { return m.Get(key) ? *m.Get(key) : parallelism; };
  if (h.context_parallel > 1 && h.schedule == PipelineSchedule::kPipeDream)
    at("context_parallel").Fail("schedule pipedream is simulated without context parallelism",
                                "use schedule 1f1b, or context_parallel: 1");
  if (h.expert_parallel > 1 && (h.tensor_parallel > 1 || h.schedule == PipelineSchedule::kPipeDream ||
                                h.schedule == PipelineSchedule::kPipeDream2BW))
    at("expert_parallel")
        .Fail("expert_parallel > 1 is simulated with tensor_parallel 1 and the flushing schedules "
              "(gpipe, 1f1b, interleaved)",
              "expert groups are made of data-parallel replicas");
  if (h.expert_parallel > 1 && h.context_parallel > 1)
    at("expert_parallel")
        .Fail("expert_parallel and context_parallel together are not simulated yet",
              "use one of them");
  if (h.schedule == PipelineSchedule::kPipeDream) {
    if (h.tensor_parallel != 1)
      at("tensor_parallel").Fail("schedule pipedream splits no tensors: use tensor_parallel 1");
    if (h.global_batch > 0)
      at("global_batch").Fail("schedule pipedream updates after every minibatch of "
                              "micro_batch_size per replica; global_batch does not apply",
                              "leave global_batch out");
    if (s.parallelism.recompute || s.parallelism.recompute_selective)
      at("recompute").Fail("schedule pipedream is simulated without recomputation",
                           "use recompute: none");
    if (h.plan_replicas) {
      for (const char* key : {"pipeline_parallel", "stage_layers"})
        if (m.Get(key))
          m.Get(key)->Fail(std::string("with stage_replicas: auto PipeDream's planner chooses the "
                                       "stages and their layers; leave ") + key + " out");
      return;
    }
    if (!h.stage_replicas.empty()) {
      if (static_cast<int>(h.stage_replicas.size()) != h.pipeline_parallel)
        at("stage_replicas").Fail("stage_replicas has " + std::to_string(h.stage_replicas.size()) +
                                  " entries and pipeline_parallel is " +
                                  std::to_string(h.pipeline_parallel),
                                  "one count of devices per stage");
      std::int64_t sum = 0;
      for (int r : h.stage_replicas) sum += r;
      if (sum != n && divides)
        at("stage_replicas").FailInfeasible("stage_replicas add up to " + std::to_string(sum) +
                                                " devices, the cluster has " + std::to_string(n),
                                            "every device runs one replica of one stage");
      return;
    }
  }
  if (h.schedule == PipelineSchedule::kInterleaved && h.virtual_stages < 2) {
    at("virtual_stages").Fail("the interleaved schedule needs virtual_stages >= 2");
  }
  if (!divides) return;
  if (n % tp != 0) {
    at(h.context_parallel > 1    ? "context_parallel"
       : h.pipeline_parallel > 1 ? "pipeline_parallel"
                                 : "tensor_parallel")
        .FailInfeasible(std::string(h.context_parallel > 1
                                        ? "tensor_parallel x pipeline_parallel x context_parallel = "
                                        : "tensor_parallel x pipeline_parallel = ") +
                            std::to_string(tp) + " does not divide the cluster's " +
                            std::to_string(n) + " devices",
                        h.context_parallel > 1
                            ? "data parallelism is devices / (tensor_parallel x "
                              "pipeline_parallel x context_parallel)"
                            : "data parallelism is devices / (tensor_parallel x pipeline_parallel)");
  }
  if ((n / tp) % h.expert_parallel != 0) {
    at("expert_parallel")
        .FailInfeasible("expert_parallel " + std::to_string(h.expert_parallel) +
                            " does not divide data parallelism " + std::to_string(n / tp),
                        "an expert group is made of data-parallel replicas");
  }
  const std::int64_t per_step = n / tp * h.micro_batch_size;
  if (h.global_batch > 0 && h.global_batch % per_step != 0) {
    at("global_batch")
        .FailInfeasible("global_batch " + std::to_string(h.global_batch) +
                            " is not a multiple of data parallelism x micro_batch_size = " +
                            std::to_string(per_step),
                        "each replica runs a whole number of micro-batches");
  }
}

// A scenario's name names its output folder (results/<name>) and its rows:
// a name, never a path. Returns "" when `name` is one, else what is wrong.
std::string NameProblem(const std::string& name) {
  constexpr std::size_t kMaxNameBytes = 128;
  if (name.empty()) return "a scenario name cannot be empty";
  if (name.size() > kMaxNameBytes) {
    return "a scenario name is at most " + std::to_string(kMaxNameBytes) + " bytes, got " +
           std::to_string(name.size());
  }
  if (name == "." || name == "..") return "'" + name + "' is a folder, not a scenario name";
  for (const char c : name) {
    if (c == '/' || c == '\\') {
      return "a scenario name cannot contain '" + std::string(1, c) +
             "': it names a folder under results/, not a path";
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return "a scenario name cannot contain control characters";
    }
  }
  if (name.front() == '-') return "a scenario name cannot start with '-' (it reads as an option)";
  if (name.front() == '.') return "a scenario name cannot start with '.' (a hidden folder)";
  if (name.front() == ' ' || name.back() == ' ') {
    return "a scenario name cannot start or end with a space";
  }
  return "";
}

// The entries of `root`'s top level and of its workload and parallelism
// sections. REQUIRES: those sections were read (they are mappings).
std::vector<YamlMap::Entry> MainEntries(const YamlMap& root) {
  // The mappings whose keys are checked, by path, with their allowed keys.
  const std::vector<std::pair<std::string, const std::vector<std::string>*>> sections = {
      {"cluster", &kClusterKeys},
      {"cluster.network", &kNetworkKeys},
      {"workload", &kWorkloadKeys},
      {"workload.framework", &FrameworkProfileKeys()},
      {"parallelism", &kParallelismKeys},
      {"parallelism.parameter_server", &kParameterServerKeys}};
  std::vector<YamlMap::Entry> entries;
  std::vector<YamlMap::Entry> pending(root.entries().begin(), root.entries().end());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const YamlMap::Entry e = pending[i];
    entries.push_back(e);
    if (!e.value.IsMap()) continue;
    const std::string path = e.value.path();
    for (const auto& [section, keys] : sections) {
      if (section != path) continue;
      const YamlMap inner = e.value.AsMap(*keys);
      pending.insert(pending.end(), inner.entries().begin(), inner.entries().end());
    }
  }
  return entries;
}

// Keys of `root` (top level, cluster and its network, workload and its
// framework, parallelism and its parameter servers) that the scenario's
// strategy or engine does not use: an error at the first one, or, with
// `unused`, all of them appended there.
void CheckKeysUsed(const Scenario& s, const YamlMap& root, std::vector<UnusedKey>* unused) {
  for (const YamlMap::Entry& e : MainEntries(root)) {
    const std::string reason = UnusedKeyReason(s, e.value.path());
    if (reason.empty()) continue;
    if (unused == nullptr) {
      throw UserError(e.key_value.where(), reason,
                      "remove the key, or choose a strategy that uses it (docs/scenario.md)");
    }
    unused->push_back(UnusedKey{e.value.path(), e.key_value.where(), reason});
  }
}

// "scenario files in 'dir': a.yaml, b.yaml": the hint for a missing file.
std::string NeighboursHint(const fs::path& path) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".yaml" || e.path().extension() == ".yml") {
      names.push_back(e.path().filename().string());
    }
  }
  if (names.empty()) return "paths are relative to the current directory";
  std::sort(names.begin(), names.end());
  std::string s = "scenario files in '" + dir.string() + "': ";
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

}  // namespace

Scenario ParseScenario(const std::string& yaml_text, const std::string& filename,
                       bool check_plan_shape) {
  return ParseScenarioNode(ParseYamlDocument(yaml_text, filename), filename, nullptr,
                           check_plan_shape);
}

Scenario ParseScenarioNode(const YAML::Node& root_node, const std::string& filename,
                           std::vector<UnusedKey>* unused, bool check_plan_shape) {
  const YamlValue root = YamlValue::Root(root_node, filename);
  if (root.IsNull()) root.Fail("the scenario is empty", "see docs/scenario.md for the format");
  const YamlMap m = root.AsMap(kTopLevelKeys);

  Scenario s;
  s.source_path = filename;
  if (auto x = m.Get("name")) {
    s.name = x->AsString();
    if (const std::string problem = NameProblem(s.name); !problem.empty()) {
      x->Fail(problem, "write a plain name such as gpt3-13b_64gpus");
    }
  } else if (const std::string stem = fs::path(filename).stem().string(); !stem.empty()) {
    // The file's own name, unless it cannot name a folder ("...yaml" has
    // the stem "..").
    if (const std::string problem = NameProblem(stem); !problem.empty()) {
      root.Fail("the file name '" + stem + "' cannot serve as the scenario's name: " + problem,
                "add a 'name:' key");
    }
    s.name = stem;
  }
  if (auto x = m.Get("seed")) {
    s.seed = static_cast<std::uint64_t>(x->AsInt64(0, std::numeric_limits<std::int64_t>::max()));
  }
  if (auto x = m.Get("engine")) s.engine = kEngines[x->AsChoice(kEngines, "engine")];
  // Absent sections keep scenario.h's defaults (config_test checks that the
  // default device and links are in the built-in catalog).
  if (auto x = m.Get("cluster")) s.cluster = ReadCluster(*x, filename);
  if (auto x = m.Get("workload")) {
    s.workload = ReadWorkload(*x, filename);
    if (s.workload.precision == hw::Precision::kFp8) CheckFp8Device(s, *x);
  }
  // After the workload: its own efficiencies and launch overhead win.
  if (!s.cluster.device_profile.empty()) {
    ApplyDeviceProfile(LoadDeviceProfile(s.cluster.device_profile), s.cluster.device_profile, &s);
  }
  if (auto x = m.Get("parallelism")) {
    s.parallelism = ReadParallelism(*x);
    CheckHybridShape(s, *x, check_plan_shape);
    CheckAveragingLevels(s, *x);
    const ParameterServerConfig& ps = s.parallelism.parameter_server;
    if (ps.aggregate_in_machine) {
      const YamlValue at = x->AsMap(kParallelismKeys)
                               .Require("parameter_server")
                               .AsMap(kParameterServerKeys)
                               .Require("local_aggregation");
      if (s.parallelism.sync == SyncMode::kAsynchronous)
        at.Fail("local_aggregation is synchronous (a machine sums its devices' "
                "gradients before pushing)",
                "use sync: synchronous, or local_aggregation: none");
      if (ps.replicas_to_aggregate != 0)
        at.Fail("local_aggregation aggregates every worker",
                "set replicas_to_aggregate: 0, or local_aggregation: none");
    }
    if (ps.replicas_to_aggregate > s.cluster.num_devices()) {
      x->AsMap(kParallelismKeys)
          .Require("parameter_server")
          .AsMap(kParameterServerKeys)
          .Require("replicas_to_aggregate")
          .Fail("expected at most the cluster's " + std::to_string(s.cluster.num_devices()) +
                    " workers, got " + std::to_string(ps.replicas_to_aggregate),
                "k of n: at most the number of workers; 0 means all");
    }
  }
  if (auto x = m.Get("stragglers")) {
    s.stragglers = ReadStragglers(*x);
    if (const std::string problem = StragglerRanksProblem(s.stragglers, s.cluster.num_devices());
        !problem.empty())
      x->Fail(problem, "ranks are worker indices, 0-based and node-major");
  }
  if (auto x = m.Get("link_events")) s.link_events = ReadLinkEvents(*x, s.cluster);
  if (auto x = m.Get("failures")) {
    s.failures = ReadFailures(*x);
    // sim/failures.cc simulates every failure of the horizon: a failure
    // every system MTBF = mtbf / devices (or nodes).
    const FailureConfig& f = s.failures;
    const double units = f.scope == FailureScope::kDevice ? s.cluster.num_devices()
                                                          : s.cluster.nodes;
    const double events = f.horizon_s / f.checkpoint_interval_s + f.horizon_s * units / f.mtbf_s;
    if (events > 1e8) {
      x->AsMap({"mtbf", "scope", "checkpoint_interval", "checkpoint_cost", "restart_cost",
                "horizon"})
          .Require("mtbf")
          .Fail("an MTBF of " + FormatSeconds(f.mtbf_s) + " per " + FailureScopeName(f.scope) +
                    " over " + FormatCount(units) + " " + FailureScopeName(f.scope) +
                    "s and a horizon of " + FormatSeconds(f.horizon_s) + " is about " +
                    FormatCount(events) + " failures and checkpoints, more than the 10^8 dtsim "
                    "simulates",
                "shorten failures.horizon or lengthen failures.mtbf");
    }
  }
  if (auto x = m.Get("simgrid")) {
    const YamlMap sg = x->AsMap({"config", "max_step_repeats", "log"});
    if (auto c = sg.Get("config")) {
      for (const YamlValue& item : c->AsSequence()) {
        const std::string text = item.AsString();
        if (text.find(':') == std::string::npos)
          item.Fail("expected a SimGrid configuration item 'name:value', got '" + text + "'",
                    "e.g. network/model:LV08 (see SimGrid's --help-cfg)");
        CheckSimgridItem(item, text);
        s.simgrid.config.push_back(text);
      }
    }
    if (auto r = sg.Get("max_step_repeats")) s.simgrid.max_step_repeats = r->AsInt(1);
    if (auto l = sg.Get("log")) {
      const std::vector<std::string> levels = {"trace", "debug", "verbose", "info",
                                               "warning", "error", "critical"};
      s.simgrid.log_threshold = levels[l->AsChoice(levels, "log threshold")];
    }
  }
  if (auto x = m.Get("outputs")) s.outputs = ReadOutputs(*x);
  if (s.outputs.dir.empty()) s.outputs.dir = "results/" + s.name;
  if (auto x = m.Get("jobs")) s.jobs = ReadJobs(*x, m, s, check_plan_shape);
  for (const YamlMap::Entry& e : MainEntries(m)) s.key_locations[e.value.path()] = e.value.where();
  CheckKeysUsed(s, m, unused);
  return s;
}

Scenario LoadScenario(const std::string& path, bool check_plan_shape) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    const std::string why = fs::exists(path, ec) ? "not a regular file" : "no such file";
    throw UserError(SourceLocation{path}, "cannot read scenario file '" + path + "': " + why,
                    NeighboursHint(path));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw UserError(SourceLocation{path}, "cannot read scenario file '" + path + "'");
  return ParseScenario(text.str(), path, check_plan_shape);
}

}  // namespace dtsim::config
