#include "tools/commands.h"
#include <CLI/CLI.hpp>
#include "tools/cli.h"


#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <unistd.h>

#include "common/error.h"
#include "common/units.h"
#include "config/scenario.h"
#include "exec/local_devices.h"
#include "hw/catalog.h"
#include "models/zoo.h"
#include "plan/compute_tasks.h"
#include "plan/plan_export.h"
#include "report/tensorboard.h"
#include "sim/cost/cost_model.h"
#include "sim/contention_note.h"
#include "sim/cost/kernel_evidence.h"
#include "sim/hybrid_setup.h"
#include "sim/cost/op_kernels.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "tools/output_set.h"

namespace dtsim::tools {
namespace fs = std::filesystem;

void RunCommand(const RunOptions& o, std::ostream& out, std::ostream& err) {
  config::Scenario scenario = config::LoadScenario(o.scenario_path);
  if (!o.engine.empty()) scenario.engine = o.engine;
  scenario.refuse_tight_memory = o.memory_check == "refuse";
  const sim::Prediction p = sim::Simulate(scenario);
  for (const std::string& w : p.graph.warnings()) err << "warning: " << w << "\n";
  if (!p.memory_warning.empty()) err << "warning: " << p.memory_warning << "\n";
  if (const std::string note = sim::ContentionNote(scenario, p.plan); !note.empty())
    err << "note: " << note << "\n";
  auto report = sim::ReportJson(scenario, p);
  const bool json_to_stdout = o.json_path == "-";
  std::ostream& log = json_to_stdout ? err : out;
  if (!o.quiet) log << sim::StepLog(scenario, p);
  const bool fits = p.does_not_fit.empty();
  if (o.repeat > 1 && fits) {
    std::vector<double> throughput{p.metrics.throughput_samples_per_s};
    std::vector<double> step{p.metrics.step_time_s};
    const sim::SimulateOptions shared{.graph = &p.graph};
    const bool progress = !o.quiet && ::isatty(STDERR_FILENO);
    for (int i = 1; i < o.repeat; ++i) {
      config::Scenario next = scenario;
      next.seed = scenario.seed + static_cast<std::uint64_t>(i);
      const sim::Prediction q = sim::Simulate(next, shared);
      throughput.push_back(q.metrics.throughput_samples_per_s);
      step.push_back(q.metrics.step_time_s);
      if (progress) err << "\rrepeat " << i + 1 << "/" << o.repeat << std::flush;
    }
    if (progress) err << "\n";
    report["repeats"] = sim::RepeatsJson(scenario.seed, throughput, step);
    if (!o.quiet) log << sim::RepeatsLog(throughput, step);
  }

  OutputSet files(o.out_dir.empty() ? fs::path(scenario.outputs.dir) : fs::path(o.out_dir));
  if (scenario.outputs.json) {
    auto f = files.Open("report.json");
    f << report.dump(2) << "\n";
    CloseOutput(f, "report.json");
  }
  if (scenario.outputs.csv) {
    auto f = files.Open("summary.csv");
    f << sim::CsvHeader() << "\n" << sim::CsvRow(scenario, p) << "\n";
    CloseOutput(f, "summary.csv");
  }
  // No timeline for a plan that cannot run: it would read as a prediction.
  if (scenario.outputs.trace && !o.no_trace && fits) {
    auto f = files.Open("trace.json");
    sim::WriteChromeTrace(f, p, scenario.outputs.trace_max_ranks, scenario.outputs.link_traffic);
    CloseOutput(f, "trace.json");
  }
  if (fits) {
    // TensorBoard: the predicted step log, per iteration, wall times in
    // simulated seconds (report/tensorboard.h).
    report::EventFile events;
    const std::vector<double>& ends = p.metrics.iteration_end_s;
    for (std::size_t i = 0; i < ends.size(); ++i) {
      const double step_s = ends[i] - (i > 0 ? ends[i - 1] : 0.0);
      if (step_s <= 0) continue;
      const auto step = static_cast<std::int64_t>(i) + 1;
      events.AddScalar("predicted/sec_per_batch", step, ends[i], static_cast<float>(step_s));
      events.AddScalar("predicted/examples_per_sec", step, ends[i],
                       static_cast<float>(static_cast<double>(p.plan.samples_per_iteration) / step_s));
    }
    WriteOutput(files, report::kEventFileName, events.bytes());
  }
  const auto written = files.Commit();
  if (!o.json_path.empty() && !json_to_stdout) {
    WriteFileAtomic(o.json_path, [&report](std::ostream& f) { f << report.dump(2) << "\n"; });
  }
  if (json_to_stdout) out << report.dump(2) << "\n";
  if (!o.quiet) {
    for (const auto& path : written) log << "wrote " << path.string() << "\n";
    if (!o.json_path.empty() && !json_to_stdout) log << "wrote " << o.json_path << "\n";
  }
  // Valid input, infeasible plan: the reports say so (throughput null) and
  // the exit status is 3.
  if (!fits)
    throw InfeasiblePlan(SourceLocation{o.scenario_path}, p.does_not_fit,
                         "reduce the batch per device or micro-batch, or use activation "
                         "recomputation, ZeRO, tensor or pipeline parallelism, or devices with "
                         "more memory");
}

void PlanCommand(const PlanOptions& o, std::ostream& out) {
  if (!o.dot_path.empty() && !o.json_path.empty() &&
      fs::absolute(o.dot_path).lexically_normal() == fs::absolute(o.json_path).lexically_normal())
    throw UserError("--json and --dot name the same file '" + o.json_path + "'",
                    "give each its own file");
  const config::Scenario scenario = config::LoadScenario(o.scenario_path);
  const models::ModelGraph graph = config::BuildWorkloadModel(scenario);
  const bool pipelined = config::IsPipelined(scenario);
  // Identical workers are listed once per stage (pipelines) or up to
  // --max-ranks times; the rest mirror them.
  const int materialize = pipelined ? 1 : sim::WorkersAreAlike(scenario) ? o.max_ranks : 0;
  const plan::Plan plan = sim::MakePlan(scenario, graph, materialize);
  if (o.json_path == "-") {
    plan::WritePlanJson(out, plan, graph);
    return;
  }
  out << plan::FormatPlacement(plan, graph, o.max_ranks);
  if (pipelined) {
    // The split into pipeline chunks, and the time of each for one micro-batch.
    const auto catalog = config::ScenarioCatalog(scenario);
    const sim::CostModel cost(*catalog.FindDevice(scenario.cluster.device),
                              scenario.workload.precision, {});
    const sim::HybridSetup setup = sim::MakeHybridSetup(scenario, graph, cost);
    const auto& h = scenario.parallelism.hybrid;
    const std::vector<int>& replicas = setup.options.stage_replicas;
    if (!replicas.empty()) {
      out << "pipeline (PipeDream): " << setup.options.pipeline << " stages on";
      for (std::size_t st = 0; st < replicas.size(); ++st)
        out << (st ? ", " : " ") << replicas[st];
      out << " device(s), " << setup.options.micro_batches << " minibatch(es) of "
          << setup.options.micro_batch << " per iteration; " << setup.partition_note << "\n";
    } else {
      out << "pipeline: " << setup.options.pipeline << " stages x " << setup.options.virtual_stages
          << " chunks, " << setup.options.micro_batches << " micro-batches of "
          << setup.options.micro_batch << "; split "
          << (!h.stage_layers.empty() ? "given (stage_layers)"
              : h.even_layers         ? "even_layers (Megatron: same number of layers per chunk)"
                                      : setup.partition_note +
                                            " (minimizes the slowest chunk's time)")
          << "\n";
    }
    for (std::size_t c = 0; c < setup.options.chunks.size(); ++c) {
      const auto& [b, e] = setup.options.chunks[c];
      const double seconds =
          sim::TrainingSeconds(cost, setup.shard, b, e, setup.options.micro_batch);
      out << "  chunk " << c << " on stage " << c % static_cast<std::size_t>(setup.options.pipeline)
          << ": " << graph.op(b).name << " .. " << graph.op(e - 1).name << " (" << (e - b)
          << " ops), forward + backward " << FormatSeconds(seconds) << " per micro-batch\n";
    }
  }
  // The files are all written or none: each staged in its folder's set, and
  // the sets committed once every file is staged.
  std::map<fs::path, std::unique_ptr<OutputSet>> sets;
  auto stage = [&](const std::string& path, const std::function<void(std::ostream&)>& write) {
    const fs::path file = fs::absolute(path).lexically_normal();
    auto& set = sets[file.parent_path()];
    if (set == nullptr) set = std::make_unique<OutputSet>(file.parent_path());
    std::ostringstream text;
    write(text);
    WriteOutput(*set, file.filename().string(), text.str());
  };
  if (!o.dot_path.empty()) stage(o.dot_path, [&](std::ostream& f) { plan::WriteDot(f, plan, graph); });
  if (!o.json_path.empty())
    stage(o.json_path, [&](std::ostream& f) { plan::WritePlanJson(f, plan, graph); });
  for (auto& [dir, set] : sets) set->Commit();
  if (!o.dot_path.empty())
    out << "wrote Graphviz graph to " << o.dot_path << " (render: dot -Tsvg)\n";
  if (!o.json_path.empty()) out << "wrote task graph to " << o.json_path << "\n";
}

void ModelsCommand(std::ostream& out) {
  out << "built-in models (dtsim model NAME for the per-layer table):\n";
  for (const auto& e : models::ZooEntries()) {
    char line[512];
    std::snprintf(line, sizeof line, "  %-16s %s\n", e.name.c_str(), e.description.c_str());
    out << line;
  }
}

void ModelKernelsCommand(const std::string& name, const ModelKernelsOptions& o,
                         std::ostream& out) {
  const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  const hw::DeviceSpec* device = catalog.FindDevice(o.device);
  if (device == nullptr)
    throw UserError("--device: unknown device '" + o.device + "'", "see dtsim devices");
  if (!device->HasMicroarchitecture())
    throw UserError("--device: '" + device->name + "' has no SM count or architecture",
                    "the kernel model prices GPUs of the catalog: see dtsim devices");
  const hw::Precision precision = hw::ParsePrecision(o.precision, {"--precision", 0, 0});
  if (precision == hw::Precision::kFp8 && !device->HasFp8())
    throw UserError("--precision: fp8 needs FP8 tensor cores, which " + device->name +
                        " does not have",
                    "FP8 tensor cores come with Hopper, Ada and Blackwell GPUs: use --device "
                    "H100-SXM, or --precision bf16");
  models::ModelGraph g = models::BuildModel(name);
  g.SetDType(config::StorageDType(precision));  // as a scenario at this precision
  const sim::GpuKernelModel model(*device, sim::GpuKernelParams{});
  char line[400];
  std::snprintf(line, sizeof line, "%s on %s, %s, batch %d (kernel model, sim/cost/gpu_kernel_model.h)\n",
                g.name().c_str(), device->name.c_str(), hw::PrecisionName(precision), o.batch);
  out << line;
  std::snprintf(line, sizeof line, "%-28s %-14s %-12s %10s  %s\n", "op", "kind", "kernel", "time us",
                "what the model makes of it");
  out << line;
  double totals[3] = {0, 0, 0};
  const plan::TaskKind passes[3] = {plan::TaskKind::kForward, plan::TaskKind::kBackwardInput,
                                    plan::TaskKind::kBackwardWeight};
  for (models::OpId v = 0; v < static_cast<models::OpId>(g.num_ops()); ++v) {
    const models::Op& op = g.op(v);
    if (plan::IsFreeOp(op)) continue;
    for (int p = 0; p < 3; ++p) {
      if (passes[p] == plan::TaskKind::kBackwardInput && g.ReadsOnlyGraphInputs(v)) continue;
      if (passes[p] == plan::TaskKind::kBackwardWeight && !op.HasParams()) continue;
      for (const sim::KernelCall& k : sim::OpKernels(op, passes[p], o.batch, precision)) {
        const double s = sim::KernelSeconds(model, k);
        totals[p] += s;
        std::snprintf(line, sizeof line, "%-28.28s %-14s %-12s %10.1f  %s\n", op.name.c_str(),
                      models::OpKindName(op.kind), k.name.c_str(), s * 1e6,
                      sim::DescribeKernel(model, k).c_str());
        out << line;
      }
    }
  }
  std::snprintf(line, sizeof line,
                "total: forward %.3f ms, backward (input) %.3f ms, backward (weights) %.3f ms, "
                "%.3f ms per iteration of %d samples before the optimizer\n",
                totals[0] * 1e3, totals[1] * 1e3, totals[2] * 1e3,
                (totals[0] + totals[1] + totals[2]) * 1e3, o.batch);
  out << line;
}

void ModelCommand(const std::string& name, std::ostream& out, std::ostream& err) {
  const models::ModelGraph g = models::BuildModel(name);
  for (const std::string& w : g.warnings()) err << "warning: " << w << "\n";
  out << models::FormatModelTable(g);
}

void DevicesCommand(bool local, std::ostream& out) {
  char line[512];
  if (local) {
    std::string why;
    out << "local devices:\n";
    for (const auto& d : exec::LocalDevices()) {
      std::snprintf(line, sizeof line, "  %-4s %-40s fp32 %-14s memory %-10s %-12s\n    source: %s\n",
                    d.kind.c_str(), d.name.c_str(), FormatFlopRate(d.fp32_flop_per_s).c_str(),
                    FormatBytes(d.memory_bytes).c_str(),
                    FormatBandwidth(d.memory_bw_bytes_per_s).c_str(), d.source.c_str());
      out << line;
    }
    if (exec::LocalGpus(&why).empty()) out << "  (no GPU: " << why << ")\n";
    return;
  }
  const auto catalog = hw::HardwareCatalog::BuiltIn();
  out << "devices (peak dense flop/s, '-' = no native support: that precision runs at the fp32 "
         "rate; memory in GiB as `run` reports it; memory bandwidth; generation, SMs and L2 for "
         "the kernel cost model, and what its constants for the generation were checked on: "
         "kernel times, end to end only, or unvalidated):\n";
  // A rate of the device's own, or '-' where PeakFlopRate falls back to fp32.
  auto rate = [](double native) { return native > 0 ? FormatFlopRate(native) : std::string("-"); };
  for (const auto& d : catalog.devices()) {
    char memory[32];
    std::snprintf(memory, sizeof memory, "%.1f GiB", d.memory_bytes / (1024.0 * 1024.0 * 1024.0));
    char micro[96] = "-";
    if (d.HasMicroarchitecture())
      std::snprintf(micro, sizeof micro, "%s, %d SMs, L2 %.3g MiB, %s", hw::GpuArchName(d.arch),
                    d.sm_count, d.l2_bytes / (1024.0 * 1024.0),
                    sim::KernelEvidenceName(sim::KernelEvidenceFor(d.arch).level));
    std::snprintf(line, sizeof line,
                  "  %-18s fp32 %-14s tf32 %-14s fp16 %-14s bf16 %-14s %-10s %-12s %s\n",
                  d.name.c_str(), FormatFlopRate(d.fp32_flop_per_s).c_str(),
                  rate(d.tf32_flop_per_s).c_str(), rate(d.fp16_flop_per_s).c_str(),
                  rate(d.bf16_flop_per_s).c_str(), memory,
                  FormatBandwidth(d.memory_bw_bytes_per_s).c_str(), micro);
    out << line;
  }
  out << "links (bandwidth per direction; latency):\n";
  for (const auto& l : catalog.links()) {
    std::snprintf(line, sizeof line, "  %-16s %-12s %-10s %s\n", l.name.c_str(),
                  FormatBandwidth(l.bw_bytes_per_s).c_str(), FormatSeconds(l.latency_s).c_str(),
                  l.source.c_str());
    out << line;
  }
}

Command AddRunCommand(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Simulate a scenario: prints a step log and summary, writes report.json, summary.csv "
      "and trace.json (Chrome/Perfetto) under results/<name>/ unless told otherwise");
  cmd->add_option("scenario", o->scenario_path, "Scenario YAML file")->required();
  cmd->add_option("-o,--out", o->out_dir, "Output folder (default: the scenario's outputs.dir)");
  cmd->add_option("--json", o->json_path,
                  "Also write the JSON report to this path; '-' prints it to stdout "
                  "(the step log then goes to stderr)");
  cmd->add_flag("--no-trace", o->no_trace, "Do not write trace.json");
  cmd->add_flag("-q,--quiet", o->quiet, "No step log");
  cmd->add_option("--engine", o->engine,
                  "analytic (default: fast, each collective priced alone) or simgrid (flows "
                  "share links as they come and go; slower)")
      ->check(CLI::IsMember({"analytic", "simgrid"}));
  cmd->add_option("--repeat", o->repeat,
                  "Simulate N seeds (seed, seed+1, ...) and report the mean and 95% "
                  "confidence interval of throughput and step time; matters with random "
                  "stragglers")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--memory-check", o->memory_check,
                  "warn (default): a plan whose peak memory is within the memory model's "
                  "margin of the capacity is predicted with a warning; refuse: it is refused "
                  "as not fitting (exit 3)")
      ->check(CLI::IsMember({"warn", "refuse"}));
  return {cmd, [o](CommandEnv& env) { RunCommand(*o, env.out, env.err); }, {}, true};
}

