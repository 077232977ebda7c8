#include "tools/exec_command.h"


#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/units.h"
#include "config/device_profile.h"
#include "config/scenario.h"
#include "exec/comm/communicator.h"
#include "exec/comm/solo_communicator.h"
#include "exec/data/binary_dataset.h"
#include "exec/data/idx_dataset.h"
#include "exec/data/shuffled_dataset.h"
#include "exec/data/synthetic_dataset.h"
#include "exec/device_runtime.h"
#include "exec/kernels/cpu_isa.h"
#include "exec/netem/emulated_network.h"
#include "exec/netem/latency_communicator.h"
#include "exec/runtime/measured_window.h"
#include "exec/runtime/model_runtime.h"
#include "exec/runtime/plan_executor.h"
#include "exec/runtime/rank_memory.h"
#include "exec/local_devices.h"
#include "exec/runtime/timeline_trace.h"
#include "report/svg_plot.h"
#include "report/tensorboard.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "tools/commands.h"
#include "tools/exec_scenario.h"
#include "tools/local_run.h"
#include "tools/mpi_launch.h"
#include "tools/output_set.h"

namespace dtsim::tools {
namespace {

// The scheduler handoff of the scenario's device profile; 0 without one.
double HandoffOf(const config::Scenario& s) {
  if (s.cluster.device_profile.empty()) return 0;
  return config::LoadDeviceProfile(s.cluster.device_profile).scheduler_handoff_s;
}

namespace fs = std::filesystem;
using nlohmann::json;

// The CPU kernels a run uses: the portable build with --portable, else the
// fastest one this CPU runs.
exec::CpuIsa CpuIsaOf(const ExecCommandOptions& o) {
  return o.portable ? exec::CpuIsa::kPortable : exec::BestCpuIsa();
}

}  // namespace

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

void CheckExecutable(const config::Scenario& s) {
  const std::string where = s.source_path;
  if (s.parallelism.hybrid.tensor_parallel > 1)
    throw UserError(where + ": tensor parallelism is simulated but not executed for real",
                    "set parallelism.hybrid.tensor_parallel: 1");
  if (s.parallelism.strategy == config::Strategy::kLocalSgd && s.parallelism.post_local_steps > 0 &&
      s.parallelism.averaging == config::AveragingTransport::kParameterServer)
    throw UserError(where + ": post-local SGD over parameter servers is simulated but not "
                            "executed for real",
                    "use parallelism.averaging: all_reduce, or post_local_steps: 0");
  if (s.parallelism.strategy == config::Strategy::kLocalSgd &&
      s.parallelism.averaging_compression != config::AveragingCompression::kNone)
    throw UserError(where + ": compressed averaging is simulated but not executed for real",
                    "set parallelism.averaging_compression: none");
  if (s.parallelism.parameter_server.aggregate_in_machine &&
      (s.parallelism.strategy == config::Strategy::kParameterServer ||
       (s.parallelism.strategy == config::Strategy::kLocalSgd &&
        s.parallelism.averaging == config::AveragingTransport::kParameterServer)))
    throw UserError(where + ": parameter servers with local_aggregation are simulated "
                            "but not executed for real",
                    "set parallelism.parameter_server.local_aggregation: none");
  if (s.parallelism.strategy == config::Strategy::kLocalSgd && s.parallelism.streaming_fragments > 1)
    throw UserError(where + ": streaming averages (parallelism.streaming) are simulated but not "
                            "executed for real",
                    "remove parallelism.streaming");
  if (s.parallelism.strategy == config::Strategy::kHybrid &&
      s.parallelism.hybrid.schedule == config::PipelineSchedule::kPipeDream2BW)
    throw UserError(where + ": schedule pipedream_2bw is simulated but not executed for real",
                    "use schedule gpipe or 1f1b");
  if (s.parallelism.strategy == config::Strategy::kHybrid &&
      s.parallelism.hybrid.schedule == config::PipelineSchedule::kPipeDream)
    throw UserError(where + ": schedule pipedream (weight stashing, replicated stages) is "
                            "simulated but not executed for real",
                    "use schedule gpipe or 1f1b");
  if (s.parallelism.hybrid.virtual_stages > 1)
    throw UserError(where + ": interleaved virtual stages are simulated but not executed for real",
                    "use schedule gpipe or 1f1b");
}

namespace {

struct Summary {
  double step_s = 0, compute_s = 0, comm_s = 0, input_s = 0, throughput = 0;
  int measured = 0;
  exec::MeasuredWindow window;  // the measured iterations (exec/runtime/measured_window.h)
};

// Iteration i's step time: its slowest rank's (the others wait for it).
double SlowestRankSeconds(const exec::ExecResult& r, std::size_t i) {
  double slowest = 0;
  for (const auto& rank : r.times) slowest = std::max(slowest, rank[i].seconds);
  return slowest;
}

// Mean over the measured iterations (MeasuredIterations; `h`: the
// averaging period, 1 without local SGD) of the slowest rank's time, and
// the mean over ranks of compute and communication time.
Summary Summarize(const exec::ExecResult& r, int h) {
  Summary s;
  s.window = exec::MeasuredIterations(static_cast<int>(r.losses.size()),
                                      static_cast<int>(r.first_iteration), h);
  const auto ranks = static_cast<double>(r.times.size());
  for (int i = s.window.from; i < s.window.to; ++i) {
    for (const auto& rank : r.times) {
      const auto& t = rank[static_cast<std::size_t>(i)];
      s.compute_s += t.compute / ranks;
      s.comm_s += t.comm / ranks;
      s.input_s += t.input / ranks;
    }
    s.step_s += SlowestRankSeconds(r, static_cast<std::size_t>(i));
    ++s.measured;
  }
  if (s.measured > 0 && s.step_s > 0) {
    s.step_s /= s.measured;
    s.compute_s /= s.measured;
    s.comm_s /= s.measured;
    s.input_s /= s.measured;
    s.throughput = static_cast<double>(r.samples_per_iteration) / s.step_s;
  }
  return s;
}

double ErrorPercent(double predicted, double measured) {
  return measured > 0 ? 100.0 * (predicted - measured) / measured : 0.0;
}

// One engine's prediction of what was measured.
struct EnginePrediction {
  std::string engine;
  std::string device;
  double step_s = 0, throughput = 0, compute_s = 0, comm_s = 0;
  nlohmann::ordered_json cost_sources;  // sim::CostSourcesJson
};

// `trace` (optional) gets the prediction's timeline (sim's trace.json).
EnginePrediction Predict(const config::Scenario& s, const std::string& engine,
                         std::ostream* trace = nullptr) {
  config::Scenario e = s;
  e.engine = engine;
  // The input pipeline is the analytic engine's alone (sim/simulator.h).
  if (engine == "simgrid") e.workload.input = config::InputPipeline{};
  const sim::Prediction p = sim::Simulate(e);
  if (trace) sim::WriteChromeTrace(*trace, p, s.outputs.trace_max_ranks);
  return {engine,
          p.device.name,
          p.metrics.step_time_s,
          p.metrics.throughput_samples_per_s,
          p.metrics.breakdown.compute_s,
          p.metrics.breakdown.comm_s,
          sim::CostSourcesJson(e, p)};
}

// Measured step time per iteration (the slowest rank) and mean compute per
// rank, against each engine's predicted step time (flat lines).
std::string StepTimeChart(const config::Scenario& s, const exec::ExecResult& r,
                          const std::vector<EnginePrediction>& preds) {
  report::LineChart chart;
  chart.title = s.name + ": measured and predicted step time";
  chart.x.label = "iteration";
  chart.y.label = "seconds";
  report::Series step{"measured step (slowest rank)", {}};
  report::Series compute{"measured compute (mean over ranks)", {}};
  const int n = static_cast<int>(r.losses.size());  // iterations run, from first_iteration
  for (int i = 0; i < n; ++i) {
    double busy = 0;
    for (const auto& rank : r.times)
      busy += rank[static_cast<std::size_t>(i)].compute / static_cast<double>(r.times.size());
    step.points.push_back({static_cast<double>(r.first_iteration + i + 1),
                           SlowestRankSeconds(r, static_cast<std::size_t>(i))});
    compute.points.push_back({static_cast<double>(r.first_iteration + i + 1), busy});
  }
  chart.series = {step, compute};
  for (const EnginePrediction& p : preds)
    chart.series.push_back({"predicted step (" + p.engine + ")",
                            {{static_cast<double>(r.first_iteration + 1), p.step_s},
                             {static_cast<double>(r.first_iteration + n), p.step_s}}});
  return report::RenderLineChart(chart);
}

// TensorBoard's view of the run (report/tensorboard.h): the step log's
// loss, examples/s and seconds per batch (of the slowest rank), the
// learning rate, and each rank's seconds per batch, per step; wall times in
// Unix seconds (the run ended at `end_unix_s`; each step ends where the
// steps after it leave it), as TensorBoard's wall-time axis reads them.
std::string ExecEvents(const exec::ExecResult& r, const exec::LrScheduleOptions& lr,
                       double end_unix_s) {
  const exec::LrSchedule schedule(lr);
  double total = 0;
  for (std::size_t i = 0; i < r.losses.size(); ++i) total += SlowestRankSeconds(r, i);
  double wall = end_unix_s - total;
  report::EventFile events(wall);
  for (std::size_t i = 0; i < r.losses.size(); ++i) {
    const double step_s = SlowestRankSeconds(r, i);
    wall += step_s;
    const std::int64_t step = r.first_iteration + static_cast<std::int64_t>(i) + 1;
    events.AddScalar("loss", step, wall, static_cast<float>(r.losses[i]));
    events.AddScalar("examples_per_sec", step, wall,
                     static_cast<float>(static_cast<double>(r.samples_per_iteration) / step_s));
    events.AddScalar("sec_per_batch", step, wall, static_cast<float>(step_s));
    events.AddScalar("learning_rate", step, wall, static_cast<float>(schedule.At(step - 1)));
    for (std::size_t k = 0; k < r.times.size(); ++k)
      events.AddScalar("rank_" + std::to_string(k) + "/sec_per_batch", step, wall,
                       static_cast<float>(r.times[k][i].seconds));
  }
  // Held-out curves by updates (their wall time: the run's start plus the
  // training time before them).
  for (const exec::EvalPoint& p : r.eval) {
    events.AddScalar("eval/loss", p.updates, end_unix_s - total + p.train_seconds,
                     static_cast<float>(p.loss));
    events.AddScalar("eval/accuracy", p.updates, end_unix_s - total + p.train_seconds,
                     static_cast<float>(p.accuracy));
  }
  return events.bytes();
}

// The held-out evaluations as CSV, one row per evaluation.
std::string EvalCsv(const exec::ExecResult& r) {
  std::ostringstream csv;
  csv << "updates,samples,train_seconds,loss,accuracy\n";
  char row[160];
  for (const exec::EvalPoint& p : r.eval) {
    std::snprintf(row, sizeof row, "%lld,%lld,%.6f,%.6f,%.6f\n", static_cast<long long>(p.updates),
                  static_cast<long long>(p.samples), p.train_seconds, p.loss, p.accuracy);
    csv << row;
  }
  return csv.str();
}

int IterationsAsked(const ExecCommandOptions& o) { return o.iterations > 0 ? o.iterations : 20; }

// Removes the events files that resumed runs added to `dir` (regular files
// named kEventFileName + ".resumed-<step>"; never a link or a folder).
void RemoveResumedEventFiles(const fs::path& dir) {
  std::error_code ec;
  const std::string prefix = std::string(report::kEventFileName) + ".resumed-";
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && e.symlink_status(ec).type() == fs::file_type::regular)
      fs::remove(e.path(), ec);
  }
}

