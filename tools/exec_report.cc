#include "tools/exec_report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/units.h"
#include "config/device_profile.h"
#include "exec/runtime/measured_window.h"
#include "exec/runtime/timeline_trace.h"
#include "exec/scenario_run.h"
#include "report/svg_plot.h"
#include "report/tensorboard.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "tools/output_set.h"

namespace dtsim::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The scheduler handoff of the scenario's device profile; 0 without one.
double HandoffOf(const config::Scenario& s) {
  if (s.cluster.device_profile.empty()) return 0;
  return config::LoadDeviceProfile(s.cluster.device_profile).scheduler_handoff_s;
}

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

// exec.json's account of the run: what ran, the measured means `m`, the
// losses and every rank's times per iteration.
json RunJson(const ExecCommandOptions& o, const exec::ExecResult& r, const Summary& m) {
  json j;
  j["ranks"] = r.times.size();
  j["backend"] = o.backend;
  if (o.backend == "cpu") {
    j["cpu_kernels"] = exec::CpuIsaName(exec::CpuIsaOf(o));
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
  json per_rank = json::array();
  for (const auto& rank : r.times) {
    json it = json::array();
    for (const auto& t : rank) it.push_back({t.seconds, t.compute, t.comm, t.input});
    per_rank.push_back(it);
  }
  j["per_rank_iterations"] = per_rank;
  j["per_rank_iterations_columns"] = {"seconds", "compute_s", "comm_s", "input_wait_s"};
  return j;
}

// exec.json's "eval": the held-out evaluations and what they were asked.
json EvalJson(const ExecCommandOptions& o, const exec::ExecResult& r) {
  json points = json::array();
  for (const exec::EvalPoint& p : r.eval)
    points.push_back({{"updates", p.updates},
                      {"samples", p.samples},
                      {"train_seconds", p.train_seconds},
                      {"loss", p.loss},
                      {"accuracy", p.accuracy}});
  return {{"every", o.eval_every},
          {"samples", o.eval_samples},
          {"dataset", o.dataset},
          {"stopped_at_target", static_cast<int>(r.losses.size()) < exec::IterationsAsked(o)},
          {"points", points}};
}

// exec.json's "parameter_server": the servers' updates, staleness and
// traffic.
json ParameterServerJson(const exec::ExecResult& r) {
  json j = {{"updates", r.server_updates},
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
  j["per_server"] = servers;
  return j;
}

// The measured means, as the step log's last lines.
void PrintMeasured(const exec::ExecResult& r, const Summary& m, std::ostream& out) {
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
}

// exec.json's "network": the emulated network and the link predicted for it.
json NetworkJson(const ExecCommandOptions& o, const NetworkSetting& net, const hw::LinkSpec& link) {
  return {{"rate_bytes_per_s", net.rate_bytes_per_s},
          {"latency_s", net.latency_s},
          {"latency_added_by", net.latency_s == 0        ? "none"
                               : o.latency_in_transport ? "transport"
                                                        : "netem"},
          {"predicted_link_bw_bytes_per_s", link.bw_bytes_per_s}};
}

// validate's predictions of the run: the scenario's engine first (its
// timeline to predicted_trace.json in `files`), then under an emulated
// network the other engine too.
struct Predictions {
  std::vector<EnginePrediction> engines;
  bool overlap = false;  // whether they let communication overlap the backward
};

Predictions PredictRun(const config::Scenario& s, const exec::ExecResult& r,
                       const std::optional<hw::LinkSpec>& link, OutputSet& files) {
  // Collectives overlapped the backward where they ran on the ranks' comm
  // threads (CPU ranks of plans without transfers, ExecOptions::comm_thread)
  // and the plan let them; elsewhere a rank ran compute and communication
  // on one thread, one after the other: predict without overlap.
  config::Scenario ps = s;
  ps.parallelism.overlap = s.parallelism.overlap && r.overlapped_comm;
  if (link) UseEmulatedLink(*link, &ps);
  auto predicted_trace = files.Open("predicted_trace.json");
  Predictions p;
  p.engines = {Predict(ps, ps.engine, &predicted_trace)};
  CloseOutput(predicted_trace, "predicted_trace.json");
  if (link) p.engines.push_back(Predict(ps, ps.engine == "simgrid" ? "analytic" : "simgrid"));
  p.overlap = ps.parallelism.overlap;
  return p;
}

// validation.json's prediction and its errors against the measured `m`
// (per engine too when there are several).
void AddPredictionJson(const Predictions& preds, const Summary& m, json* j) {
  const bool overlap = preds.overlap;
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
  const EnginePrediction& first = preds.engines[0];
  (*j)["predicted"] = predicted(first);
  (*j)["error_percent"] = errors(first);
  if (!first.cost_sources.is_null()) (*j)["cost_sources"] = first.cost_sources;
  if (preds.engines.size() > 1) {
    for (const EnginePrediction& p : preds.engines) {
      (*j)["predicted_by_engine"][p.engine] = predicted(p);
      (*j)["error_percent_by_engine"][p.engine] = errors(p);
    }
  }
}

// validation.md's sentence on where the prediction's compute came from;
// "" when not from an op-cost table.
std::string CostSourcesLine(const config::Scenario& s, const EnginePrediction& p) {
  if (p.cost_sources.is_null()) return "";
  char buf[160];
  const auto& c = p.cost_sources;
  std::snprintf(buf, sizeof buf, "measured %.1f%%, interpolated %.1f%%, modelled %.1f%%",
                100 * c["measured_share"].get<double>(),
                100 * c["interpolated_share"].get<double>(),
                100 * c["modelled_share"].get<double>());
  return "Compute priced from the op-cost table " + s.workload.cost_table + ": " + buf + ".\n\n";
}

// The Markdown table of each engine's prediction, the measurement and the
// errors, one row per quantity.
std::string ComparisonTable(const std::vector<EnginePrediction>& preds, const Summary& m) {
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
  return table;
}

// The device the prediction priced, and the emulated link when there is one.
std::string DeviceSetting(const EnginePrediction& p, const std::optional<hw::LinkSpec>& link,
                          const std::string& network) {
  std::string setting = p.device;
  if (link) {
    setting += "; emulated network " + network;
    setting += " per direction (links of " + FormatBandwidth(link->bw_bytes_per_s);
    setting += " TCP goodput, latency " + FormatSeconds(link->latency_s);
    setting += ")";
  }
  return setting;
}

// Says when the ranks outnumbered the cores, and how the prediction took
// that into account; records the cores in validation.json.
void NoteSharedCores(const config::Scenario& s, const exec::ExecResult& r, json* j,
                     std::ostream& out) {
  const unsigned cores = std::thread::hardware_concurrency();
  (*j)["cores"] = cores;
  const double handoff = HandoffOf(s);
  if (cores > 0 && r.times.size() > cores)
    out << "note: " << r.times.size() << " ranks share " << cores
        << " cores: the prediction gives each rank " << cores << "/" << r.times.size()
        << " of the profiled core's compute rate and memory bandwidth"
        << (handoff > 0 ? ", and every message the profile's scheduler handoff (" +
                              FormatSeconds(handoff) + ")"
                        : std::string())
        << "\n";
}

// validate: predicts the run, prints the comparison and writes
// validation.md and validation.svg into `files`, the prediction into `j`.
void WriteValidation(const ExecCommandOptions& o, const config::Scenario& s,
                     const exec::ExecResult& r, const Summary& m,
                     const std::optional<hw::LinkSpec>& link, OutputSet& files, json* j,
                     std::ostream& out) {
  const Predictions preds = PredictRun(s, r, link, files);
  AddPredictionJson(preds, m, j);
  const std::string sources = CostSourcesLine(s, preds.engines[0]);
  const std::string table = ComparisonTable(preds.engines, m);
  const std::string setting = DeviceSetting(preds.engines[0], link, o.network);
  out << "\nprediction (" << setting << (preds.overlap ? ", comm overlapped" : ", no overlap")
      << ") against measurement:\n" << table;
  NoteSharedCores(s, r, j, out);
  auto md = files.Open("validation.md");
  md << "# " << s.name << ": prediction against real execution\n\n"
     << r.times.size() << " ranks, " << m.measured << " measured iterations of "
     << r.samples_per_iteration << " samples; device " << setting << ".\n\n"
     << sources << table << "\n![step time per iteration](validation.svg)\n";
  CloseOutput(md, "validation.md");
  auto svg = files.Open("validation.svg");
  svg << StepTimeChart(s, r, preds.engines);
  CloseOutput(svg, "validation.svg");
}

// The measured timeline, TensorBoard's events and eval.csv, into `files`
// (the output folder `dir`).
void WriteRunFiles(const plan::Plan& plan, const models::ModelGraph& graph,
                   const exec::ExecResult& r, const exec::LrScheduleOptions& lr,
                   const fs::path& dir, OutputSet& files) {
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
}

}  // namespace

void ReportExecRun(const ExecCommandOptions& o, const config::Scenario& s, const plan::Plan& plan,
                   const models::ModelGraph& graph, const exec::ExecResult& r,
                   const std::optional<NetworkSetting>& net, const exec::LrScheduleOptions& lr,
                   std::ostream& out) {
  const Summary m = Summarize(r, config::AveragingPeriod(s));
  json j = RunJson(o, r, m);
  j["scenario"] = s.name;
  if (!r.eval.empty()) j["eval"] = EvalJson(o, r);
  if (r.server_updates > 0) j["parameter_server"] = ParameterServerJson(r);
  PrintMeasured(r, m, out);
  std::optional<hw::LinkSpec> link;
  if (net) {
    link = EmulatedLink(*net, o.network);
    j["network"] = NetworkJson(o, *net, *link);
  }
  const fs::path dir = exec::OutputDirOf(o, s);
  OutputSet files(dir);
  if (o.validate) WriteValidation(o, s, r, m, link, files, &j, out);
  WriteRunFiles(plan, graph, r, lr, dir, files);
  auto f = files.Open(o.validate ? "validation.json" : "exec.json");
  f << j.dump(2) << "\n";
  CloseOutput(f, "exec.json");
  for (const auto& path : files.Commit()) out << "wrote " << path.string() << "\n";
}

}  // namespace dtsim::tools
