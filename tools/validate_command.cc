// `dtsim validate vtrain`: predicts every measured run of vTrain's data and
// reports how far the predictions are (validation/). `dtsim validate
// deepbench` does the same for DeepBench's GEMM, convolution and
// recurrent-layer kernels.
#include <algorithm>
#include <CLI/CLI.hpp>
#include <memory>
#include "tools/cli.h"
#include <unistd.h>
#include "tools/exec_command.h"
#include <chrono>
#include <cstdio>
#include <map>
#include <filesystem>
#include <optional>
#include <ostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/error.h"
#include "common/units.h"
#include "hw/catalog.h"
#include "tools/commands.h"
#include "tools/output_set.h"
#include "tools/progress_bar.h"
#include "validation/deepbench.h"
#include "validation/deepbench_fit.h"
#include "validation/accuracy.h"
#include "validation/allreduce.h"
#include "validation/allreduce_report.h"
#include "validation/deepbench_report.h"
#include "common/yaml_reader.h"
#include "validation/fit.h"
#include "validation/fit_constants.h"
#include "validation/vtrain.h"
#include "validation/vtrain_predict.h"
#include "validation/vtrain_report.h"

namespace dtsim::tools {
namespace {

std::string ErrorLine(const char* group, const validation::ErrorSummary& e) {
  char line[160];
  if (e.predicted == 0) {
    std::snprintf(line, sizeof line, "%-12s %6d %7d %8s %7s %7s %8s\n", group, e.runs, e.failed,
                  "-", "-", "-", "-");
  } else {
    std::snprintf(line, sizeof line, "%-12s %6d %7d %8.1f %7.1f %7.1f %+8.1f\n", group, e.runs,
                  e.failed, e.median_ape, e.mean_ape, e.max_ape, e.mean_signed_pe);
  }
  return line;
}

void DeepbenchCommand(const ValidateOptions& o, std::ostream& out, std::ostream& err) {
  const std::vector<validation::DeepbenchMeasurement> rows = validation::LoadDeepbench(o.data_dir);
  const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  const sim::GpuKernelParams shipped;
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto started = std::chrono::steady_clock::now();
  if (!o.quiet) err << "deepbench: fitting the constants without each GPU in turn...\n";
  const std::vector<validation::HeldOutFit> folds =
      validation::FitLeaveOneGpuOut(rows, catalog, jobs);
  std::string fitted = "# shipped (sim::GpuKernelParams)\n" + validation::ParamsAsText(shipped);
  std::map<std::string, sim::GpuKernelModel> held_out, models;
  for (const validation::HeldOutFit& f : folds) {
    held_out.emplace(f.gpu, validation::DeepbenchModel(catalog, f.gpu, f.params));
    models.emplace(f.gpu, validation::DeepbenchModel(catalog, f.gpu, shipped));
    fitted += "\n# fitted without " + f.gpu + "\n" + validation::ParamsAsText(f.params);
  }
  // What a refit on every row gives, to compare with the shipped constants.
  const sim::GpuKernelParams refit = validation::FitKernelParams(rows, catalog);
  fitted += "\n# refitted on every row now (the shipped constants should match)\n" +
            validation::ParamsAsText(refit);

  std::vector<validation::DeepbenchResult> results;
  for (const validation::DeepbenchMeasurement& m : rows) {
    validation::DeepbenchResult r;
    r.measurement = &m;
    r.shipped = validation::PredictDeepbench(models.at(m.gpu), m);
    r.held_out_s = validation::PredictDeepbench(held_out.at(m.gpu), m).predicted_s;
    r.roofline_s = validation::RooflineDeepbench(models.at(m.gpu).device(), m);
    results.push_back(std::move(r));
  }
  const std::vector<validation::DeepbenchSlice> slices = validation::SummarizeDeepbench(results);
  OutputSet files{std::filesystem::path(o.out_dir)};
  WriteOutput(files, "predictions.csv", validation::DeepbenchPredictionsCsv(results));
  WriteOutput(files, "summary.json", validation::DeepbenchSummaryJson(slices, results));
  WriteOutput(files, "summary.md", validation::DeepbenchSummaryMarkdown(slices, results, fitted));
  WriteOutput(files, "scatter.svg", validation::DeepbenchScatterSvg(results));
  const auto written = files.Commit();
  if (o.quiet) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  char line[200];
  std::snprintf(line, sizeof line, "deepbench: %zu kernels in %.1f s\n", rows.size(), seconds);
  err << line;
  out << "kernel                  rows  held-out median/mean/max %   model median/mean/max %   "
         "roofline median/mean %\n";
  for (const validation::DeepbenchSlice& s : slices) {
    if (s.gpu != "all") continue;
    std::snprintf(line, sizeof line, "%-22s %5d %9.1f %6.1f %7.0f %13.1f %6.1f %6.0f %12.1f %7.1f\n",
                  s.kernel.c_str(), s.shipped.predicted, s.held_out.median_ape,
                  s.held_out.mean_ape, s.held_out.max_ape, s.shipped.median_ape,
                  s.shipped.mean_ape, s.shipped.max_ape, s.roofline.median_ape,
                  s.roofline.mean_ape);
    out << line;
  }
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

// Per-generation values of `from`'s generation copied onto `arch` of `p`.
sim::GpuKernelParams WithGenerationValues(sim::GpuKernelParams p, std::size_t arch,
                                          std::size_t from) {
  for (auto* a : {&p.simt_fraction_by_arch, &p.tensor_fraction_by_arch,
                  &p.simt_half_reuse_by_arch, &p.winograd_fraction_by_arch,
                  &p.dgrad_fraction_by_arch, &p.wgrad_fraction_by_arch})
    (*a)[arch] = (*a)[from];
  return p;
}

// `dtsim validate kernels`: a generation DeepBench lacks, fitted on its own
// rows (FitGenerationParams), scored 2-fold by layer.
void KernelsCommand(const ValidateOptions& o, std::ostream& out, std::ostream& err) {
  const std::vector<validation::DeepbenchMeasurement> rows = validation::LoadDeepbench(o.data_dir);
  if (rows.empty()) throw UserError(SourceLocation{o.data_dir}, "no kernel rows", "");
  const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  const sim::GpuKernelParams shipped;
  // Folds by file and line: a layer's passes (one conv.csv line) stay together.
  std::vector<validation::DeepbenchMeasurement> fold[2];
  std::vector<int> fold_of;
  for (const validation::DeepbenchMeasurement& m : rows) {
    fold_of.push_back(validation::FoldOf(m.file + ":" + std::to_string(m.line), 2));
    fold[fold_of.back()].push_back(m);
  }
  if (fold[0].empty() || fold[1].empty())
    throw UserError(SourceLocation{o.data_dir}, "too few rows for two folds", "add rows");
  if (!o.quiet) err << "kernels: fitting the generation's constants on each half...\n";
  const sim::GpuKernelParams on_fold[2] = {
      validation::FitGenerationParams(fold[0], catalog, shipped),
      validation::FitGenerationParams(fold[1], catalog, shipped)};
  const sim::GpuKernelParams on_all = validation::FitGenerationParams(rows, catalog, shipped);
  const auto volta = static_cast<std::size_t>(hw::GpuArch::kVolta);
  struct Column {
    const char* name;
    std::vector<double> errors;
  };
  std::map<std::string, std::vector<Column>> by_kind;  // kernel kind -> columns
  std::string csv = "file,line,kernel,shape,measured_ms,volta_ms,shipped_ms,held_out_ms,fitted_ms\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const validation::DeepbenchMeasurement& m = rows[i];
    const auto arch = static_cast<std::size_t>(
        catalog.FindDevice(validation::DeepbenchDevice(m.gpu))->arch);
    const double predicted[4] = {
        validation::PredictDeepbench(
            validation::DeepbenchModel(catalog, m.gpu, WithGenerationValues(shipped, arch, volta)),
            m).predicted_s,
        validation::PredictDeepbench(validation::DeepbenchModel(catalog, m.gpu, shipped), m)
            .predicted_s,
        validation::PredictDeepbench(
            validation::DeepbenchModel(catalog, m.gpu, on_fold[1 - fold_of[i]]), m).predicted_s,
        validation::PredictDeepbench(validation::DeepbenchModel(catalog, m.gpu, on_all), m)
            .predicted_s};
    for (const std::string& kind : {std::string("all"), std::string(DeepbenchKernelName(m.kind))}) {
      auto& columns = by_kind[kind];
      if (columns.empty())
        columns = {{"Volta's values", {}}, {"shipped", {}}, {"held out (2-fold)", {}},
                   {"fitted on all", {}}};
      for (int c = 0; c < 4; ++c)
        columns[static_cast<std::size_t>(c)].errors.push_back(
            validation::PercentError(predicted[c], m.measured_s));
    }
    char line[400];
    std::snprintf(line, sizeof line, "%s,%d,%s,\"%s\",%.4f,%.4f,%.4f,%.4f,%.4f\n",
                  m.file.c_str(), m.line, DeepbenchKernelName(m.kind), m.Shape().c_str(),
                  1e3 * m.measured_s, 1e3 * predicted[0], 1e3 * predicted[1], 1e3 * predicted[2],
                  1e3 * predicted[3]);
    csv += line;
  }
  std::string md = "# Kernel model on a generation DeepBench did not measure\n\n";
  md += "Data: `" + o.data_dir + "` (" + std::to_string(rows.size()) +
        " kernels). Absolute errors in % of the measured time: median / mean / max, then the "
        "mean signed error (> 0: predicted too slow).\n\n";
  md += "| kernels | rows | held out (2-fold) | Volta's values | shipped | fitted on all |\n";
  md += "|---|---|---|---|---|---|\n";
  for (const auto& [kind, columns] : by_kind) {
    md += "| " + kind + " | " + std::to_string(columns[0].errors.size()) + " |";
    for (std::size_t c : {2, 0, 1, 3}) {  // held out first
      const validation::ErrorSummary e = validation::SummarizeErrors(columns[c].errors, 0);
      char cell[96];
      std::snprintf(cell, sizeof cell, " %.1f / %.1f / %.1f, %+.1f |", e.median_ape, e.mean_ape,
                    e.max_ape, e.mean_signed_pe);
      md += cell;
    }
    md += "\n";
  }
  md += "\n## Fitted on every row\n\n```\n" + validation::ParamsAsText(on_all) + "```\n";
  md += "\n## Fitted on fold 0 / fold 1\n\n```\n" + validation::ParamsAsText(on_fold[0]) +
        "```\n\n```\n" + validation::ParamsAsText(on_fold[1]) + "```\n";
  OutputSet files{std::filesystem::path(o.out_dir)};
  WriteOutput(files, "predictions.csv", csv);
  WriteOutput(files, "summary.md", md);
  const auto written = files.Commit();
  if (o.quiet) return;
  out << md;
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

// `dtsim validate vtrain --fit`: constants fitted on the rows of fold 0 of
// 2, then set in `setup` for every row.
struct VtrainFit {
  std::vector<validation::FitConstant> constants;
  validation::FitResult result;
  int train_rows = 0;
  validation::VtrainSummary scored;  // the rows of fold 1, with the fitted constants
};

VtrainFit FitVtrain(const std::string& names, const std::vector<validation::VtrainRow>& rows,
                    validation::VtrainSetup* setup, int jobs, std::ostream* err) {
  if (rows.empty()) throw UserError("no vTrain rows to fit");
  VtrainFit fit;
  const config::Scenario base = validation::VtrainScenario(rows.front(), *setup);
  fit.constants = validation::ParseFitConstants(names, base);
  std::vector<std::size_t> train;
  std::vector<double> measured(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    measured[i] = rows[i].measured_ms / 1000.0;
    if (validation::FoldOf(rows[i].Where(), 2) == 0) train.push_back(i);
  }
  fit.train_rows = static_cast<int>(train.size());
  const validation::VtrainSetup fixed = *setup;
  const auto& constants = fit.constants;
  validation::RowPredictor predict = [&](std::size_t i, const std::vector<double>& v) {
    config::Scenario s = validation::VtrainScenario(rows[i], fixed);
    validation::ApplyFitConstants(constants, v, &s);
    return validation::SimulatedIterationSeconds(s);
  };
  if (err != nullptr) *err << "fitting " << names << " on " << train.size() << " rows...\n";
  validation::FitOptions options;
  options.jobs = jobs;
  fit.result = validation::FitConstants(fit.constants, train, measured, predict, options);
  config::Scenario fitted = base;
  validation::ApplyFitConstants(fit.constants, fit.result.values, &fitted);
  setup->framework = fitted.workload.framework;
  setup->framework.source += ", fitted to vTrain fold 0 of 2";
  setup->transport = fitted.cluster.network.transport;
  setup->intra_node_transport = fitted.cluster.network.intra_node_transport;
  return fit;
}

std::string VtrainFitJson(const VtrainFit& fit, const validation::VtrainSetup& setup) {
  nlohmann::ordered_json j;
  j["split"] = "fit on the rows whose FNV-1a hash of 'file:line' is even (fold 0 of 2), "
               "scored on the others";
  j["framework"] = setup.framework.name;
  j["framework_source"] = setup.framework.source;
  j["transport"] = config::DescribeTransport(setup.transport);
  j["intra_node_transport"] = config::DescribeTransport(setup.intra_node_transport);
  j["train_rows"] = fit.train_rows;
  j["evaluations"] = fit.result.evaluations;
  j["train_mape_percent"] = fit.result.mape;
  for (std::size_t i = 0; i < fit.constants.size(); ++i)
    j["constants"].push_back(validation::FitConstantJson(fit.constants[i], fit.result.values[i]));
  j["scored"] = {{"all", validation::FitErrorsJson(fit.scored.overall)},
                 {"single_node", validation::FitErrorsJson(fit.scored.single_node)},
                 {"multi_node", validation::FitErrorsJson(fit.scored.multi_node)}};
  return j.dump(2) + "\n";
}

std::string VtrainFitMarkdown(const VtrainFit& fit) {
  std::string md = "# vTrain: constants fitted on half of the rows, scored on the other half\n\n";
  md += "Split: rows whose FNV-1a hash of `file:line` is even are fitted (" +
        std::to_string(fit.train_rows) + " rows), the others scored. Nelder-Mead in log space, " +
        std::to_string(fit.result.evaluations) + " evaluations; training MAPE " +
        std::to_string(fit.result.mape) + "%.\n\n| constant | initial | fitted |\n|---|---:|---:|\n";
  for (std::size_t i = 0; i < fit.constants.size(); ++i)
    md += "| " + fit.constants[i].name + " | " +
          validation::FormatFitValue(fit.constants[i], fit.constants[i].initial) + " | " +
          validation::FormatFitValue(fit.constants[i], fit.result.values[i]) + " |\n";
  for (std::size_t i = 0; i < fit.constants.size(); ++i) {
    const std::string warning = validation::ImplausibleWarning(fit.constants[i], fit.result.values[i]);
    if (!warning.empty()) md += "\nImplausible: " + warning + ".\n";
  }
  md += "\n| scored rows (held out) | runs | median % | mean % | max % | signed % |\n"
        "|---|---:|---:|---:|---:|---:|\n";
  auto row = [&](const char* name, const validation::ErrorSummary& e) {
    char line[200];
    std::snprintf(line, sizeof line, "| %s | %d | %.1f | %.1f | %.1f | %+.1f |\n", name, e.runs,
                  e.median_ape, e.mean_ape, e.max_ape, e.mean_signed_pe);
    md += line;
  };
  row("all", fit.scored.overall);
  row("single-node", fit.scored.single_node);
  row("multi-node", fit.scored.multi_node);
  return md;
}

// `dtsim validate allreduce`: DeepBench's all-reduce rows against the PCIe
// ring model, constants fitted leaving each GPU out (validation/allreduce_report.h).
void AllreduceCommand(const ValidateOptions& o, std::ostream& out, std::ostream& err) {
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!o.quiet) err << "allreduce: fitting the constants without each GPU in turn...\n";
  const validation::AllreduceValidation v =
      validation::ValidateAllreduce(validation::LoadAllreduce(o.data_dir), jobs);
  OutputSet files{std::filesystem::path(o.out_dir)};
  WriteOutput(files, "allreduce.json", validation::AllreduceJson(v));
  WriteOutput(files, "allreduce.md", validation::AllreduceMarkdown(v));
  const auto written = files.Commit();
  if (o.quiet) return;
  out << "allreduce: " << v.rows.size() << " rows\n" << validation::AllreduceSummaryText(v);
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

// Every vTrain row's setup from the command's options.
validation::VtrainSetup VtrainSetupFrom(const ValidateOptions& o) {
  validation::VtrainSetup setup;
  if (!o.intra_node_link.empty()) {
    if (hw::HardwareCatalog::BuiltIn().FindLink(o.intra_node_link) == nullptr) {
      throw UserError("--intra-node-link: unknown link '" + o.intra_node_link + "'",
                      "use a link of the catalog (dtsim devices), e.g. nvswitch-a100");
    }
    setup.intra_node_link = o.intra_node_link;
  }
  if (!o.kernel_launch.empty())
    setup.kernel_launch_s = ParseQuantity(o.kernel_launch, Dimension::kTime, {"--kernel-launch"});
  if (o.cost_model == "kernels") {
    setup.cost_model = config::CostModelKind::kKernels;
  } else if (o.cost_model == "roofline") {
    setup.cost_model = config::CostModelKind::kRoofline;
  } else if (!o.cost_model.empty()) {
    throw UserError("--cost-model: unknown cost model '" + o.cost_model + "'",
                    "use kernels or roofline");
  }
  if (setup.cost_model == config::CostModelKind::kKernels && setup.kernel_launch_s > 0)
    throw UserError("--kernel-launch applies to the roofline cost model, not to --cost-model "
                    "kernels",
                    "drop one of them");
  if (!o.protocols.empty()) setup.protocols = o.protocols;
  if (!o.framework.empty())
    setup.framework = config::ReadFramework(
        YamlValue(YAML::Node(o.framework), "--framework", "--framework"), "./--framework");
  return setup;
}

}  // namespace

void ValidateCommand(const ValidateOptions& o, std::ostream& out, std::ostream& err) {
  if (o.dataset == "deepbench") {
    DeepbenchCommand(o, out, err);
    return;
  }
  if (o.dataset == "allreduce") {
    if (!o.protocols.empty())
      throw UserError("allreduce: --protocols does not apply",
                      "the report prices every row both ways (ideal and nccl-protocols)");
    AllreduceCommand(o, out, err);
    return;
  }
  if (o.dataset == "kernels") {
    KernelsCommand(o, out, err);
    return;
  }
  if (o.dataset != "vtrain") {
    throw UserError("unknown validation data set '" + o.dataset + "'", "known: vtrain, deepbench, kernels, allreduce");
  }
  validation::VtrainSetup setup = VtrainSetupFrom(o);
  const std::vector<validation::VtrainRow> rows = validation::LoadVtrainData(o.data_dir, o.limit);
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::optional<VtrainFit> fit;
  if (!o.fit.empty()) fit = FitVtrain(o.fit, rows, &setup, jobs, o.quiet ? nullptr : &err);

  ProgressBar bar(err, o.err_is_terminal, "rows");
  validation::PredictOptions predict;
  predict.setup = setup;
  predict.jobs = jobs;
  if (!o.quiet) predict.progress = [&bar](int done, int total) { bar.Update(done, total); };
  const std::vector<validation::RowPrediction> predictions =
      validation::PredictVtrain(rows, predict);
  bar.Finish();
  const double seconds = bar.Elapsed();

  const std::vector<validation::RowResult> results = validation::JoinResults(rows, predictions);
  const validation::VtrainSummary summary = validation::SummarizeVtrain(results);
  OutputSet files{std::filesystem::path(o.out_dir)};
  WriteOutput(files, "predictions.csv", validation::PredictionsCsv(results));
  WriteOutput(files, "summary.json", validation::SummaryJson(summary, results, setup));
  WriteOutput(files, "summary.md", validation::SummaryMarkdown(summary, results, setup));
  WriteOutput(files, "scatter.svg", validation::ScatterSvg(results));
  if (fit) {
    // The scored half: the rows the fit did not see.
    std::vector<validation::RowResult> scored;
    for (const validation::RowResult& r : results)
      if (validation::FoldOf(r.row->Where(), 2) != 0) scored.push_back(r);
    fit->scored = validation::SummarizeVtrain(scored);
    WriteOutput(files, "fit.json", VtrainFitJson(*fit, setup));
    WriteOutput(files, "fit.md", VtrainFitMarkdown(*fit));
    WriteOutput(files, "framework.yaml",
          config::FrameworkProfileYaml(setup.framework,
                                       "fitted by dtsim validate vtrain --fit " + o.fit +
                                           "\non the rows of fold 0 of 2 (FNV-1a of file:line)"));
  }
  const auto written = files.Commit();

  if (o.quiet) return;
  char line[200];
  std::snprintf(line, sizeof line, "vtrain: %zu rows in %.1f s (%d jobs)\n", rows.size(), seconds,
                std::min<int>(jobs, static_cast<int>(std::max<std::size_t>(1, rows.size()))));
  err << line;
  const char* header = "group          runs  failed  median %  mean %   max %  signed %\n";
  if (fit) {
    // The rows the fit did not see first: what to expect on new runs.
    out << "held out: the " << fit->scored.overall.runs
        << " rows of fold 1, not seen by the fit (absolute error %):\n"
        << header;
    out << ErrorLine("all", fit->scored.overall);
    out << ErrorLine("single-node", fit->scored.single_node);
    out << ErrorLine("multi-node", fit->scored.multi_node);
    out << "every row, fitted half included:\n";
  }
  out << header;
  out << ErrorLine("all", summary.overall);
  out << ErrorLine("single-node", summary.single_node);
  out << ErrorLine("multi-node", summary.multi_node);
  if (fit) {
    out << "fitted on " << fit->train_rows << " rows (" << fit->result.evaluations
        << " evaluations, training MAPE " << fit->result.mape << "%):";
    for (std::size_t i = 0; i < fit->constants.size(); ++i)
      out << " " << fit->constants[i].name << " = "
          << validation::FormatFitValue(fit->constants[i], fit->result.values[i]);
    out << "\n";
    for (std::size_t i = 0; i < fit->constants.size(); ++i) {
      const std::string warning =
          validation::ImplausibleWarning(fit->constants[i], fit->result.values[i]);
      if (!warning.empty()) err << "warning: " << warning << "\n";
    }
  }
  for (const auto& f : summary.failures) {
    out << f.rows << " row(s) failed, first " << f.first << ": " << f.message << "\n";
  }
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

namespace {

// `dtsim validate`'s parsed command line.
struct ValidateCommandLine {
  std::string target;        // a data set's name or a scenario file
  ValidateOptions validate;  // a data set's options
  ExecCommandOptions exec;   // a scenario's
  CLI::App* cli = nullptr;   // which options were given
};

// Whether `target` names one of the data sets validate predicts (else it
// is a scenario file, run for real).
bool IsDataSet(const std::string& target) {
  return target == "vtrain" || target == "deepbench" || target == "kernels" ||
         target == "allreduce";
}

// Validation against a data set (vtrain, deepbench, kernels, allreduce) or,
// for a scenario file, against a real run (RunExec with validate set).
void RunValidate(ValidateCommandLine& o, CommandEnv& env) {
  const std::string& t = o.target;
  if (!IsDataSet(t)) {
    o.exec.scenario_path = t;
    o.exec.quiet = o.validate.quiet;
    // --out is declared once for both kinds of validation.
    if (o.cli->count("--out") > 0) o.exec.out_dir = o.validate.out_dir;
    RunExec(o.exec, env);
    return;
  }
  ValidateOptions& v = o.validate;
  v.err_is_terminal = ::isatty(STDERR_FILENO) != 0;
  v.dataset = t;
  // Each data set's own default folders.
  const char* data = t == "kernels"  ? "scenarios/fit/h100-kernels"
                     : t == "vtrain" ? nullptr
                                     : "../shared/validation/deepbench";
  const char* out = t == "deepbench"   ? "results/deepbench"
                    : t == "allreduce" ? "results/allreduce"
                    : t == "kernels"   ? "results/kernels-h100"
                                       : nullptr;
  if (data && o.cli->count("--data") == 0) v.data_dir = data;
  if (out && o.cli->count("--out") == 0) v.out_dir = out;
  ValidateCommand(v, env.out, env.err);
}

}  // namespace

Command AddValidateCommand(CLI::App& app) {
  auto o = std::make_shared<ValidateCommandLine>();
  o->exec.validate = true;
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Compare predictions with measurements. 'vtrain' predicts vTrain's Megatron-DeepSpeed "
      "iteration times on A100 clusters (writes predictions.csv, summary.json, summary.md and "
      "scatter.svg under results/vtrain/). 'deepbench' predicts Baidu DeepBench's GEMM and "
      "convolution kernel times on eight NVIDIA GPUs with the kernel model, refits its "
      "constants leaving each GPU out, and writes the same files under results/deepbench/. "
      "'kernels' fits the kernel model's per-generation constants for a GPU generation "
      "DeepBench did not measure on kernel times in DeepBench's format (default: this "
      "project's H100 rows, scenarios/fit/h100-kernels) and scores them on held-out layers "
      "(results/kernels-h100/). A "
      "scenario file runs the scenario for real on this "
      "machine (one MPI process per device) and predicts it with the local device profile, "
      "then prints predicted against measured step time, throughput, compute and "
      "communication (writes validation.json and validation.md)");
  cmd->add_option("target", o->target,
                  "vtrain, deepbench, kernels, allreduce, or a scenario YAML file")
      ->required();
  cmd->add_option("--data", o->validate.data_dir,
                  "vtrain: folder of ground_truth_single.csv and ground_truth_multi.csv; "
                  "deepbench: of gemm.csv and conv.csv (default "
                  "../shared/validation/deepbench)")
      ->capture_default_str();
  cmd->add_option("-o,--out", o->validate.out_dir,
                  "Output folder (a scenario: default its outputs.dir; deepbench: "
                  "default results/deepbench)")
      ->capture_default_str();
  AddJobsOption(cmd, &o->validate.jobs, "Rows");
  cmd->add_option("--limit", o->validate.limit, "Only the first N rows of each file (quick runs)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--intra-node-link", o->validate.intra_node_link,
                  "A catalog link between the GPUs of a node instead of vTrain's "
                  "stated 150 GB/s, e.g. nvswitch-a100 (the datasheet's 300 GB/s)");
  cmd->add_option("--kernel-launch", o->validate.kernel_launch,
                  "Overhead per op for every row (e.g. 30us for PyTorch eager's per-op "
                  "CPU cost); default: the simulator's 5 us CUDA launch latency");
  cmd->add_option("--cost-model", o->validate.cost_model,
                  "vtrain: kernels or roofline for every row (default: the "
                  "simulator's choice, the kernel model for the A100)");
  cmd->add_option("--framework", o->validate.framework,
                  "vtrain: framework profile for every row: a built-in name (e.g. "
                  "megatron-lm) or a profile file; default none (the devices alone)");
  cmd->add_option("--protocols", o->validate.protocols,
                  "vtrain: collective pricing for every row: ideal (default) or nccl "
                  "(NCCL's LL, LL128 and Simple protocols)")
      ->check(CLI::IsMember({"ideal", "nccl"}));
  cmd->add_option("--fit", o->validate.fit,
                  "vtrain: constants to fit, comma-separated (e.g. "
                  "per_kernel,per_op,per_step), on a fixed half of the rows (by a hash "
                  "of file:line) and scored on the other half; writes fit.json and "
                  "fit.md beside the predictions made with the fitted constants");
  cmd->add_flag("-q,--quiet", o->validate.quiet, "No progress bar and no summary");
  cmd->add_option("--profile", o->exec.profile,
                  "Scenario: device profile for the prediction (default: the "
                  "scenario's, else results/calibration/device_profile.yaml, measured "
                  "first with a quick calibration when missing)");
  cmd->add_option("--cost-table", o->exec.cost_table,
                  "Scenario: price compute from this op-cost table (dtsim profile) "
                  "or torch.profiler trace, as workload.cost_model: measured does");
  AddRankOptions(cmd, &o->exec, "Scenario: ");
  cmd->footer(
      "vtrain: every row becomes a hybrid (tensor x pipeline x data) scenario: A100-SXM4-80GB,\n"
      "8 per node, 150 GB/s NVLink, 4 x HDR InfiniBand per node, fp16, 1F1B, recompute on,\n"
      "every constant at its default (the GPU kernel model unless --cost-model roofline or\n"
      "--kernel-launch). A row whose simulation fails is reported as failed (with its\n"
      "message in predictions.csv and summary.md) and the others go on.\n"
      "\n"
      "deepbench: every GEMM and convolution kernel of DeepBench's NVIDIA training sheets\n"
      "(8 GPUs, fp32 and fp16) is predicted by the kernel model (sim/cost/gpu_kernel_model.h) with\n"
      "the shipped constants, with constants refitted without its GPU, and by the roofline;\n"
      "errors per GPU, precision and kernel go to summary.md and summary.json (about 10 s).\n"
      "\n"
      "kernels: the rows' generation gets its own SIMT fraction, half reuse and Winograd,\n"
      "dgrad and wgrad fractions (validation/deepbench_fit.h, step 3; every other constant\n"
      "as shipped), fitted on half of the rows (by a hash of file:line) and scored on the\n"
      "other half, and the reverse; then on every row. Errors against Volta's values (what\n"
      "a generation without data takes) and the shipped ones go to summary.md.\n"
      "\n"
      "A scenario: it runs for real (as dtsim exec does, on the CPU backend) and is predicted\n"
      "with the device profile and overlap off (a CPU rank computes and communicates on one\n"
      "thread). Results go to the scenario's outputs.dir: validation.json, validation.md,\n"
      "validation.svg, exec_trace.json and predicted_trace.json. For example:\n"
      "\n"
      "  dtsim validate scenarios/local/cifar10-dp-2cpu.yaml\n"
      "  dtsim validate scenarios/local/wide-mlp-dp-2cpu-1gbps.yaml --network 1Gbps   # as root");
  o->cli = cmd;
  return {cmd, [o](CommandEnv& env) { RunValidate(*o, env); },
          [o]() { return !IsDataSet(o->target) && !o->exec.network.empty(); }};
}

}  // namespace dtsim::tools