void Report(const ExecCommandOptions& o, const config::Scenario& s, const plan::Plan& plan,
            const models::ModelGraph& graph, const exec::ExecResult& r,
            const std::optional<NetworkSetting>& net, std::ostream& out,
            const exec::LrScheduleOptions& lr) {
  const Summary m = Summarize(r, config::AveragingPeriod(s));
  json j;
  j["scenario"] = s.name;
  j["ranks"] = r.times.size();
  j["backend"] = o.backend;
  if (o.backend == "cpu") {
    j["cpu_kernels"] = exec::CpuIsaName(CpuIsaOf(o));
    j["threads_per_rank"] = o.threads;
  }
  // The iterations this run executed: a resumed run lists only its own,
  // from the step it resumed from, so it never reports the earlier run's
  // iterations as zeros.
  j["iterations"] = r.losses.size();
  j["first_iteration"] = r.first_iteration;
  if (o.resume) j["resumed_from_step"] = r.first_iteration;
  j["samples_per_iteration"] = r.samples_per_iteration;
  j["comm_thread"] = r.overlapped_comm;  // collectives ran beside the backward
  j["measured"] = {{"step_time_s", m.step_s},
                   {"throughput_samples_per_s", m.throughput},
                   {"compute_s", m.compute_s},
                   {"comm_s", m.comm_s},
                   {"input_wait_s", m.input_s},
                   {"iterations_measured", m.measured},
                   {"measured_iterations",
                    {r.first_iteration + m.window.from + 1, r.first_iteration + m.window.to}}};
  j["loss"] = r.losses;
  if (!r.eval.empty()) {
    json points = json::array();
    for (const exec::EvalPoint& p : r.eval)
      points.push_back({{"updates", p.updates},
                        {"samples", p.samples},
                        {"train_seconds", p.train_seconds},
                        {"loss", p.loss},
                        {"accuracy", p.accuracy}});
    j["eval"] = {{"every", o.eval_every},
                 {"samples", o.eval_samples},
                 {"dataset", o.dataset},
                 {"stopped_at_target", static_cast<int>(r.losses.size()) < IterationsAsked(o)},
                 {"points", points}};
  }
  if (r.server_updates > 0) {
    j["parameter_server"] = {{"updates", r.server_updates},
                             {"pushes_applied", r.pushes_applied},
                             {"pushes_dropped", r.pushes_dropped},
                             {"mean_staleness", r.mean_staleness},
                             {"max_staleness", r.max_staleness}};
    json servers = json::array();
    for (const exec::ExecResult::ServerTraffic& t : r.servers)
      servers.push_back({{"rank", t.rank},
                         {"params", t.params},
                         {"push_bytes", t.push_bytes},
                         {"pull_bytes", t.pull_bytes}});
    j["parameter_server"]["per_server"] = servers;
  }
  json per_rank = json::array();
  for (const auto& rank : r.times) {
    json it = json::array();
    for (const auto& t : rank) it.push_back({t.seconds, t.compute, t.comm, t.input});
    per_rank.push_back(it);
  }
  j["per_rank_iterations"] = per_rank;
  j["per_rank_iterations_columns"] = {"seconds", "compute_s", "comm_s", "input_wait_s"};

  char line[200];
  if (r.first_iteration > 0)
    out << "resumed from step " << r.first_iteration << "; ran iterations "
        << r.first_iteration + 1 << ".." << r.first_iteration + static_cast<int>(r.losses.size())
        << "\n";
  out << "measured over " << m.measured << " iteration(s)";
  if (m.window.whole_rounds)
    out << " (iterations " << r.first_iteration + m.window.from + 1 << ".."
        << r.first_iteration + m.window.to << ": whole averaging rounds after the first)";
  else if (m.measured + 1 == static_cast<int>(r.losses.size()))
    out << " (the first run is warm-up)";
  out << ":\n";
  std::snprintf(line, sizeof line,
                "  step time %.4f s, %.1f samples/s, compute %.4f s, comm %.4f s, input wait "
                "%.4f s\n",
                m.step_s, m.throughput, m.compute_s, m.comm_s, m.input_s);
  out << line;
  if (r.server_updates > 0) {
    std::snprintf(line, sizeof line,
                  "  parameter servers: %lld updates, %lld pushes applied, %lld dropped, "
                  "staleness mean %.2f max %lld\n",
                  static_cast<long long>(r.server_updates), static_cast<long long>(r.pushes_applied),
                  static_cast<long long>(r.pushes_dropped), r.mean_staleness,
                  static_cast<long long>(r.max_staleness));
    out << line;
  }

  std::optional<hw::LinkSpec> link;
  if (net) {
    link = EmulatedLink(*net, o.network);
    j["network"] = {{"rate_bytes_per_s", net->rate_bytes_per_s},
                    {"latency_s", net->latency_s},
                    {"latency_added_by", net->latency_s == 0        ? "none"
                                         : o.latency_in_transport ? "transport"
                                                                  : "netem"},
                    {"predicted_link_bw_bytes_per_s", link->bw_bytes_per_s}};
  }
  const fs::path dir = o.out_dir.empty() ? fs::path(s.outputs.dir) : fs::path(o.out_dir);
  OutputSet files(dir);
  if (o.validate) {
    // Collectives overlapped the backward where they ran on the ranks' comm
    // threads (CPU ranks of plans without transfers, ExecOptions::comm_thread)
    // and the plan let them; elsewhere a rank ran compute and communication
    // on one thread, one after the other: predict without overlap.
    config::Scenario ps = s;
    ps.parallelism.overlap = s.parallelism.overlap && r.overlapped_comm;
    if (link) UseEmulatedLink(*link, &ps);
    // The scenario's engine; under an emulated network both engines.
    auto predicted_trace = files.Open("predicted_trace.json");
    std::vector<EnginePrediction> preds = {Predict(ps, ps.engine, &predicted_trace)};
    CloseOutput(predicted_trace, "predicted_trace.json");
    if (net) preds.push_back(Predict(ps, ps.engine == "simgrid" ? "analytic" : "simgrid"));
    const bool overlap = ps.parallelism.overlap;
    auto predicted = [overlap](const EnginePrediction& p) {
      return json{{"step_time_s", p.step_s},
                  {"throughput_samples_per_s", p.throughput},
                  {"compute_s", p.compute_s},
                  {"comm_s", p.comm_s},
                  {"device", p.device},
                  {"engine", p.engine},
                  {"overlap", overlap}};
    };
    auto errors = [&m](const EnginePrediction& p) {
      return json{{"step_time", ErrorPercent(p.step_s, m.step_s)},
                  {"throughput", ErrorPercent(p.throughput, m.throughput)},
                  {"compute", ErrorPercent(p.compute_s, m.compute_s)},
                  {"comm", ErrorPercent(p.comm_s, m.comm_s)}};
    };
    j["predicted"] = predicted(preds[0]);
    j["error_percent"] = errors(preds[0]);
    std::string sources;  // where the prediction's compute came from
    if (!preds[0].cost_sources.is_null()) {
      j["cost_sources"] = preds[0].cost_sources;
      char buf[160];
      const auto& c = preds[0].cost_sources;
      std::snprintf(buf, sizeof buf, "measured %.1f%%, interpolated %.1f%%, modelled %.1f%%",
                    100 * c["measured_share"].get<double>(),
                    100 * c["interpolated_share"].get<double>(),
                    100 * c["modelled_share"].get<double>());
      sources = "Compute priced from the op-cost table " + s.workload.cost_table + ": " + buf + ".\n\n";
    }
    if (preds.size() > 1) {
      for (const EnginePrediction& p : preds) {
        j["predicted_by_engine"][p.engine] = predicted(p);
        j["error_percent_by_engine"][p.engine] = errors(p);
      }
    }
    std::string table = "| quantity |";
    std::string rule = "|---|";
    for (const EnginePrediction& p : preds) {
      table += " predicted (" + p.engine;
      table += ") |";
      rule += "---:|";
    }
    table += " measured |";
    rule += "---:|";
    for (const EnginePrediction& p : preds) {
      table += " error (" + p.engine;
      table += ") |";
      rule += "---:|";
    }
    table += "\n" + rule;
    table += "\n";
    auto row = [&](const char* name, double EnginePrediction::*field, double mv, const char* fmt) {
      char buf[64];
      table += "| ";
      table += name;
      table += " |";
      for (const EnginePrediction& p : preds) {
        std::snprintf(buf, sizeof buf, fmt, p.*field);
        table += " ";
        table += buf;
        table += " |";
      }
      std::snprintf(buf, sizeof buf, fmt, mv);
      table += " ";
      table += buf;
      table += " |";
      for (const EnginePrediction& p : preds) {
        // Under a millisecond measured, a percentage says nothing.
        const bool tiny = field != &EnginePrediction::throughput && mv < 1e-3;
        std::snprintf(buf, sizeof buf, " %+.1f%% |", ErrorPercent(p.*field, mv));
        table += tiny ? std::string(" n/a |") : std::string(buf);
      }
      table += "\n";
    };
    row("step time (s)", &EnginePrediction::step_s, m.step_s, "%.4f");
    row("throughput (samples/s)", &EnginePrediction::throughput, m.throughput, "%.1f");
    row("compute per rank (s)", &EnginePrediction::compute_s, m.compute_s, "%.4f");
    // Measured communication includes waiting for the other ranks (their
    // skew, the pipeline's bubble); the simulator's is transfer time only.
    row("communication per rank (s; measured with waiting)", &EnginePrediction::comm_s, m.comm_s,
        "%.4f");
    std::string setting = preds[0].device;
    if (link) {
      setting += "; emulated network " + o.network;
      setting += " per direction (links of " + FormatBandwidth(link->bw_bytes_per_s);
      setting += " TCP goodput, latency " + FormatSeconds(link->latency_s);
      setting += ")";
    }
    out << "\nprediction (" << setting << (overlap ? ", comm overlapped" : ", no overlap")
        << ") against measurement:\n" << table;
    const unsigned cores = std::thread::hardware_concurrency();
    j["cores"] = cores;
    const double handoff = HandoffOf(s);
    if (cores > 0 && r.times.size() > cores)
      out << "note: " << r.times.size() << " ranks share " << cores
          << " cores: the prediction gives each rank " << cores << "/" << r.times.size()
          << " of the profiled core's compute rate and memory bandwidth"
          << (handoff > 0 ? ", and every message the profile's scheduler handoff (" +
                                FormatSeconds(handoff) + ")"
                          : std::string())
          << "\n";
    auto md = files.Open("validation.md");
    md << "# " << s.name << ": prediction against real execution\n\n"
       << r.times.size() << " ranks, " << m.measured << " measured iterations of "
       << r.samples_per_iteration << " samples; device " << setting << ".\n\n"
       << sources << table << "\n![step time per iteration](validation.svg)\n";
    CloseOutput(md, "validation.md");
    auto svg = files.Open("validation.svg");
    svg << StepTimeChart(s, r, preds);
    CloseOutput(svg, "validation.svg");
  }
  if (!r.timeline.empty()) {
    // The measured timeline, laid out like the simulator's trace.json.
    auto trace = files.Open("exec_trace.json");
    exec::WriteTimelineTrace(trace, plan, graph, r.timeline);
    CloseOutput(trace, "exec_trace.json");
  }
  // A resumed run adds its steps in a file of its own beside the earlier
  // run's (TensorBoard reads every events file of a folder, as it does the
  // files TensorFlow adds after a restart); a fresh run replaces them all.
  const std::string events_name =
      r.first_iteration > 0 ? std::string(report::kEventFileName) + ".resumed-" +
                                  std::to_string(r.first_iteration)
                            : std::string(report::kEventFileName);
  if (r.first_iteration == 0) RemoveResumedEventFiles(dir);
  const double now_unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  WriteOutput(files, events_name, ExecEvents(r, lr, now_unix_s));
  if (!r.eval.empty()) WriteOutput(files, "eval.csv", EvalCsv(r));
  auto f = files.Open(o.validate ? "validation.json" : "exec.json");
  f << j.dump(2) << "\n";
  CloseOutput(f, "exec.json");
  for (const auto& path : files.Commit()) out << "wrote " << path.string() << "\n";
}

