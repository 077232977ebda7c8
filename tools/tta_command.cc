// `dtsim tta SCENARIO`: time to a target loss for every point of a sweep
// (study/tta.h measures it); this file maps the options, calls the study
// and writes its files.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

#include "common/error.h"
#include "config/scenario.h"
#include "report/sweep_page.h"
#include "report/tensorboard.h"
#include "report/tta_page.h"
#include "study/sweep.h"
#include "study/tta.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/local_run.h"
#include "tools/output_set.h"

namespace dtsim::tools {
namespace {

namespace fs = std::filesystem;

// With --local: the points priced as `dtsim exec` runs them on this
// machine (its ranks sharing the cores, --network's emulated link); else
// none (the scenario's cluster).
study::LocalRun LocalRunOf(const TtaOptions& o) {
  if (!o.local) return {};
  const LocalRunOptions local{.threads = 1, .network = o.network, .latency = o.latency};
  return [local](int processes, config::Scenario* s) { PredictAsLocalRun(local, processes, s); };
}

// Writes the study's files into the output folder and returns their paths:
// tta.csv, curves.csv, the plots, the sweep's own CSV and plots, the page
// (led by the time-to-accuracy section) and the TensorBoard event file.
std::vector<fs::path> WriteTtaFiles(const TtaOptions& o, const study::Sweep& sweep,
                                    const study::TtaStudy& st, const std::string& best,
                                    const fs::path& dir) {
  const std::int64_t eval_samples = o.study.eval_samples;
  const std::string evaluated =
      st.test_split ? "held out: the first " + std::to_string(eval_samples) +
                          " samples of the test split of " + o.study.dataset
                    : "held out: " + std::to_string(eval_samples) + " samples of the training set";
  const report::TtaPlots tta_plots = report::PlotTta(sweep, st);
  const std::string lead = report::TtaLeadHtml(st, tta_plots, best, evaluated, o.study.seeds);
  study::SweepRunOptions sweep_options;
  sweep_options.jobs = o.study.jobs;
  const std::vector<study::PointResult> results = study::RunSweep(sweep, sweep_options);
  const std::string sweep_csv = study::SweepCsv(sweep, results);
  const report::SweepPlots plots = report::PlotSweep(sweep, results);
  OutputSet files(dir);
  WriteOutput(files, "tta.csv", st.table.csv);
  WriteOutput(files, "curves.csv", study::CurvesCsv(st));
  WriteOutput(files, "tta.svg", tta_plots.time);
  WriteOutput(files, "sweep.csv", sweep_csv);
  WriteOutput(files, "throughput.svg", plots.throughput);
  WriteOutput(files, "scaling_efficiency.svg", plots.scaling_efficiency);
  WriteOutput(files, "breakdown.svg", plots.breakdown);
  WriteOutput(files, "index.html", report::SweepPageHtml(sweep, plots, sweep_csv, lead));
  WriteOutput(files, report::kEventFileName, report::TtaEvents(st));
  return files.Commit();
}

}  // namespace

void TtaCommand(const TtaOptions& o, std::ostream& out, std::ostream& err) {
  const study::Sweep sweep = study::LoadSweep(o.scenario_path, o.study.jobs);
  if (!o.local && !o.network.empty())
    throw UserError("--network prices an emulated link of this machine: it needs --local",
                    "add --local");
  const study::TtaStudy st = study::MeasureTta(sweep, o.study, LocalRunOf(o), err);
  const std::string best = study::BestSettingsText(sweep, st);
  const fs::path dir = o.out_dir.empty() ? fs::path(sweep.out_dir) / "tta" : fs::path(o.out_dir);
  const std::vector<fs::path> written = WriteTtaFiles(o, sweep, st, best, dir);
  if (st.table.rows.empty()) {
    throw InfeasiblePlan("dtsim tta: no point reaches " + st.proxy.target.Describe() +
                             " within " + std::to_string(o.study.steps) + " updates (tta.csv in " +
                             dir.string() + " says why for each)",
                         "give more --steps, an easier target or another learning rate");
  }
  if (o.study.quiet) return;
  out << study::UpdatesSummary(st, o.study) << best;
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

namespace {

// The update rule of the proxy's runs: rate, its scaling or grid, optimizer,
// warm-up and decay (as `dtsim exec` applies them).
void AddUpdateRuleOptions(CLI::App* cmd, study::TtaOptions* o) {
  auto* lr = cmd->add_option("--lr", o->lr, "Initial learning rate for one worker's batch")
                 ->check(FinitePositive())
                 ->capture_default_str();
  auto* lr_scaling =
      cmd->add_option(
             "--lr-scaling", o->lr_scaling,
             "How the rate grows with the samples per update: linear (Goyal et al. 2017), sqrt "
             "(Krizhevsky 2014) or none")
          ->check(CLI::IsMember({"linear", "sqrt", "none"}))
          ->capture_default_str();
  cmd->add_option("--lr-grid", o->lr_grid,
                  "Rates to try per setting, e.g. 0.01,0.03,0.1: every seed at each, and "
                  "the rate with the fewest mean updates to the target is kept (tuned per "
                  "setting as Shallue et al. 2019 tuned it per batch size); replaces --lr "
                  "and --lr-scaling")
      ->delimiter(',')
      ->check(FinitePositive())
      ->excludes(lr)
      ->excludes(lr_scaling);
  cmd->add_option("--optimizer", o->optimizer,
                  "The update rule, as dtsim exec applies it (default: the scenario's "
                  "parallelism.optimizer)")
      ->check(CLI::IsMember({"sgd", "momentum", "adam"}));
  cmd->add_option("--momentum", o->momentum, "Momentum's coefficient, in [0, 1)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--lr-warmup-steps", o->lr_warmup_steps,
                  "Linear warm-up over the first N updates (Goyal et al. 2017; default 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--lr-decay-rate", o->lr_decay_rate,
                  "Exponential decay: multiply the learning rate by this every "
                  "--lr-decay-steps updates (as dtsim exec; default: none)")
      ->check(FinitePositive());
  cmd->add_option("--lr-decay-steps", o->lr_decay_steps, "Updates per decay factor")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--lr-smooth", o->lr_smooth,
                "Decay continuously instead of in steps (staircase is the default)");
}

}  // namespace

Command AddTtaCommand(CLI::App& app) {
  auto o = std::make_shared<TtaOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tta",
      "Time to accuracy: for every point of a sweep, the time to reach a target loss = "
      "updates to the target, measured for real on a small proxy with the point's "
      "synchronisation (H, staleness, backup workers, workers), x the simulated seconds "
      "per update; writes tta.csv, curves.csv, tta.svg and index.html");
  cmd->add_option("scenario", o->scenario_path, "Scenario or sweep YAML file")->required();
  cmd->add_option("-o,--out", o->out_dir, "Output folder (default <outputs.dir>/tta)");
  cmd->add_option("--proxy", o->study.proxy,
                  "Model trained for real: a zoo name or model file (default: the scenario's)");
  cmd->add_option("--dataset", o->study.dataset,
                  "The proxy's data, shuffled by each seed as dtsim exec shuffles it: an IDX "
                  "folder (MNIST, Fashion-MNIST: trains on train-*, evaluates on the first "
                  "--eval-samples of t10k-*) or a dataset file (docs/dataset_format.md); "
                  "default a synthetic set shaped like the model");
  cmd->add_option("--batch", o->study.batch,
                  "Samples per worker per update on the proxy (default: batch_per_device)")
      ->check(CLI::Range(std::int64_t{1}, study::kMaxTtaBatch));
  cmd->add_option("--workers", o->study.workers,
                  "Worker counts to measure (default: each point's own); others are fitted "
                  "as a power law of the measured ones")
      ->delimiter(',')
      ->check(CLI::Range(1, study::kMaxTtaWorkers));
  cmd->add_option("--steps", o->study.steps, "Updates per run at most")
      ->check(CLI::Range(std::int64_t{1}, study::kMaxTtaSteps))
      ->capture_default_str();
  cmd->add_option("--eval-every", o->study.eval_every, "Updates between loss evaluations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--eval-samples", o->study.eval_samples, "Held-out samples of each evaluation")
      ->check(CLI::Range(std::int64_t{1}, study::kMaxTtaEvalSamples))
      ->capture_default_str();
  cmd->add_option("--seeds", o->study.seeds, "Seeds per setting (the band comes from them)")
      ->check(CLI::Range(1, study::kMaxTtaSeeds))
      ->capture_default_str();
  auto* target =
      cmd->add_option(
             "--target", o->study.target,
             "Target: the held-out loss as a fraction of the initial one, in (0, 1] (the default, "
             "0.6, when no target is given)")
          ->check(FinitePositive() & CLI::Range(0.0, 1.0));
  auto* target_loss =
      cmd->add_option("--target-loss", o->study.target_loss, "Target: an absolute held-out loss")
          ->check(FinitePositive())
          ->excludes(target);
  cmd->add_option("--target-accuracy", o->study.target_accuracy,
                  "Target: a held-out top-1 accuracy in (0, 1] (a classifier)")
      ->check(FinitePositive() & CLI::Range(0.0, 1.0))
      ->excludes(target)
      ->excludes(target_loss);
  AddUpdateRuleOptions(cmd, &o->study);
  cmd->add_option("-j,--jobs", o->study.jobs, "Proxy runs at once (default: one per core)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("-q,--quiet", o->study.quiet, "No summary");
  cmd->add_flag("--local", o->local,
                "Seconds per update as 'dtsim exec' runs each point on this machine (its "
                "ranks sharing the cores, the scenario's device_profile), as 'dtsim validate' "
                "predicts them, instead of on the scenario's cluster");
  cmd->add_option("--network", o->network,
                  "With --local: the ranks talk over exec's emulated network at this rate "
                  "(e.g. 100Mbps, 1Gbps)");
  cmd->add_option("--latency", o->latency, "With --network: one-way latency (e.g. 50us)");
  return {cmd, [o](CommandEnv& env) { TtaCommand(*o, env.out, env.err); }};
}

}  // namespace dtsim::tools
