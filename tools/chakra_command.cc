// `dtsim chakra PREFIX --cluster SCENARIO`: an MLCommons Chakra trace (one
// file per rank, PREFIX.<rank>.et) simulated on a scenario's cluster.
#include <cstdio>
#include <CLI/CLI.hpp>
#include <memory>
#include "tools/cli.h"
#include <filesystem>
#include <fstream>
#include <iostream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/input_file.h"
#include "config/scenario.h"
#include "hw/catalog.h"
#include "plan/chakra_files.h"
#include "plan/chakra_import.h"
#include "sim/cost/cost_model.h"
#include "sim/trace_simulation.h"
#include "tools/commands.h"
#include "tools/output_set.h"

namespace dtsim::tools {

namespace {

// The import's options: the scenario's node size and algorithm, the
// command's clean-up, and a roofline rate for nodes with FLOPs but no
// duration.
plan::ChakraImportOptions ImportOptions(const ChakraOptions& o, const config::Scenario& s,
                                        const hw::DeviceSpec& device) {
  plan::ChakraImportOptions options;
  options.devices_per_node = s.cluster.devices_per_node;
  // Nodes with FLOPs but no duration: a GEMM's roofline, the device's peak
  // at the scenario's precision x the dense-GEMM efficiency
  // (sim/cost/cost_model.h DefaultComputeEfficiency).
  sim::CostModelOptions roofline;
  roofline.kernel_model = false;
  options.compute_flops_per_s =
      sim::CostModel(device, s.workload.precision, roofline).peak_flop_per_s() *
      sim::DefaultComputeEfficiency(models::OpKind::kDense);
  options.algorithm = static_cast<plan::CollectiveAlgorithm>(s.parallelism.algorithm);
  options.samples_per_iteration = o.batch;
  if (!o.comm_groups.empty()) {
    const std::string text = ReadRegularFile(o.comm_groups, "communicator-group file");
    try {
      options.process_groups = plan::ParseCommGroupFile(text);
    } catch (const std::invalid_argument& e) {
      throw UserError(SourceLocation{o.comm_groups, 0, 0}, e.what(),
                      "a communicator-group file maps each process group's name to its ranks: "
                      "{\"1\": [0, 1], \"2\": [2, 3]}");
    }
    options.process_groups_file = o.comm_groups;
  }
  options.cleanup.drop_dangling_deps = o.drop_dangling_deps;
  options.cleanup.ignore_ctrl_deps = o.ignore_ctrl_deps;
  options.cleanup.host_ops = o.host_ops == "drop"        ? plan::ChakraHostOps::kDrop
                             : o.host_ops == "serialize" ? plan::ChakraHostOps::kSerialize
                                                         : plan::ChakraHostOps::kRefuse;
  return options;
}

// summary.json's "per_rank": each rank's compute, exposed communication
// and idle time.
nlohmann::ordered_json PerRankJson(const sim::RunMetrics& m) {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < m.per_rank.size(); ++i) {
    ranks.push_back({{"rank", m.ranks[i]},
                     {"compute_s", m.per_rank[i].compute_s},
                     {"exposed_comm_s", m.per_rank[i].exposed_comm_s},
                     {"idle_s", m.per_rank[i].idle_s}});
  }
  return ranks;
}

}  // namespace