// What ExecutePlan runs with, for `ranks` processes.
exec::ExecOptions MakeExecOptions(const ExecCommandOptions& o, const config::Scenario& s,
                                  int ranks) {
  exec::ExecOptions eo;
  eo.iterations = o.iterations > 0 ? o.iterations : 20;
  eo.mpi_allreduce = o.mpi_allreduce;
  eo.input_threads = o.input_threads >= 0 ? o.input_threads
                     : o.backend == "cuda" ? kCudaInputThreads
                                           : 0;
  eo.optimizer = OptimizerFor(s, o.learning_rate);
  if (o.lr_decay_rate > 0) {
    if (o.lr_decay_steps < 1)
      throw UserError("--lr-decay-rate needs --lr-decay-steps (steps per factor)",
                      "e.g. --lr-decay-rate 0.1 --lr-decay-steps 1000");
    eo.optimizer.lr.kind = exec::LrScheduleKind::kExponential;
    eo.optimizer.lr.decay_rate = o.lr_decay_rate;
    eo.optimizer.lr.decay_steps = o.lr_decay_steps;
    eo.optimizer.lr.staircase = !o.lr_smooth;
  }
  if (o.lr_warmup_steps < 0)
    throw UserError("--lr-warmup-steps must be >= 0", "give the steps of linear warm-up");
  eo.optimizer.lr.warmup_steps = o.lr_warmup_steps;
  if (o.eval_every < 0 || o.eval_samples < 0 || o.stop_at_loss < 0 || o.stop_at_accuracy < 0 ||
      o.stop_at_accuracy > 1)
    throw UserError("--eval-every and --eval-samples must be >= 0, --stop-at-loss >= 0 and "
                    "--stop-at-accuracy in [0, 1]",
                    "e.g. --eval-every 20 --eval-samples 2000 --stop-at-accuracy 0.85");
  if ((o.stop_at_accuracy > 0 || o.stop_at_loss > 0 || o.eval_samples > 0) && o.eval_every == 0)
    throw UserError("--stop-at-accuracy, --stop-at-loss and --eval-samples need --eval-every N",
                    "evaluate every N iterations");
  eo.eval_every = o.eval_every;
  eo.stop_at_accuracy = o.stop_at_accuracy;
  eo.stop_at_loss = o.stop_at_loss;
  eo.seed = s.seed;
  eo.slowdown.assign(static_cast<std::size_t>(ranks), 1.0);
  for (const auto& slow : s.stragglers.slow_devices)
    for (int r : slow.ranks)
      if (r >= 0 && r < ranks) eo.slowdown[static_cast<std::size_t>(r)] = slow.factor;
  eo.checkpoint_every = o.checkpoint_every;
  eo.checkpoint_dir =
      (fs::path(o.out_dir.empty() ? s.outputs.dir : o.out_dir) / "checkpoints").string();
  eo.resume = o.resume;
  eo.record_timeline = true;
  return eo;
}

