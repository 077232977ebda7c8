#include "tools/exec_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "common/error.h"
#include "config/device_profile.h"
#include "config/scenario.h"
#include "exec/comm/communicator.h"
#include "exec/comm/solo_communicator.h"
#include "exec/data/binary_dataset.h"
#include "exec/data/synthetic_dataset.h"
#include "exec/kernels/cpu_backend.h"
#include "exec/runtime/plan_executor.h"
#include "sim/simulator.h"
#include "tools/commands.h"
#include "tools/mpi_launch.h"
#include "tools/output_set.h"

namespace dtsim::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A synthetic data set shaped like the model's input and loss, or the
// user's file (checked against the model).
std::unique_ptr<exec::Dataset> MakeDataset(const models::ModelGraph& g, const std::string& path,
                                           std::uint64_t seed) {
  const models::Op& input = g.op(0);
  const models::Op& loss = g.op(g.num_ops() - 1);
  const std::int64_t classes = loss.attrs.vocab;
  bool tokens = false;
  for (models::OpId c : g.consumers(0))
    if (g.op(c).kind == models::OpKind::kEmbedding) tokens = true;
  if (!path.empty()) {
    auto data = std::make_unique<exec::BinaryDataset>(exec::BinaryDataset::Open(path));
    if (data->sample_shape() != input.output_shape || data->classes() > classes)
      throw UserError(path + ": samples of shape " + models::ShapeToString(data->sample_shape()) +
                          " with " + std::to_string(data->classes()) + " classes do not fit " +
                          g.name() + " (input " + models::ShapeToString(input.output_shape) +
                          ", " + std::to_string(classes) + " classes)",
                      "convert the data to the model's input shape (docs/dataset_format.md)");
    return data;
  }
  if (tokens)
    return std::make_unique<exec::TokenDataset>(exec::TokenDatasetOptions{
        .vocab = classes, .seq_len = input.output_shape[0], .seed = seed});
  if (input.output_shape.size() == 3)
    return std::make_unique<exec::ClassImageDataset>(exec::ClassImageDatasetOptions{
        .channels = input.output_shape[0],
        .height = input.output_shape[1],
        .width = input.output_shape[2],
        .classes = classes,
        .seed = seed});
  return std::make_unique<exec::TeacherDataset>(
      exec::TeacherDatasetOptions{.shape = input.output_shape, .classes = classes, .seed = seed});
}

exec::OptimizerOptions OptimizerFor(const config::Scenario& s, double lr) {
  exec::OptimizerOptions o;
  switch (s.parallelism.optimizer) {
    case config::OptimizerKind::kSgd: o.algorithm = exec::OptimizerAlgorithm::kSgd; break;
    case config::OptimizerKind::kMomentum: o.algorithm = exec::OptimizerAlgorithm::kMomentum; break;
    case config::OptimizerKind::kAdam: o.algorithm = exec::OptimizerAlgorithm::kAdam; break;
  }
  o.lr.initial_lr = lr > 0 ? lr : (o.algorithm == exec::OptimizerAlgorithm::kAdam ? 1e-3 : 0.01);
  return o;
}

// Refuses what real execution does not do, before any work.
void CheckExecutable(const config::Scenario& s, int ranks) {
  const std::string where = s.source_path;
  if (s.cluster.num_devices() != ranks)
    throw UserError(where + ": the scenario has " + std::to_string(s.cluster.num_devices()) +
                        " devices but " + std::to_string(ranks) + " ranks run it",
                    "run with --ranks " + std::to_string(s.cluster.num_devices()) +
                        " (one process per device)");
  const auto strategy = s.parallelism.strategy;
  if (strategy == config::Strategy::kParameterServer ||
      (strategy == config::Strategy::kLocalSgd &&
       s.parallelism.averaging == config::AveragingTransport::kParameterServer))
    throw UserError(where + ": parameter-server plans are simulated but not executed for real yet",
                    "validate data, local_sgd (over all-reduce), model or hybrid scenarios");
  if (s.parallelism.hybrid.tensor_parallel > 1)
    throw UserError(where + ": tensor parallelism is simulated but not executed for real",
                    "set parallelism.hybrid.tensor_parallel: 1");
  if (s.parallelism.hybrid.virtual_stages > 1)
    throw UserError(where + ": interleaved virtual stages are simulated but not executed for real",
                    "use schedule gpipe or 1f1b");
  if (s.parallelism.sync == config::SyncMode::kAsynchronous)
    throw UserError(where + ": asynchronous training is not executed for real yet");
}

struct Summary {
  double step_s = 0, compute_s = 0, comm_s = 0, throughput = 0;
  int measured = 0;
};

