#include "tools/profile_command.h"
#include "tools/cli.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <ostream>
#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/units.h"
#include "config/op_cost_table.h"
#include "config/scenario.h"
#include "config/torch_trace.h"
#include "exec/calibrate/op_profile.h"
#include "exec/comm/solo_communicator.h"
#include "exec/device_runtime.h"
#include "exec/kernels/cpu_isa.h"
#include "sim/simulator.h"
#include "exec/scenario_run.h"
#include "tools/host_facts.h"

namespace dtsim::tools {
namespace {

// What the profile needs of the plan exec would run: the batches its
// compute tasks run at (one per device, or a pipeline's micro-batch), and
// the most ranks one node holds.
struct PlanFacts {
  std::set<std::int64_t> batches;
  int ranks_per_node = 1;
};
PlanFacts FactsOf(const config::Scenario& s, const models::ModelGraph& graph) {
  config::Scenario one = s;
  one.workload.iterations = 1;
  if (one.parallelism.strategy == config::Strategy::kLocalSgd) one.parallelism.averaging_period = 1;
  const plan::Plan plan = sim::MakePlan(one, graph, 0);
  PlanFacts facts;
  std::map<int, int> per_node;
  for (const plan::RankPlacement& r : plan.ranks)
    facts.ranks_per_node = std::max(facts.ranks_per_node, ++per_node[r.node]);
  std::set<std::int64_t>& batches = facts.batches;
  for (const plan::Task& t : plan.tasks()) {
    if (t.op >= 0 && t.batch > 0 &&
        (t.kind == plan::TaskKind::kForward || t.kind == plan::TaskKind::kBackwardInput ||
         t.kind == plan::TaskKind::kBackwardWeight || t.kind == plan::TaskKind::kBackward))
      batches.insert(t.batch);
  }
  return facts;
}

std::string OutPath(const ProfileCommandOptions& o, const config::Scenario& s) {
  return o.out_path.empty() ? "results/profile/" + s.name + ".json" : o.out_path;
}

// --torch-trace: the table of the trace's ops for the scenario's model, and
// what mapped, what did not and where each step's time went.
void TraceCommand(const ProfileCommandOptions& o, const config::Scenario& s,
                  const models::ModelGraph& graph, std::ostream& out) {
  config::TorchTraceReport report;
  config::OpCostTable table = config::LoadTorchTrace(o.torch_trace, graph, &report);
  table.scenario = o.scenario_path;
  table.threads = o.threads;
  out << o.torch_trace << ": batch " << report.batch << ", " << report.steps.size()
      << " profiled step(s), " << (report.gpu_kernels ? "GPU kernel" : "CPU") << " times\n";
  for (const config::TorchTraceStep& st : report.steps) {
    out << "  " << st.name << ": step " << FormatSeconds(st.step_s) << " = forward "
        << FormatSeconds(st.forward_s) << ", backward " << FormatSeconds(st.backward_s)
        << ", optimizer " << FormatSeconds(st.optimizer_s) << ", zero_grad "
        << FormatSeconds(st.zero_grad_s) << ", unattributed " << FormatSeconds(st.unattributed_s)
        << ", communication " << FormatSeconds(st.communication_s) << "; the rest between ops\n";
  }
  out << report.measured.size() << " graph ops measured, " << report.unmeasured.size()
      << " not (priced by the model)";
  for (std::size_t i = 0; i < report.unmeasured.size() && i < 8; ++i)
    out << (i ? ", " : ": ") << report.unmeasured[i];
  out << "\n";
  const std::string path = OutPath(o, s);
  WriteFileAtomic(
      path, [&table](std::ostream& f) { f << config::OpCostTableJson(table); },
      {.create_folder = true});
  out << "wrote " << path << " (" << table.entries.size() << " entries)\n";
}

}  // namespace

Command AddProfileCommand(CLI::App& app) {
  auto o = std::make_shared<ProfileCommandOptions>();
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
  cmd->add_option("--steps", o->timed_steps,
                  "Timed training steps, at least (more until 2 s are timed, at most 50); each "
                  "op's statistics are over them")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--concurrent", o->concurrent,
                  "Copies of the step run at once, one timed (default: the ranks the scenario "
                  "puts on a node, at most this machine's cores / --threads; CPU only)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--torch-trace", o->torch_trace,
                  "Make the table from this torch.profiler trace of the scenario's model "
                  "(record_shapes=True; .json or .json.gz) instead of running the ops here "
                  "(docs/torch_traces.md)");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress on stderr");
  return {cmd, [o](CommandEnv& env) { ProfileCommand(*o, env.out, env.err); }};
}