// Bytes of memory this machine can give a new process now: MemAvailable of
// /proc/meminfo (the kernel's estimate of what can be allocated without
// swapping); 0 when unknown.
double AvailableMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

// Refuses (InfeasiblePlan) a run whose ranks, all on this machine, need
// more memory than it has: host memory for the CPU backend, each GPU's for
// CUDA (rank r on GPU r mod GPUs). Called before any rank starts.
void CheckMemory(const ExecCommandOptions& o, const config::Scenario& s, const plan::Plan& plan,
                 const models::ModelGraph& graph, int ranks) {
  const exec::ExecOptions eo = MakeExecOptions(o, s, ranks);
  std::vector<exec::RankMemory> per_rank;
  for (plan::RankId r = 0; r < plan.num_ranks(); ++r)
    per_rank.push_back(exec::EstimateRankMemory(plan, graph, eo, r));
  auto describe = [&](const std::vector<int>& ranks_in, double need, double have,
                      const std::string& what) {
    exec::RankMemory sum;
    for (int r : ranks_in) {
      const exec::RankMemory& m = per_rank[static_cast<std::size_t>(r)];
      sum.parameters += m.parameters;
      sum.optimizer += m.optimizer;
      sum.activations += m.activations;
      sum.checkpoint += m.checkpoint;
    }
    std::string msg = "the run needs about " + FormatBytes(need) + " of " + what + " (" +
                      std::to_string(ranks_in.size()) + " rank(s): parameters and gradients " +
                      FormatBytes(sum.parameters) + ", optimizer state " +
                      FormatBytes(sum.optimizer) + ", activations " +
                      FormatBytes(sum.activations);
    if (sum.checkpoint > 0) msg += ", checkpoint copies " + FormatBytes(sum.checkpoint);
    msg += ") but has " + FormatBytes(have);
    throw InfeasiblePlan(SourceLocation{s.source_path}, msg,
                         "lower workload.batch_per_device or the micro-batch size, use a "
                         "smaller model, or split it over more ranks");
  };
  if (o.backend == "cuda") {
    const std::vector<hw::DeviceSpec> gpus = exec::LocalGpus();
    if (gpus.empty()) return;  // the run reports the missing GPU itself
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      std::vector<int> on;
      double need = 0;
      for (int r = 0; r < plan.num_ranks(); ++r)
        if (static_cast<std::size_t>(r) % gpus.size() == g) {
          on.push_back(r);
          need += per_rank[static_cast<std::size_t>(r)].total();
        }
      if (need > gpus[g].memory_bytes)
        describe(on, need, gpus[g].memory_bytes, "memory on GPU " + std::to_string(g) + " (" +
                                                     gpus[g].name + ")");
    }
    return;
  }
  const double available = AvailableMemoryBytes();
  double need = 0;
  std::vector<int> all;
  for (int r = 0; r < plan.num_ranks(); ++r) {
    all.push_back(r);
    need += per_rank[static_cast<std::size_t>(r)].total();
  }
  if (available > 0 && need > available)
    describe(all, need, available, "memory on this machine (MemAvailable in /proc/meminfo)");
}

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
  const std::string runs = exec::MakeCpuBackend(CpuIsaOf(o))->Name();
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
  const std::string kind = SyntheticKindOf(graph);
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

}  // namespace