void ChakraCommand(const ChakraOptions& o, std::ostream& out) {
  config::Scenario s = config::LoadScenario(o.cluster_path);
  if (!o.engine.empty()) s.engine = o.engine;
  const hw::HardwareCatalog catalog = config::ScenarioCatalog(s);
  const hw::DeviceSpec* device = catalog.FindDevice(s.cluster.device);
  if (device == nullptr) throw UserError("unknown device '" + s.cluster.device + "'");

  const plan::ChakraImportOptions options = ImportOptions(o, s, *device);
  const std::vector<plan::ChakraTrace> traces =
      plan::ReadChakraTraces(o.prefix, s.cluster.num_devices());
  plan::ChakraImportReport report;
  const sim::TracePrediction p =
      sim::SimulateTracePlan(s, plan::ImportChakra(traces, options, &report));
  std::vector<std::string> warnings;
  if (report.compute_nodes > 0 && report.zero_duration_compute_nodes == report.compute_nodes) {
    warnings.push_back("every compute node of the trace (" + std::to_string(report.compute_nodes) +
                       ") has duration 0: the step time is communication only");
  }

  std::size_t compute = 0, sends = 0;
  for (const plan::Task& t : p.plan.tasks()) {
    compute += t.stream == plan::StreamKind::kCompute;
    sends += t.kind == plan::TaskKind::kSend;
  }
  double collective_bytes = 0;
  for (const plan::Collective& c : p.plan.collectives()) collective_bytes += c.bytes;
  const sim::RunMetrics& m = p.metrics;
  const double step = m.step_time_s;

  nlohmann::ordered_json j;
  j["traces"] = o.prefix;
  j["ranks"] = p.plan.num_ranks();
  j["cluster"] = o.cluster_path;
  j["device"] = device->name;
  j["engine"] = p.engine_name;
  j["compute_tasks"] = compute;
  j["collectives"] = p.plan.collectives().size();
  j["collective_bytes"] = collective_bytes;
  j["transfers"] = sends;
  j["step_time_s"] = step;
  if (o.batch > 0) j["throughput_samples_per_s"] = m.throughput_samples_per_s;
  j["compute_s"] = m.breakdown.compute_s;
  j["exposed_comm_s"] = m.breakdown.exposed_comm_s;
  j["idle_s"] = m.breakdown.idle_s;
  j["cleanup"] = {{"dangling_deps_dropped", report.dangling_deps_dropped},
                  {"ctrl_deps_ignored", report.ctrl_deps_ignored},
                  {"host_ops_dropped", report.host_ops_dropped},
                  {"host_ops_serialized", report.host_ops_serialized}};
  j["zero_duration_compute_nodes"] = report.zero_duration_compute_nodes;
  j["warnings"] = warnings;
  j["per_rank"] = PerRankJson(m);

  const std::filesystem::path dir =
      o.out_dir.empty()
          ? std::filesystem::path("results") /
                ("chakra-" + std::filesystem::path(o.prefix).filename().string())
          : std::filesystem::path(o.out_dir);
  OutputSet files(dir);
  WriteOutput(files, "summary.json", j.dump(2) + "\n");
  const auto written = files.Commit();

  char line[400];
  std::snprintf(line, sizeof line,
                "%s: %d ranks, %zu compute nodes, %zu collectives (%.1f MB in all), %zu "
                "transfers\non %s: %d x %s, engine %s\n",
                o.prefix.c_str(), p.plan.num_ranks(), compute, p.plan.collectives().size(),
                collective_bytes / 1e6, sends, s.name.c_str(), s.cluster.num_devices(),
                device->name.c_str(), p.engine_name.c_str());
  out << line;
  if (o.drop_dangling_deps || o.ignore_ctrl_deps || o.host_ops != "refuse") {
    std::snprintf(line, sizeof line,
                  "clean-up: %lld dependencies on missing nodes dropped, %lld ctrl_deps ignored, "
                  "%lld host operators dropped, %lld serialized\n",
                  static_cast<long long>(report.dangling_deps_dropped),
                  static_cast<long long>(report.ctrl_deps_ignored),
                  static_cast<long long>(report.host_ops_dropped),
                  static_cast<long long>(report.host_ops_serialized));
    out << line;
  }
  for (const std::string& w : warnings) std::cerr << "warning: " << w << "\n";
  std::snprintf(line, sizeof line,
                "step time %.3f ms: compute %.3f ms, exposed communication %.3f ms, idle %.3f "
                "ms (mean over ranks)\n",
                step * 1e3, m.breakdown.compute_s * 1e3, m.breakdown.exposed_comm_s * 1e3,
                m.breakdown.idle_s * 1e3);
  out << line;
  if (o.batch > 0) {
    std::snprintf(line, sizeof line, "throughput %.1f samples/s at %lld samples per step\n",
                  m.throughput_samples_per_s, static_cast<long long>(o.batch));
    out << line;
  }
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

Command AddChakraCommand(CLI::App& app) {
  auto o = std::make_shared<ChakraOptions>();
  CLI::App* cmd = app.add_subcommand(
      "chakra",
      "Simulate an MLCommons Chakra execution trace (one file per rank, as ASTRA-sim "
      "reads them) on a scenario's cluster: prints the step time and its breakdown, "
      "writes summary.json (docs/chakra.md)");
  cmd->add_option("prefix", o->prefix,
                  "The traces' common prefix: PREFIX.0.et, PREFIX.1.et, ... one per rank")
      ->required();
  cmd->add_option("--cluster", o->cluster_path,
                  "Scenario YAML file whose cluster, network and engine are used (its "
                  "workload is not)")
      ->required();
  cmd->add_option("--engine", o->engine, "analytic or simgrid (default: the scenario's)")
      ->check(CLI::IsMember({"analytic", "simgrid"}));
  cmd->add_option("-o,--out", o->out_dir,
                  "Output folder (default results/chakra-<prefix's file name>)");
  cmd->add_option("--batch", o->batch, "Samples per step of the trace, for throughput")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--comm-groups", o->comm_groups,
                  "ASTRA-sim communicator-group file ({\"1\": [0, 1], ...}): the ranks of "
                  "each pg_name the traces' metadata does not list");
  cmd->add_flag("--drop-dangling-deps", o->drop_dangling_deps,
                "Drop dependencies on nodes a trace does not hold (default: refused)");
  cmd->add_flag("--ignore-ctrl-deps", o->ignore_ctrl_deps,
                "Order nodes by data_deps only (in PyTorch-converted traces ctrl_deps name "
                "a node's caller)");
  cmd->add_option("--host-ops", o->host_ops,
                  "Host operators (is_cpu_op): refuse (when they have a duration), drop "
                  "(no time) or serialize (on the GPU's compute stream)")
      ->check(CLI::IsMember({"refuse", "drop", "serialize"}))
      ->capture_default_str();
  return {cmd, [o](CommandEnv& env) { ChakraCommand(*o, env.out); }};
}

}  // namespace dtsim::tools