// Mean over iterations after the first of the slowest rank's time, and the
// mean over ranks of compute and communication time.
Summary Summarize(const exec::ExecResult& r) {
  Summary s;
  const int n = static_cast<int>(r.losses.size());
  const int from = std::min(n - 1, std::max(r.first_iteration + 1, 1));
  const auto ranks = static_cast<double>(r.times.size());
  for (int i = from; i < n; ++i) {
    double slowest = 0;
    for (const auto& rank : r.times) {
      const auto& t = rank[static_cast<std::size_t>(i)];
      slowest = std::max(slowest, t.seconds);
      s.compute_s += t.compute / ranks;
      s.comm_s += t.comm / ranks;
    }
    s.step_s += slowest;
    ++s.measured;
  }
  if (s.measured > 0) {
    s.step_s /= s.measured;
    s.compute_s /= s.measured;
    s.comm_s /= s.measured;
    s.throughput = static_cast<double>(r.samples_per_iteration) / s.step_s;
  }
  return s;
}

double ErrorPercent(double predicted, double measured) {
  return measured > 0 ? 100.0 * (predicted - measured) / measured : 0.0;
}

void Report(const ExecCommandOptions& o, const config::Scenario& s, const exec::ExecResult& r,
            std::ostream& out) {
  const Summary m = Summarize(r);
  json j;
  j["scenario"] = s.name;
  j["ranks"] = r.times.size();
  j["iterations"] = r.losses.size();
  j["samples_per_iteration"] = r.samples_per_iteration;
  j["measured"] = {{"step_time_s", m.step_s},
                   {"throughput_samples_per_s", m.throughput},
                   {"compute_s", m.compute_s},
                   {"comm_s", m.comm_s},
                   {"iterations_measured", m.measured}};
  j["loss"] = r.losses;
  json per_rank = json::array();
  for (const auto& rank : r.times) {
    json it = json::array();
    for (const auto& t : rank) it.push_back({t.seconds, t.compute, t.comm});
    per_rank.push_back(it);
  }
  j["per_rank_iterations"] = per_rank;
  j["per_rank_iterations_columns"] = {"seconds", "compute_s", "comm_s"};

  char line[200];
  out << "measured over " << m.measured << " iterations (the first is warm-up):\n";
  std::snprintf(line, sizeof line, "  step time %.4f s, %.1f samples/s, compute %.4f s, comm %.4f s\n",
                m.step_s, m.throughput, m.compute_s, m.comm_s);
  out << line;

  OutputSet files(o.out_dir.empty() ? fs::path(s.outputs.dir) : fs::path(o.out_dir));
  if (o.validate) {
    // The CPU backend runs a rank's compute and communication on one
    // thread, one after the other: predict without overlap.
    config::Scenario ps = s;
    ps.parallelism.overlap = false;
    const sim::Prediction p = sim::Simulate(ps);
    const double pred_step = p.metrics.step_time_s;
    const double pred_compute = p.metrics.breakdown.compute_s;
    const double pred_comm = p.metrics.breakdown.comm_s;
    const double pred_tput = p.metrics.throughput_samples_per_s;
    j["predicted"] = {{"step_time_s", pred_step},
                      {"throughput_samples_per_s", pred_tput},
                      {"compute_s", pred_compute},
                      {"comm_s", pred_comm},
                      {"device", p.device.name},
                      {"overlap", false}};
    j["error_percent"] = {{"step_time", ErrorPercent(pred_step, m.step_s)},
                          {"throughput", ErrorPercent(pred_tput, m.throughput)},
                          {"compute", ErrorPercent(pred_compute, m.compute_s)},
                          {"comm", ErrorPercent(pred_comm, m.comm_s)}};
    std::string table = "| quantity | predicted | measured | error |\n|---|---:|---:|---:|\n";
    auto row = [&](const char* name, double pv, double mv, const char* fmt) {
      char buf[200], a[40], b[40];
      std::snprintf(a, sizeof a, fmt, pv);
      std::snprintf(b, sizeof b, fmt, mv);
      std::snprintf(buf, sizeof buf, "| %s | %s | %s | %+.1f%% |\n", name, a, b,
                    ErrorPercent(pv, mv));
      table += buf;
    };
    row("step time (s)", pred_step, m.step_s, "%.4f");
    row("throughput (samples/s)", pred_tput, m.throughput, "%.1f");
    row("compute per rank (s)", pred_compute, m.compute_s, "%.4f");
    row("communication per rank (s)", pred_comm, m.comm_s, "%.4f");
    out << "\nprediction (" << p.device.name << ", no overlap) against measurement:\n" << table;
    auto md = files.Open("validation.md");
    md << "# " << s.name << ": prediction against real execution\n\n"
       << r.times.size() << " ranks, " << m.measured << " measured iterations of "
       << r.samples_per_iteration << " samples; device " << p.device.name << ".\n\n"
       << table;
    CloseOutput(md, "validation.md");
  }
  auto f = files.Open(o.validate ? "validation.json" : "exec.json");
  f << j.dump(2) << "\n";
  CloseOutput(f, "exec.json");
  for (const auto& path : files.Commit()) out << "wrote " << path.string() << "\n";
}