void ExecCommand(const ExecCommandOptions& o, exec::Communicator* comm, std::ostream& out,
                 std::ostream& err) {
  if (o.backend != "cpu" && o.threads != 1)
    throw UserError("--threads sets the CPU backend's kernel threads; --backend " + o.backend +
                        " runs its kernels on the device",
                    "drop --threads, or use --backend cpu");
  config::Scenario s = config::LoadScenario(o.scenario_path);
  CheckExecutable(s);
  const models::ModelGraph graph = config::BuildWorkloadModel(s);
  if (const std::string why = exec::ModelRuntime::UnsupportedOps(graph); !why.empty())
    throw UserError(o.scenario_path + ": " + why, "dtsim run simulates this model");
  config::Scenario plan_scenario = s;
  const bool local_sgd = s.parallelism.strategy == config::Strategy::kLocalSgd;
  // One plan iteration (H with local SGD) is replayed for every real one.
  plan_scenario.workload.iterations = local_sgd ? s.parallelism.averaging_period + 1 : 1;
  const plan::Plan plan = sim::MakePlan(plan_scenario, graph, 0);
  // One process per plan rank: the devices, and parameter servers.
  const int needed = plan.num_ranks();
  const std::optional<NetworkSetting> net = ParseNetwork(o.network, o.latency);
  if (comm == nullptr) {
    const int ranks = o.ranks > 0 ? o.ranks : needed;
    // Every rank runs on this machine: check that they fit before starting
    // any (ranks started by hand under mpirun do not check).
    if (ranks == needed) CheckMemory(o, s, plan, graph, ranks);
    if (net) {
      RunInEmulatedNetwork(o, *net, ranks, err);
      return;
    }
    if (ranks > 1) {
      RunUnderMpiLauncher(ranks, RelaunchArgs(o), err);
      return;
    }
  }
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
  const bool root = world.rank() == 0;
  if (world.size() != needed)
    throw UserError(s.source_path + ": the scenario's plan has " + std::to_string(needed) +
                        " ranks (" + std::to_string(s.cluster.num_devices()) + " devices" +
                        (needed > s.cluster.num_devices() ? " and parameter servers" : "") +
                        ") but " + std::to_string(world.size()) + " processes run it",
                    "run with --ranks " + std::to_string(needed) + " (one process per rank)");
  exec::ExecOptions eo = MakeExecOptions(o, s, world.size());
  if (o.validate) {
    UseProfile(o, comm, &s, out, err);
    if (!o.cost_table.empty()) UseCostTable(o, exec::MakeCpuBackend(CpuIsaOf(o))->Name(), &s);
    // The profile the loader or UseProfile applied, read once.
    std::optional<config::DeviceProfile> profile;
    if (!s.cluster.device_profile.empty())
      profile = config::LoadDeviceProfile(s.cluster.device_profile);
    const config::DeviceProfile* measured = profile ? &*profile : nullptr;
    // Each rank's kernel threads compete for the cores too.
    ShareCores(world.size() * o.threads, measured, &s);
    UseInputDraw(o, graph, world.size(), eo.input_threads, measured, &s);
  }

  if (root && s.stragglers.noise != config::NoiseDistribution::kNone)
    err << "note: straggler noise is simulated only; real runs inject the fixed slowdowns\n";
  if (!o.quiet) eo.log = [&out](const std::string& line) { out << line << "\n" << std::flush; };
  eo.warn = [&err, &world](const std::string& line) {
    // One write, so that ranks sharing the terminal do not interleave.
    err << ("dtsim: rank " + std::to_string(world.rank()) + ": warning: " + line + "\n")
        << std::flush;
  };

  const auto data = MakeDataset(graph, o.dataset, s.seed);
  std::unique_ptr<exec::Dataset> eval_data;
  if (eo.eval_every > 0) {
    eval_data = MakeEvalDataset(graph, o.dataset);
    eo.eval_data = eval_data.get();
    eo.eval_samples = o.eval_samples > 0 ? std::min(o.eval_samples, eval_data->size())
                                         : eval_data->size();
  }
  const std::unique_ptr<exec::Backend> cpu =
      o.backend == "cpu" ? exec::MakeCpuBackend(CpuIsaOf(o), o.threads) : nullptr;
  exec::DeviceRuntime device;
  if (o.backend == "cuda") {
    if (o.validate)
      throw UserError("validate runs on the CPU backend: its device profile measures the CPU",
                      "use dtsim exec --backend cuda to run on GPUs");
    device = exec::MakeCudaRuntime(world);
    // Ranks time-sharing a GPU wait after each task: with device marks, a
    // task's time took in the other process's time slices (an H100 shared
    // by a 2-stage CIFAR-10 pipeline: 28.5 ms per step against 15.9).
    if (device.shares_device) eo.task_timing = exec::TaskTiming::kWaitEach;
    // NCCL carries all-reduces over every rank; other groups go through MPI,
    // and so does everything with parallelism.aggregation: host (copied to
    // host memory, summed there by MPI, copied back).
    if (!s.parallelism.aggregate_on_host) {
      eo.device_all_reduce = [&device, &world](float* buffer, std::int64_t count,
                                               const std::vector<int>& group) {
        if (!device.all_reduce || static_cast<int>(group.size()) != world.size()) return false;
        device.all_reduce->Sum(buffer, count);
        return true;
      };
    }
  }
  exec::Backend& backend = device.backend ? *device.backend : *cpu;
  if (root)
    out << s.name << ": " << graph.name() << ", " << plan::StrategyName(plan.strategy) << ", "
        << world.size()
        << " rank(s) on " << backend.Name()
        << (o.backend == "cpu" && o.threads > 1 ? " x " + std::to_string(o.threads) + " threads"
                                                : std::string())
        << ", " << plan.samples_per_iteration
        << " samples per iteration, " << eo.iterations << " iterations\n"
        << std::flush;
  const exec::ExecResult result = ExecutePlan(plan, graph, *data, world, backend, eo);
  if (root) Report(o, s, plan, graph, result, net, out, eo.optimizer.lr);
}

}  // namespace dtsim::tools
