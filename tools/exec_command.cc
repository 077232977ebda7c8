#include "tools/exec_command.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>

#include "common/error.h"
#include "common/units.h"
#include "config/device_profile.h"
#include "config/scenario.h"
#include "exec/comm/communicator.h"
#include "exec/comm/solo_communicator.h"
#include "exec/data/model_datasets.h"
#include "exec/netem/emulated_network.h"
#include "exec/netem/latency_communicator.h"
#include "exec/runtime/model_runtime.h"
#include "exec/runtime/plan_executor.h"
#include "exec/scenario_run.h"
#include "sim/simulator.h"
#include "tools/commands.h"
#include "tools/exec_report.h"
#include "tools/local_run.h"
#include "tools/mpi_launch.h"

namespace dtsim::tools {
namespace {

namespace fs = std::filesystem;

// The device profile the prediction uses (see ExecCommandOptions::profile);
// every rank takes part in a calibration run.
// validate --cost-table: the prediction prices compute from the table,
// which must have timed the kernels this run uses (`runs`), on as many
// threads.
void UseCostTable(const ExecCommandOptions& o, const std::string& runs, config::Scenario* s) {
  config::WorkloadConfig& w = s->workload;
  w.cost_model = config::CostModelKind::kMeasured;
  w.cost_table = o.cost_table;
  w.cost_table_where = SourceLocation{o.cost_table};
  w.cost_table_data = nullptr;
  if (config::IsTraceFile(o.cost_table)) return;  // imported against the model when predicted
  auto table = std::make_shared<config::OpCostTable>(config::LoadOpCostTable(o.cost_table));
  const std::string again = "profile again: dtsim profile " + o.scenario_path +
                            (o.portable ? " --portable" : "") +
                            (o.threads > 1 ? " --threads " + std::to_string(o.threads) : "");
  if (table->source == "dtsim profile" && table->backend != runs)
    throw UserError(SourceLocation{o.cost_table},
                    "the op-cost table timed the '" + table->backend + "' kernels, but this run "
                    "uses '" + runs + "'", again);
  if (table->threads != o.threads)
    throw UserError(SourceLocation{o.cost_table},
                    "the op-cost table timed kernels on " + std::to_string(table->threads) +
                        " thread(s), but this run uses " + std::to_string(o.threads),
                    again);
  if (table->precision != hw::PrecisionName(w.precision))
    throw UserError(SourceLocation{o.cost_table},
                    "the op-cost table was measured in " + table->precision + ", the scenario trains in " +
                        hw::PrecisionName(w.precision), again);
  w.cost_table_data = std::move(table);
}

void UseProfile(const ExecCommandOptions& o, exec::Communicator* comm, config::Scenario* s,
                std::ostream& out, std::ostream& err) {
  std::string path = o.profile;
  if (path.empty() && !s->cluster.device_profile.empty()) return;  // applied by the loader
  if (path.empty()) {
    path = kDefaultProfile;
    if (!fs::exists(path)) {
      if (comm == nullptr || comm->rank() == 0)
        err << "no device profile at " << path << ": measuring this machine first "
            << "(dtsim calibrate --quick; run 'dtsim calibrate --ranks 2' for a full one)\n";
      CalibrateCommandOptions c;
      c.out_path = path;
      c.quick = true;
      c.portable = o.portable;
      c.threads = o.threads;
      CalibrateCommand(c, comm, out, err);
      if (comm != nullptr) comm->Barrier();  // rank 0 has written it
    }
  }
  const config::DeviceProfile profile = config::LoadDeviceProfile(path);
  // A profile measures one build of the kernels; predicting another's runs
  // with it would be off by their speed ratio (about 2x), so refuse.
  const std::string runs = exec::MakeCpuBackend(exec::CpuIsaOf(o))->Name();
  const std::string again = "run 'dtsim calibrate" +
                            std::string(o.portable ? " --portable" : "") +
                            (o.threads > 1 ? " --threads " + std::to_string(o.threads) : "") +
                            "' again";
  if (!profile.provenance.backend.empty() && profile.provenance.backend != runs)
    throw UserError(path + ": the profile measured the '" + profile.provenance.backend +
                        "' kernels, but this run uses '" + runs + "'",
                    again + ", or validate with the kernels it measured" +
                        (runs == "cpu" ? "" : " (--portable for 'cpu')"));
  // Its rates are those of the thread count it measured.
  if (profile.provenance.threads != o.threads)
    throw UserError(path + ": the profile measured kernels on " +
                        std::to_string(profile.provenance.threads) +
                        " thread(s) per rank, but this run uses " + std::to_string(o.threads),
                    again + ", or validate with --threads " +
                        std::to_string(profile.provenance.threads));
  config::ApplyDeviceProfile(profile, path, s);
  s->cluster.device_profile = path;
}

// The prediction's input pipeline: each rank draws its own synthetic
// batches, on its training thread (prefetch 0) or, with --input-threads N,
// on N threads one iteration ahead, at the profile's cost per input element
// for the dataset exec uses (like compute, shared when ranks outnumber
// cores). Nothing without a measured cost or with a dataset file.
void UseInputDraw(const ExecCommandOptions& o, const models::ModelGraph& graph, int processes,
                  int input_threads, const config::DeviceProfile* profile, config::Scenario* s) {
  if (!o.dataset.empty() || profile == nullptr) return;
  const std::string kind = exec::SyntheticKindOf(graph);
  const auto it = profile->input_draw_s_per_element.find(kind);
  if (it == profile->input_draw_s_per_element.end()) return;
  const double share = CoreShare(processes);
  config::InputPipeline& in = s->workload.input;
  in.dataset = "dtsim exec's synthetic " + kind;
  in.per_sample_s =
      static_cast<double>(models::NumElements(graph.op(0).output_shape)) * it->second / share;
  in.cores = s->cluster.devices_per_node * std::max(1, input_threads);
  in.prefetch = input_threads > 0 ? 1 : 0;
}

std::vector<std::string> RelaunchArgs(const ExecCommandOptions& o) {
  std::vector<std::string> a = {o.validate ? "validate" : "exec", o.scenario_path};
  if (o.iterations > 0) a.insert(a.end(), {"--iterations", std::to_string(o.iterations)});
  if (o.mpi_allreduce) a.emplace_back("--mpi-allreduce");
  if (o.backend != "cpu") a.insert(a.end(), {"--backend", o.backend});
  if (o.input_threads >= 0)
    a.insert(a.end(), {"--input-threads", std::to_string(o.input_threads)});
  if (o.portable) a.emplace_back("--portable");
  if (o.threads > 1) a.insert(a.end(), {"--threads", std::to_string(o.threads)});
  if (o.learning_rate > 0) a.insert(a.end(), {"--lr", std::to_string(o.learning_rate)});
  if (o.lr_decay_rate > 0)
    a.insert(a.end(), {"--lr-decay-rate", std::to_string(o.lr_decay_rate), "--lr-decay-steps",
                       std::to_string(o.lr_decay_steps)});
  if (o.lr_smooth) a.emplace_back("--lr-smooth");
  if (o.lr_warmup_steps > 0)
    a.insert(a.end(), {"--lr-warmup-steps", std::to_string(o.lr_warmup_steps)});
  if (!o.dataset.empty()) a.insert(a.end(), {"--dataset", o.dataset});
  if (o.eval_every > 0) a.insert(a.end(), {"--eval-every", std::to_string(o.eval_every)});
  if (o.eval_samples > 0) a.insert(a.end(), {"--eval-samples", std::to_string(o.eval_samples)});
  if (o.stop_at_accuracy > 0)
    a.insert(a.end(), {"--stop-at-accuracy", std::to_string(o.stop_at_accuracy)});
  if (o.stop_at_loss > 0) a.insert(a.end(), {"--stop-at-loss", std::to_string(o.stop_at_loss)});
  if (o.checkpoint_every > 0)
    a.insert(a.end(), {"--checkpoint-every", std::to_string(o.checkpoint_every)});
  if (o.resume) a.emplace_back("--resume");
  if (!o.out_dir.empty()) a.insert(a.end(), {"--out", o.out_dir});
  if (o.quiet) a.emplace_back("--quiet");
  if (!o.profile.empty()) a.insert(a.end(), {"--profile", o.profile});
  if (!o.cost_table.empty()) a.insert(a.end(), {"--cost-table", o.cost_table});
  return a;
}

// Builds the emulated network, runs the ranks in it under mpirun, removes
// it (also when the run fails: EmulatedNetwork's destructor).
void RunInEmulatedNetwork(const ExecCommandOptions& o, const NetworkSetting& n, int ranks,
                          std::ostream& err) {
  if (::geteuid() != 0)
    throw UserError("--network needs root: it puts each rank in its own network namespace",
                    "run as root (or with CAP_NET_ADMIN and CAP_SYS_ADMIN), or leave out "
                    "--network");
  exec::netem::SystemCommandRunner runner;
  for (const std::string& name : exec::netem::RemoveStaleNetworks(runner))
    err << "removed " << name << ", left by a dtsim run that no longer exists\n";
  exec::netem::EmulatedNetworkOptions no;
  no.ranks = ranks;
  no.rate_bytes_per_s = n.rate_bytes_per_s;
  no.latency_s = n.latency_s;
  exec::netem::EmulatedNetwork net(no, runner);
  const std::string subnet = net.subnet().Cidr();
  err << "emulated network: " << ranks << " ranks in namespaces "
      << net.names().namespace_prefix << "0.." << ranks - 1 << " on bridge " << net.names().bridge
      << " (" << subnet << "), " << o.network << " per direction per rank";
  if (n.latency_s > 0)
    err << ", latency " << FormatSeconds(n.latency_s)
        << (net.kernel_latency() ? " (netem)" : " (added by the ranks: this kernel lacks netem)");
  err << "\n";

  LaunchOptions lo;
  lo.ranks = ranks;
  // Only TCP, only over the emulated links: OpenMPI's shared-memory
  // transport would bypass them.
  lo.launcher_args = {"--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", subnet};
  // The ranks reach mpirun's PMIx server from their namespaces: by default
  // it listens on the loopback of the root namespace only.
  lo.environment = {{"PMIX_MCA_ptl_tcp_remote_connections", "1"},
                    {"PMIX_MCA_ptl_tcp_if_include", subnet}};
  // Each rank enters its namespace: sh -c '...' <prefix> <dtsim> <args...>.
  lo.rank_wrapper = {"/bin/sh", "-c",
                     "exec ip netns exec \"$0${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\" \"$@\"",
                     net.names().namespace_prefix};
  lo.on_launcher = o.on_launcher;
  std::vector<std::string> args = RelaunchArgs(o);
  args.insert(args.end(), {"--network", o.network, "--in-emulated-network"});
  if (!o.latency.empty()) args.insert(args.end(), {"--latency", o.latency});
  if (n.latency_s > 0 && !net.kernel_latency()) args.emplace_back("--latency-in-transport");
  RunUnderMpiLauncher(lo, args, err);
  for (const std::string& problem : net.Remove())
    err << "warning: could not remove part of the emulated network: " << problem << "\n";
}

// The scenario a run executes, its model and the plan each real iteration
// replays (built by the simulator's plan builder: exec builds none).
struct LoadedRun {
  config::Scenario s;
  models::ModelGraph graph;
  plan::Plan plan;
};

// Throws UserError for options and scenarios real execution refuses.
LoadedRun LoadRun(const ExecCommandOptions& o) {
  if (o.backend != "cpu" && o.threads != 1)
    throw UserError("--threads sets the CPU backend's kernel threads; --backend " + o.backend +
                        " runs its kernels on the device",
                    "drop --threads, or use --backend cpu");
  config::Scenario s = config::LoadScenario(o.scenario_path);
  exec::CheckExecutable(s);
  models::ModelGraph graph = config::BuildWorkloadModel(s);
  if (const std::string why = exec::ModelRuntime::UnsupportedOps(graph); !why.empty())
    throw UserError(o.scenario_path + ": " + why, "dtsim run simulates this model");
  plan::Plan plan = sim::MakePlan(exec::PlanScenario(s), graph, 0);
  return {std::move(s), std::move(graph), std::move(plan)};
}

// In a process no launcher started: starts the ranks (in the emulated
// network, or under mpirun for 2+ ranks) and returns true once they have
// run; false when this process is the run's only rank.
bool LaunchRanks(const ExecCommandOptions& o, const LoadedRun& run,
                 const std::optional<NetworkSetting>& net, std::ostream& err) {
  // One process per plan rank: the devices, and parameter servers.
  const int needed = run.plan.num_ranks();
  const int ranks = o.ranks > 0 ? o.ranks : needed;
  // Every rank runs on this machine: check that they fit before starting
  // any (ranks started by hand under mpirun do not check).
  if (ranks == needed)
    exec::CheckMemory(o, run.s, run.plan, run.graph, exec::LocalMachineMemory(o.backend));
  if (net) {
    RunInEmulatedNetwork(o, *net, ranks, err);
    return true;
  }
  if (ranks > 1) {
    RunUnderMpiLauncher(ranks, RelaunchArgs(o), err);
    return true;
  }
  return false;
}

// validate: the prediction sees the device profile, the op-cost table, the
// cores the ranks share and their input pipeline.
void PrepareValidation(const ExecCommandOptions& o, const models::ModelGraph& graph,
                       exec::Communicator* comm, int world_size, int input_threads,
                       config::Scenario* s, std::ostream& out, std::ostream& err) {
  UseProfile(o, comm, s, out, err);
  if (!o.cost_table.empty())
    UseCostTable(o, exec::MakeCpuBackend(exec::CpuIsaOf(o))->Name(), s);
  // The profile the loader or UseProfile applied, read once.
  std::optional<config::DeviceProfile> profile;
  if (!s->cluster.device_profile.empty())
    profile = config::LoadDeviceProfile(s->cluster.device_profile);
  const config::DeviceProfile* measured = profile ? &*profile : nullptr;
  // Each rank's kernel threads compete for the cores too.
  ShareCores(world_size * o.threads, measured, s);
  UseInputDraw(o, graph, world_size, input_threads, measured, s);
}

// This rank's part of the run on `world` (comm: the launcher's, or null),
// reported by rank 0.
void RunRank(const ExecCommandOptions& o, LoadedRun& run, const std::optional<NetworkSetting>& net,
             exec::Communicator& world, exec::Communicator* comm, std::ostream& out,
             std::ostream& err) {
  config::Scenario& s = run.s;
  const int needed = run.plan.num_ranks();
  const bool root = world.rank() == 0;
  if (world.size() != needed)
    throw UserError(s.source_path + ": the scenario's plan has " + std::to_string(needed) +
                        " ranks (" + std::to_string(s.cluster.num_devices()) + " devices" +
                        (needed > s.cluster.num_devices() ? " and parameter servers" : "") +
                        ") but " + std::to_string(world.size()) + " processes run it",
                    "run with --ranks " + std::to_string(needed) + " (one process per rank)");
  exec::ExecOptions eo = exec::MakeExecOptions(o, s, world.size());
  if (o.validate)
    PrepareValidation(o, run.graph, comm, world.size(), eo.input_threads, &s, out, err);
  if (root && s.stragglers.noise != config::NoiseDistribution::kNone)
    err << "note: straggler noise is simulated only; real runs inject the fixed slowdowns\n";
  if (!o.quiet) eo.log = [&out](const std::string& line) { out << line << "\n" << std::flush; };
  eo.warn = [&err, &world](const std::string& line) {
    // One write, so that ranks sharing the terminal do not interleave.
    err << ("dtsim: rank " + std::to_string(world.rank()) + ": warning: " + line + "\n")
        << std::flush;
  };
  const exec::ScenarioData data = exec::MakeScenarioData(o, run.graph, s.seed, &eo);
  if (o.backend == "cuda" && o.validate)
    throw UserError("validate runs on the CPU backend: its device profile measures the CPU",
                    "use dtsim exec --backend cuda to run on GPUs");
  const std::unique_ptr<exec::RunBackend> backend = exec::MakeRunBackend(o, s, world, &eo);
  if (root)
    out << s.name << ": " << run.graph.name() << ", " << plan::StrategyName(run.plan.strategy)
        << ", " << world.size() << " rank(s) on " << backend->get().Name()
        << (o.backend == "cpu" && o.threads > 1 ? " x " + std::to_string(o.threads) + " threads"
                                                : std::string())
        << ", " << run.plan.samples_per_iteration << " samples per iteration, " << eo.iterations
        << " iterations\n"
        << std::flush;
  const exec::ExecResult result =
      ExecutePlan(run.plan, run.graph, *data.train, world, backend->get(), eo);
  if (root) ReportExecRun(o, s, run.plan, run.graph, result, net, eo.optimizer.lr, out);
}

}  // namespace

void ExecCommand(const ExecCommandOptions& o, exec::Communicator* comm, std::ostream& out,
                 std::ostream& err) {
  LoadedRun run = LoadRun(o);
  const std::optional<NetworkSetting> net = ParseNetwork(o.network, o.latency);
  if (comm == nullptr && LaunchRanks(o, run, net, err)) return;
  if (net && !o.in_emulated_network)
    throw UserError("--network: dtsim builds the emulated network and starts the ranks in it "
                    "itself",
                    "run 'dtsim " + std::string(o.validate ? "validate" : "exec") +
                        " --network ...' without mpirun (--ranks N for another rank count)");
  exec::SoloCommunicator solo;
  // Under an emulated network without netem, the ranks add the latency.
  std::optional<exec::netem::LatencyCommunicator> delayed;
  if (comm != nullptr && net && o.latency_in_transport) delayed.emplace(*comm, net->latency_s);
  exec::Communicator& world = delayed ? static_cast<exec::Communicator&>(*delayed)
                              : comm  ? *comm
                                      : solo;
  RunRank(o, run, net, world, comm, out, err);
}

}  // namespace dtsim::tools