void ProfileCommand(const ProfileCommandOptions& o, std::ostream& out, std::ostream& err) {
  if (o.backend != "cpu" && (o.threads != 1 || o.portable || o.concurrent > 1))
    throw UserError("--threads, --portable and --concurrent are for CPU kernels; --backend " +
                        o.backend + " runs its kernels on the device",
                    "drop them, or use --backend cpu");
  const config::Scenario s = config::LoadScenario(o.scenario_path);
  if (!o.torch_trace.empty()) {
    TraceCommand(o, s, config::BuildWorkloadModel(s), out);
    return;
  }
  exec::CheckExecutable(s);
  if (s.workload.precision != hw::Precision::kFp32)
    throw UserError(s.Where("workload.precision"),
                    std::string("exec runs fp32 kernels; the scenario trains in ") +
                        hw::PrecisionName(s.workload.precision),
                    "profile with workload.precision: fp32");
  const models::ModelGraph graph = config::BuildWorkloadModel(s);
  const PlanFacts facts = FactsOf(s, graph);
  const std::set<std::int64_t>& batches = facts.batches;
  if (batches.empty()) throw UserError(o.scenario_path + ": the plan has no compute tasks");

  exec::SoloCommunicator solo;
  exec::DeviceRuntime device;
  std::unique_ptr<exec::Backend> cpu;
  if (o.backend == "cuda") {
    device = exec::MakeCudaRuntime(solo);
  } else {
    cpu =
        exec::MakeCpuBackend(o.portable ? exec::CpuIsa::kPortable : exec::BestCpuIsa(), o.threads);
  }
  exec::Backend& backend = device.backend ? *device.backend : *cpu;
  // As many copies of the step as the job runs ranks on a node, on at most
  // as many cores: a GPU, or ranks beyond the cores, time-share instead
  // (validate stretches the times by the share of a core).
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int concurrent = o.concurrent > 0 ? o.concurrent
                         : o.backend == "cpu"
                             ? std::min(facts.ranks_per_node, std::max(1, cores / o.threads))
                             : 1;

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
  // Short steps are noisy: time at least 2 s of them.
  po.min_timed_seconds = 2.0;
  po.optimizer = exec::OptimizerFor(s, 0);
  po.seed = s.seed;
  po.concurrent = concurrent;
  const exec::CpuIsa isa = o.portable ? exec::CpuIsa::kPortable : exec::BestCpuIsa();
  po.make_backend = [isa, &o] { return exec::MakeCpuBackend(isa, o.threads); };
  table.concurrent = concurrent;
  for (std::int64_t batch : batches) {
    po.batch = batch;
    if (!o.quiet)
      err << "profile: " << graph.name() << " at batch " << batch << " on " << backend.Name()
          << ", " << o.warmup_steps << " warm-up and " << o.timed_steps << " timed steps"
          << (concurrent > 1 ? ", " + std::to_string(concurrent) + " copies at once"
                             : std::string())
          << "\n"
          << std::flush;
    const exec::OpProfile p =
        exec::ProfileOps(graph, backend, po, [&](int step, int total, double seconds) {
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
                  p.optimizer.seconds.runs, FormatSeconds(p.optimizer.seconds.Expected()).c_str());
    out << line;
  }
  const std::string path = OutPath(o, s);
  WriteFileAtomic(path, [&table](std::ostream& f) { f << config::OpCostTableJson(table); },
                  {.create_folder = true});
  out << "wrote " << path << " (" << table.entries.size() << " entries)\n";
}

}  // namespace dtsim::tools
