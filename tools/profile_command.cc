#include "tools/profile_command.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <ostream>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/units.h"
#include "config/op_cost_table.h"
#include "config/scenario.h"
#include "exec/calibrate/op_profile.h"
#include "exec/comm/solo_communicator.h"
#include "exec/device_runtime.h"
#include "exec/kernels/cpu_isa.h"
#include "sim/simulator.h"
#include "tools/exec_scenario.h"
#include "tools/host_facts.h"

namespace dtsim::tools {
namespace {

// The batches the scenario's compute tasks run at (one per device, or the
// micro-batch of a pipeline), from the plan exec would run.
std::set<std::int64_t> PlanBatches(const config::Scenario& s, const models::ModelGraph& graph) {
  config::Scenario one = s;
  one.workload.iterations = 1;
  if (one.parallelism.strategy == config::Strategy::kLocalSgd) one.parallelism.averaging_period = 1;
  const plan::Plan plan = sim::MakePlan(one, graph, 0);
  std::set<std::int64_t> batches;
  for (const plan::Task& t : plan.tasks()) {
    if (t.op >= 0 && t.batch > 0 &&
        (t.kind == plan::TaskKind::kForward || t.kind == plan::TaskKind::kBackwardInput ||
         t.kind == plan::TaskKind::kBackwardWeight || t.kind == plan::TaskKind::kBackward))
      batches.insert(t.batch);
  }
  return batches;
}

}  // namespace

CLI::App* AddProfileCommand(CLI::App& app, ProfileCommandOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Time every op of a scenario's per-device training step on this machine through the "
      "exec backend (forward and backward at the plan's batch) and write an op-cost table "
      "that workload.cost_model: measured prices from (docs/measured_costs.md)");
  cmd->add_option("scenario", o->scenario_path, "Scenario YAML file")->required();
  cmd->add_option("-o,--out", o->out_path,
                  "Op-cost table to write (default results/profile/<scenario name>.json)");
  cmd->add_option("--backend", o->backend, "Where the ops run: cpu, or cuda (a local GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "CPU kernel threads, as the runs to predict use them (exec --threads)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--portable", o->portable,
                "Profile the portable CPU kernels (as exec --portable) instead of the fastest "
                "build this CPU runs");
  cmd->add_option("--warmup", o->warmup_steps, "Untimed training steps first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--steps", o->timed_steps, "Timed training steps; each op's median is over them")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", o->quiet, "No progress on stderr");
  return cmd;
}

void ProfileCommand(const ProfileCommandOptions& o, std::ostream& out, std::ostream& err) {
  if (o.backend != "cpu" && (o.threads != 1 || o.portable))
    throw UserError("--threads and --portable choose CPU kernels; --backend " + o.backend +
                        " runs its kernels on the device",
                    "drop them, or use --backend cpu");
  const config::Scenario s = config::LoadScenario(o.scenario_path);
  CheckExecutable(s);
  if (s.workload.precision != hw::Precision::kFp32)
    throw UserError(s.Where("workload.precision"),
                    std::string("exec runs fp32 kernels; the scenario trains in ") +
                        hw::PrecisionName(s.workload.precision),
                    "profile with workload.precision: fp32");
  const models::ModelGraph graph = config::BuildWorkloadModel(s);
  const std::set<std::int64_t> batches = PlanBatches(s, graph);
  if (batches.empty()) throw UserError(o.scenario_path + ": the plan has no compute tasks");

  exec::SoloCommunicator solo;
  exec::DeviceRuntime device;
  std::unique_ptr<exec::Backend> cpu;
  if (o.backend == "cuda") {
    device = exec::MakeCudaRuntime(solo);
  } else {
    cpu = exec::MakeCpuBackend(o.portable ? exec::CpuIsa::kPortable : exec::BestCpuIsa(),
                               o.threads);
  }
  exec::Backend& backend = device.backend ? *device.backend : *cpu;

  config::OpCostTable table;
  table.source = "dtsim profile";
  table.device = o.backend == "cpu" ? DeviceDescription(backend.Name()) : backend.Name();
  table.backend = backend.Name();
  table.threads = o.threads;
  table.precision = hw::PrecisionName(s.workload.precision);
  table.host = HostName();
  table.date = UtcNow();
  table.dtsim_version = DTSIM_VERSION;
  table.libraries = exec::KernelLibraries();
  table.scenario = o.scenario_path;
  exec::OpProfileOptions po;
  po.warmup_steps = o.warmup_steps;
  po.timed_steps = o.timed_steps;
  po.optimizer = OptimizerFor(s, 0);
  po.seed = s.seed;
  for (std::int64_t batch : batches) {
    po.batch = batch;
    if (!o.quiet)
      err << "profile: " << graph.name() << " at batch " << batch << " on " << backend.Name()
          << ", " << o.warmup_steps << " warm-up and " << o.timed_steps << " timed steps\n"
          << std::flush;
    const exec::OpProfile p = exec::ProfileOps(
        graph, backend, po, [&](int step, int total, double seconds) {
          if (o.quiet) return;
          err << "  step " << step << "/" << total << ": " << FormatSeconds(seconds)
              << (step <= o.warmup_steps ? " (warm-up)" : "") << "\n"
              << std::flush;
        });
    table.entries.insert(table.entries.end(), p.entries.begin(), p.entries.end());
    // The optimizer's cost per parameter does not depend on the batch: the
    // largest batch's measurement (the last) is kept.
    table.optimizer = p.optimizer;
    char line[200];
    std::snprintf(line, sizeof line,
                  "batch %lld: %zu distinct ops, step %s (median of %d), optimizer %s\n",
                  static_cast<long long>(batch), p.entries.size(), FormatSeconds(p.step_s).c_str(),
                  o.timed_steps, FormatSeconds(p.optimizer.seconds.median_s).c_str());
    out << line;
  }
  const std::string path =
      o.out_path.empty() ? "results/profile/" + s.name + ".json" : o.out_path;
  WriteFileAtomic(
      path, [&table](std::ostream& f) { f << config::OpCostTableJson(table); },
      {.create_folder = true});
  out << "wrote " << path << " (" << table.entries.size() << " entries)\n";
}

}  // namespace dtsim::tools
