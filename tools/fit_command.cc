// `dtsim fit`: constants fitted to a user's measured runs.
#include <cstdio>
#include <CLI/CLI.hpp>
#include <memory>
#include "tools/cli.h"
#include <filesystem>
#include <ostream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/units.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "tools/commands.h"
#include "tools/output_set.h"
#include "validation/fit.h"
#include "validation/fit_constants.h"
#include "validation/measured_runs.h"

namespace dtsim::tools {
namespace {

std::string Percentages(const validation::ErrorSummary& e) {
  char line[160];
  std::snprintf(line, sizeof line,
                "median %.1f%%, mean %.1f%%, max %.1f%% absolute error (%d runs, %d failed)",
                e.median_ape, e.mean_ape, e.max_ape, e.runs, e.failed);
  return line;
}

// framework.yaml's comment: how it was fitted, its held-out error, and
// the fitted transport and input keys, which go in a scenario, not in it.
std::string ProfileComment(const FitOptions& o, const validation::CrossValidation& cv,
                           const std::vector<validation::FitConstant>& constants,
                           const config::Scenario& fitted) {
  std::string comment = "fitted by dtsim fit " + o.csv_path + " --fit " + o.constants + "\n" +
                        "held-out error (" + std::to_string(cv.folds) + "-fold): " +
                        Percentages(cv.after);
  for (const auto* t : {&fitted.cluster.network.transport, &fitted.cluster.network.intra_node_transport}) {
    const bool between = t == &fitted.cluster.network.transport;
    bool named = false;
    for (const validation::FitConstant& c : constants)
      named |= c.name.starts_with(between ? "transport." : "intra_node_transport.");
    if (!named) continue;
    char line[200];
    std::snprintf(line, sizeof line, "{base: %s, per_message: %s, efficiency: %.4g}", t->name.c_str(),
                  FormatSeconds(t->per_message_s).c_str(), t->efficiency);
    comment += std::string("\ntransport fitted: set cluster.network.") +
               (between ? "transport" : "intra_node_transport") + ": " + line;
  }
  if (fitted.workload.input.per_sample_s > 0)
    comment += "\ninput.per_sample fitted: " + FormatSeconds(fitted.workload.input.per_sample_s) +
               " (set it under workload.input)";
  return comment;
}

}  // namespace

void FitCommand(const FitOptions& o, std::ostream& out, std::ostream& err) {
  const std::vector<validation::MeasuredRun> runs = validation::LoadMeasuredRuns(o.csv_path);
  validation::CheckFolds(o.folds, runs.size());  // before any fit
  const std::vector<validation::FitConstant> constants =
      validation::ParseFitConstants(o.constants, runs.front().scenario);
  std::vector<std::string> keys;
  std::vector<double> measured;
  for (const validation::MeasuredRun& r : runs) {
    keys.push_back(r.where);
    measured.push_back(r.measured_step_s);
  }
  const validation::RowPredictor predict = [&](std::size_t i, const std::vector<double>& v) {
    config::Scenario s = runs[i].scenario;
    validation::ApplyFitConstants(constants, v, &s);
    const sim::Prediction p = sim::Simulate(s, {.fast = true});
    if (!p.does_not_fit.empty()) throw InfeasiblePlan(p.does_not_fit);
    return p.metrics.step_time_s;
  };
  validation::FitOptions options;
  options.jobs = o.jobs;
  if (!o.quiet) err << "fitting " << o.constants << " to " << runs.size() << " runs...\n";
  std::vector<std::size_t> all(runs.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const validation::FitResult fit =
      validation::FitConstants(constants, all, measured, predict, options);
  const validation::CrossValidation cv =
      validation::CrossValidate(constants, keys, measured, predict, o.folds, options);
  const std::vector<double>& before = cv.before_s;
  std::vector<double> after(runs.size(), 0);
  std::vector<std::string> fitted_failure(runs.size());
  const validation::ErrorSummary fitted_all =
      validation::ScoreRows(all, measured, predict, fit.values, o.jobs, &after, &fitted_failure);

  config::Scenario fitted = runs.front().scenario;
  validation::ApplyFitConstants(constants, fit.values, &fitted);
  nlohmann::ordered_json j;
  j["runs"] = o.csv_path;
  j["framework_base"] = fitted.workload.framework.name;
  j["evaluations"] = fit.evaluations;
  for (std::size_t i = 0; i < constants.size(); ++i)
    j["constants"].push_back(validation::FitConstantJson(constants[i], fit.values[i]));
  j["before_fit"] = validation::FitErrorsJson(cv.before);
  j["fitted_on_all_runs"] = validation::FitErrorsJson(fitted_all);
  j["cross_validation"] = {{"folds", cv.folds},
                           {"rule", "fold = FNV-1a(file:line) mod folds"},
                           {"held_out", validation::FitErrorsJson(cv.after)},
                           {"fold_values", cv.fold_values}};  // per fold, in the constants' order and units
  // A failed prediction is an empty field; `failure` says why (the first
  // of: before fitting, with the fit, held out).
  std::string csv =
      "run,measured_s,predicted_before_s,predicted_fitted_s,predicted_held_out_s,failure\n";
  std::vector<std::string> failures;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto field = [](double s) {
      if (!(s > 0)) return std::string();
      char text[32];
      std::snprintf(text, sizeof text, "%.6g", s);
      return std::string(text);
    };
    std::string why = cv.before_failure[i];
    if (why.empty()) why = fitted_failure[i];
    if (why.empty()) why = cv.held_out_failure[i];
    if (!why.empty()) failures.push_back(keys[i] + ": not predicted: " + why);
    csv += sim::CsvField(keys[i]) + "," + field(measured[i]) + "," + field(before[i]) + "," +
           field(after[i]) + "," + field(cv.predicted_s[i]) + "," + sim::CsvField(why) + "\n";
  }
  const std::string comment = ProfileComment(o, cv, constants, fitted);
  OutputSet files{std::filesystem::path(o.out_dir)};
  WriteOutput(files, "framework.yaml", config::FrameworkProfileYaml(fitted.workload.framework, comment));
  WriteOutput(files, "fit.json", j.dump(2) + "\n");
  WriteOutput(files, "predictions.csv", csv);
  const auto written = files.Commit();
  for (const std::string& f : failures) err << f << "\n";
  for (std::size_t i = 0; i < constants.size(); ++i) {
    const std::string warning = validation::ImplausibleWarning(constants[i], fit.values[i]);
    if (!warning.empty()) err << "warning: " << warning << "\n";
  }
  if (o.quiet) return;
  for (std::size_t i = 0; i < constants.size(); ++i)
    out << constants[i].name << " = " << validation::FormatFitValue(constants[i], fit.values[i])
        << " (was " << validation::FormatFitValue(constants[i], constants[i].initial) << ")\n";
  // The held-out figure first: it is what to expect on runs the fit has not seen.
  out << "held out (" << cv.folds << "-fold):    " << Percentages(cv.after) << "\n";
  out << "before fitting:        " << Percentages(cv.before) << "\n";
  out << "fitted on all runs:    " << Percentages(fitted_all) << "\n";
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

Command AddFitCommand(CLI::App& app) {
  auto o = std::make_shared<FitOptions>();
  CLI::App* cmd = app.add_subcommand(
      "fit",
      "Fit host-side constants (framework dispatch costs, input cost per sample) to runs "
      "you measured, with a k-fold cross-validated error; writes framework.yaml, "
      "fit.json and predictions.csv");
  cmd->add_option("runs", o->csv_path,
                  "CSV of measured runs: scenario, overrides (optional), step_time or "
                  "throughput (docs/fit.md)")
      ->required();
  cmd->add_option("--fit", o->constants,
                  "Constants to fit, comma-separated: per_op, per_kernel, per_collective, "
                  "per_step, graph_launch, cycle_time, input.per_sample")
      ->required();
  cmd->add_option("--folds", o->folds, "Cross-validation folds (default 5)")
      ->check(CLI::Range(2, 100));
  cmd->add_option("-o,--out", o->out_dir, "Output folder")->capture_default_str();
  AddJobsOption(cmd, &o->jobs, "Runs");
  cmd->add_flag("-q,--quiet", o->quiet, "No summary");
  return {cmd, [o](CommandEnv& env) { FitCommand(*o, env.out, env.err); }};
}

}  // namespace dtsim::tools