// The device profile the prediction uses (see ExecCommandOptions::profile);
// every rank takes part in a calibration run.
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
      CalibrateCommand(c, comm, out, err);
      if (comm != nullptr) comm->Barrier();  // rank 0 has written it
    }
  }
  config::ApplyDeviceProfile(config::LoadDeviceProfile(path), path, s);
  s->cluster.device_profile = path;
}

std::vector<std::string> RelaunchArgs(const ExecCommandOptions& o) {
  std::vector<std::string> a = {o.validate ? "validate" : "exec", o.scenario_path};
  if (o.iterations > 0) a.insert(a.end(), {"--iterations", std::to_string(o.iterations)});
  if (o.mpi_allreduce) a.emplace_back("--mpi-allreduce");
  if (o.learning_rate > 0) a.insert(a.end(), {"--lr", std::to_string(o.learning_rate)});
  if (!o.dataset.empty()) a.insert(a.end(), {"--dataset", o.dataset});
  if (o.checkpoint_every > 0)
    a.insert(a.end(), {"--checkpoint-every", std::to_string(o.checkpoint_every)});
  if (o.resume) a.emplace_back("--resume");
  if (!o.out_dir.empty()) a.insert(a.end(), {"--out", o.out_dir});
  if (o.quiet) a.emplace_back("--quiet");
  if (!o.profile.empty()) a.insert(a.end(), {"--profile", o.profile});
  return a;
}

}  // namespace

void ExecCommand(const ExecCommandOptions& o, exec::Communicator* comm, std::ostream& out,
                 std::ostream& err) {
  config::Scenario s = config::LoadScenario(o.scenario_path);
  if (comm == nullptr) {
    const int ranks = o.ranks > 0 ? o.ranks : s.cluster.num_devices();
    if (ranks > 1) {
      RunUnderMpiLauncher(ranks, RelaunchArgs(o), err);
      return;
    }
  }
  exec::SoloCommunicator solo;
  exec::Communicator& world = comm ? *comm : solo;
  const bool root = world.rank() == 0;
  CheckExecutable(s, world.size());
  if (o.validate) UseProfile(o, comm, &s, out, err);
  const models::ModelGraph graph = config::BuildWorkloadModel(s);

  config::Scenario plan_scenario = s;
  const bool local_sgd = s.parallelism.strategy == config::Strategy::kLocalSgd;
  // One plan iteration (H with local SGD) is replayed for every real one.
  plan_scenario.workload.iterations = local_sgd ? s.parallelism.averaging_period + 1 : 1;
  const plan::Plan plan = sim::MakePlan(plan_scenario, graph, 0);

  exec::ExecOptions eo;
  eo.iterations = o.iterations > 0 ? o.iterations : 20;
  eo.bucket_bytes = s.parallelism.bucket_bytes;
  eo.averaging_period = local_sgd ? s.parallelism.averaging_period : 1;
  eo.average_parameters = local_sgd;
  eo.mpi_allreduce = o.mpi_allreduce;
  eo.optimizer = OptimizerFor(s, o.learning_rate);
  eo.seed = s.seed;
  eo.slowdown.assign(static_cast<std::size_t>(world.size()), 1.0);
  for (const auto& slow : s.stragglers.slow_devices)
    for (int r : slow.ranks)
      if (r >= 0 && r < world.size()) eo.slowdown[static_cast<std::size_t>(r)] = slow.factor;
  if (root && s.stragglers.noise != config::NoiseDistribution::kNone)
    err << "note: straggler noise is simulated only; real runs inject the fixed slowdowns\n";
  eo.checkpoint_every = o.checkpoint_every;
  eo.checkpoint_dir =
      (fs::path(o.out_dir.empty() ? s.outputs.dir : o.out_dir) / "checkpoints").string();
  eo.resume = o.resume;
  if (!o.quiet) eo.log = [&out](const std::string& line) { out << line << "\n" << std::flush; };

  const auto data = MakeDataset(graph, o.dataset, s.seed);
  exec::CpuBackend backend;
  if (root)
    out << s.name << ": " << graph.name() << ", " << plan.strategy << ", " << world.size()
        << " rank(s) on " << backend.Name() << ", " << plan.samples_per_iteration
        << " samples per iteration, " << eo.iterations << " iterations\n"
        << std::flush;
  const exec::ExecResult result = ExecutePlan(plan, graph, *data, world, backend, eo);
  if (root) Report(o, s, result, out);
}

}  // namespace dtsim::tools