Command AddPlanCommand(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Build the scenario's plan and print the placement of ops on devices "
      "(like TensorFlow's log_device_placement); optionally export the task graph");
  cmd->add_option("scenario", o->scenario_path, "Scenario YAML file")->required();
  cmd->add_option("--json", o->json_path, "Write the task graph as JSON here ('-' = stdout)");
  cmd->add_option("--dot", o->dot_path,
                  "Write the model as a Graphviz DOT graph, ops coloured by the devices "
                  "holding them");
  cmd->add_option("--max-ranks", o->max_ranks, "Ranks listed one by one")
      ->check(CLI::PositiveNumber);
  return {cmd, [o](CommandEnv& env) { PlanCommand(*o, env.out); }, {}, true};
}

Command AddModelsCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("models", "List the built-in model zoo");
  return {cmd, [](CommandEnv& env) { ModelsCommand(env.out); }};
}

Command AddModelCommand(CLI::App& app) {
  struct Options {
    std::string name;
    bool kernels = false;
    ModelKernelsOptions kernel_options;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "model", "Print a model's per-layer table (params, FLOPs, activations) and totals");
  cmd->add_option("name", o->name, "Zoo model name, a model YAML file (*.yaml) or an ONNX export (*.onnx)")->required();
  cmd->add_flag("--kernels", o->kernels,
                "List each op's GPU kernels forward and backward with their predicted "
                "times (sim/cost/op_kernels.h, sim/cost/gpu_kernel_model.h)");
  cmd->add_option("--device", o->kernel_options.device, "--kernels: a catalog GPU")
      ->capture_default_str();
  cmd->add_option("--precision", o->kernel_options.precision, "--kernels: fp32, tf32, fp16 or bf16")
      ->capture_default_str();
  cmd->add_option("--batch", o->kernel_options.batch, "--kernels: samples per step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return {cmd, [o](CommandEnv& env) {
            if (o->kernels)
              ModelKernelsCommand(o->name, o->kernel_options, env.out);
            else
              ModelCommand(o->name, env.out, env.err);
          }};
}

Command AddDevicesCommand(CLI::App& app) {
  auto local = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("devices", "List the hardware catalog (GPUs and links)");
  cmd->add_flag("--local", *local, "Describe this machine's CPU and GPUs instead");
  return {cmd, [local](CommandEnv& env) { DevicesCommand(*local, env.out); }};
}

}  // namespace dtsim::tools
