// `dtsim tta SCENARIO`: time to a target loss for every point of a sweep,
// from statistical efficiency measured on a small proxy (exec/runtime/
// replica_trainer.h) and seconds per update simulated on the cluster
// (sim/time_to_accuracy.h says how they combine).
#include <algorithm>
#include <CLI/CLI.hpp>
#include "tools/cli.h"
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>
#include <memory>
#include <ostream>
#include <tuple>

#include "common/error.h"
#include "common/parallel_for.h"
#include "config/scenario.h"
#include "exec/data/dataset.h"
#include "exec/kernels/cpu_isa.h"
#include "exec/runtime/model_problem.h"
#include "exec/runtime/optimizer.h"
#include "exec/runtime/replica_trainer.h"
#include "models/zoo.h"
#include "report/svg_plot.h"
#include "report/sweep_page.h"
#include "report/tensorboard.h"
#include "sim/simulator.h"
#include "sim/sweep.h"
#include "sim/time_to_accuracy.h"
#include "tools/commands.h"
#include "tools/exec_command.h"
#include "tools/local_run.h"
#include "exec/data/model_datasets.h"
#include "exec/scenario_run.h"
#include "tools/output_set.h"

namespace dtsim::tools {
namespace {

namespace fs = std::filesystem;

// A point's synchronisation, without its worker count: the settings of one
// curve family.
struct Family {
  exec::SyncMode mode = exec::SyncMode::kSynchronous;
  int averaging_period = 1;
  int staleness = 0;
  double backup_fraction = 0;  // kBackup: dropped gradients / workers
  auto Key() const { return std::tuple(static_cast<int>(mode), averaging_period, staleness, backup_fraction); }
  bool operator<(const Family& o) const { return Key() < o.Key(); }
  std::string Name() const {
    char s[96];
    switch (mode) {
      case exec::SyncMode::kLocalSgd: std::snprintf(s, sizeof s, "local_sgd H=%d", averaging_period); break;
      case exec::SyncMode::kAsynchronous: std::snprintf(s, sizeof s, "asynchronous staleness=%d", staleness); break;
      case exec::SyncMode::kBackup: std::snprintf(s, sizeof s, "backup %.0f%% dropped", 100 * backup_fraction); break;
      default: std::snprintf(s, sizeof s, "synchronous");
    }
    return s;
  }
};

// What the simulator says about one sweep point.
struct Point {
  Family family;
  int workers = 0;
  double seconds_per_update = 0;  // 0 when the point cannot run
  double throughput = 0;
  std::string infeasible;
};

// `local`: as PredictAsLocalRun makes it (null: the scenario's cluster).
Point SimulatePoint(const sim::SweepPoint& sp, const LocalRunOptions* local) {
  Point p;
  if (!sp.infeasible.empty()) {
    p.infeasible = sp.infeasible;
    return p;
  }
  const config::Strategy strategy = sp.scenario.parallelism.strategy;
  if (strategy != config::Strategy::kData && strategy != config::Strategy::kLocalSgd &&
      strategy != config::Strategy::kParameterServer) {
    throw UserError(sp.scenario.Where("parallelism.strategy"),
                    std::string("dtsim tta measures data parallelism, local SGD and parameter "
                                "servers; strategy ") +
                        config::StrategyName(strategy) + " is not one of them");
  }
  sim::SimulateOptions options;
  options.fast = true;
  sim::Prediction pred = sim::Simulate(sp.scenario, options);
  config::Scenario here;
  if (local != nullptr) {
    // Every plan rank (workers and servers) is a process of its own.
    here = sp.scenario;
    PredictAsLocalRun(*local, pred.plan.num_ranks(), &here);
    pred = sim::Simulate(here, options);
  }
  const config::Scenario& s = local != nullptr ? here : sp.scenario;
  const std::int64_t batch = s.workload.batch_per_device;
  p.workers = static_cast<int>(pred.plan.samples_per_iteration / std::max<std::int64_t>(1, batch));
  if (!pred.does_not_fit.empty()) {
    p.infeasible = pred.does_not_fit;
    return p;
  }
  p.throughput = pred.metrics.throughput_samples_per_s;
  const bool async = strategy == config::Strategy::kParameterServer &&
                     s.parallelism.sync == config::SyncMode::kAsynchronous;
  // One update: a step of every worker, or one worker's step (asynchronous).
  p.seconds_per_update =
      static_cast<double>(async ? batch : pred.plan.samples_per_iteration) / p.throughput;
  if (strategy == config::Strategy::kLocalSgd) {
    p.family.mode = exec::SyncMode::kLocalSgd;
    p.family.averaging_period = pred.comm.averaging_period;
  } else if (async) {
    p.family.mode = exec::SyncMode::kAsynchronous;
    // The simulated run's mean staleness, to the nearest update.
    p.family.staleness = pred.async ? static_cast<int>(std::lround(pred.async->staleness.mean)) : 0;
  } else if (strategy == config::Strategy::kParameterServer &&
             s.parallelism.parameter_server.replicas_to_aggregate > 0 &&
             s.parallelism.parameter_server.replicas_to_aggregate < p.workers) {
    p.family.mode = exec::SyncMode::kBackup;
    p.family.backup_fraction =
        1.0 - static_cast<double>(s.parallelism.parameter_server.replicas_to_aggregate) / p.workers;
  }
  return p;
}

// The target the updates are counted to. A curve is read as values that
// fall to a threshold (StepsToTarget's "at or below"): the loss relative to
// the run's initial one, the loss itself, or minus the accuracy (so "at or
// above A" reads "at or below -A").
struct Target {
  enum class Kind { kFraction, kLoss, kAccuracy };
  Kind kind = Kind::kFraction;
  double value = 0.6;

  // "60% of the initial loss", "a held-out loss of 0.45", "85% held-out
  // accuracy": the page's and the summary's words.
  std::string Describe() const;
  // "relative_loss<=0.6", "loss<=0.45", "accuracy>=0.85": tta.csv's column.
  std::string Condition() const;
  // "relative_loss_0.6", ...: the TensorBoard tag's prefix.
  std::string Slug() const;
  double Threshold() const { return kind == Kind::kAccuracy ? -value : value; }
  sim::LossPoints Points(const exec::LossCurve& c) const {
    sim::LossPoints p;
    for (std::size_t k = 0; k < c.loss.size(); ++k) {
      p.steps.push_back(static_cast<double>(c.steps[k]));
      p.loss.push_back(kind == Kind::kFraction ? c.loss[k] / c.loss[0]
                       : kind == Kind::kLoss   ? c.loss[k]
                                               : -c.accuracy[k]);
    }
    return p;
  }
};

std::string Shortest(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", v);
  return s;
}

std::string Target::Describe() const {
  switch (kind) {
    case Kind::kLoss: return "a held-out loss of " + Shortest(value);
    case Kind::kAccuracy: return Shortest(100 * value) + "% held-out accuracy";
    default: {
      char s[48];
      std::snprintf(s, sizeof s, "%.0f%% of the initial loss", 100 * value);
      return s;
    }
  }
}

std::string Target::Condition() const {
  switch (kind) {
    case Kind::kLoss: return "loss<=" + Shortest(value);
    case Kind::kAccuracy: return "accuracy>=" + Shortest(value);
    default: return "relative_loss<=" + Shortest(value);
  }
}

std::string Target::Slug() const {
  switch (kind) {
    case Kind::kLoss: return "loss_" + Shortest(value);
    case Kind::kAccuracy: return "accuracy_" + Shortest(value);
    default: return "relative_loss_" + Shortest(value);
  }
}

// At most one of --target, --target-loss and --target-accuracy (none: the
// fraction 0.6), each in its range; accuracy needs a classifier.
Target TargetOf(const TtaOptions& o, const models::ModelGraph& g) {
  const int given = (o.target != 0) + (o.target_loss != 0) + (o.target_accuracy != 0);
  if (given > 1)
    throw UserError("give one target: --target, --target-loss or --target-accuracy",
                    "the updates are counted to one target per run");
  Target t;
  if (o.target_loss != 0) {
    if (!(o.target_loss > 0) || !std::isfinite(o.target_loss))
      throw UserError("--target-loss must be a finite loss > 0, got " + Shortest(o.target_loss));
    t.kind = Target::Kind::kLoss;
    t.value = o.target_loss;
  } else if (o.target_accuracy != 0) {
    if (!(o.target_accuracy > 0 && o.target_accuracy <= 1))
      throw UserError("--target-accuracy must be in (0, 1], got " + Shortest(o.target_accuracy));
    if (g.op(g.num_ops() - 1).kind != models::OpKind::kSoftmaxCrossEntropy)
      throw UserError("--target-accuracy needs a classifier (a softmax cross-entropy loss); " +
                          g.name() + "'s loss is not one",
                      "give --target or --target-loss");
    t.kind = Target::Kind::kAccuracy;
    t.value = o.target_accuracy;
  } else if (o.target != 0) {
    if (!(o.target > 0 && o.target <= 1))
      throw UserError("--target must be a fraction of the initial loss in (0, 1], got " +
                      Shortest(o.target));
    t.value = o.target;
  }
  return t;
}

// The update rule `dtsim exec` would apply to scenario `s` with the same
// options (exec/scenario_run.h MakeExecOptions): the scenario's
// parallelism.optimizer unless --optimizer, momentum, warm-up and
// exponential decay. Its initial rate is each setting's (ReplicaSetting::lr).
exec::OptimizerOptions ProxyOptimizer(const TtaOptions& o, const config::Scenario& s) {
  exec::OptimizerOptions r = exec::OptimizerFor(s, 0);
  if (o.optimizer == "sgd") r.algorithm = exec::OptimizerAlgorithm::kSgd;
  else if (o.optimizer == "momentum") r.algorithm = exec::OptimizerAlgorithm::kMomentum;
  else if (o.optimizer == "adam") r.algorithm = exec::OptimizerAlgorithm::kAdam;
  else if (!o.optimizer.empty())
    throw UserError("--optimizer must be sgd, momentum or adam, got '" + o.optimizer + "'");
  if (!(o.momentum >= 0 && o.momentum < 1))
    throw UserError("--momentum must be in [0, 1), got " + Shortest(o.momentum));
  r.momentum = o.momentum;
  if (o.lr_decay_rate != 0) {
    if (o.lr_decay_steps < 1)
      throw UserError("--lr-decay-rate needs --lr-decay-steps (steps per factor)",
                      "e.g. --lr-decay-rate 0.1 --lr-decay-steps 1000");
    r.lr.kind = exec::LrScheduleKind::kExponential;
    r.lr.decay_rate = o.lr_decay_rate;
    r.lr.decay_steps = o.lr_decay_steps;
    r.lr.staircase = !o.lr_smooth;
  } else if (o.lr_decay_steps != 0 || o.lr_smooth) {
    throw UserError("--lr-decay-steps and --lr-smooth need --lr-decay-rate");
  }
  if (o.lr_warmup_steps < 0)
    throw UserError("--lr-warmup-steps must be >= 0", "give the steps of linear warm-up");
  r.lr.warmup_steps = o.lr_warmup_steps;
  const exec::LrSchedule check(r.lr);  // refuses a rate or decay out of range now
  return r;
}

// "momentum 0.9, warm-up 100 steps, decay x0.5 every 1000 steps (staircase)".
std::string RuleText(const exec::OptimizerOptions& r) {
  std::string t = exec::OptimizerAlgorithmName(r.algorithm);
  if (r.algorithm == exec::OptimizerAlgorithm::kMomentum) t += " " + Shortest(r.momentum);
  if (r.lr.warmup_steps > 0) t += ", warm-up " + std::to_string(r.lr.warmup_steps) + " steps";
  if (r.lr.kind == exec::LrScheduleKind::kExponential)
    t += ", decay x" + Shortest(r.lr.decay_rate) + " every " + std::to_string(r.lr.decay_steps) +
         " steps" + (r.lr.staircase ? " (staircase)" : " (smooth)");
  return t;
}

double LrScale(const std::string& rule, const exec::ReplicaSetting& s) {
  // Samples per update over one worker's batch: the global batch factor.
  const double k = static_cast<double>(exec::SamplesPerUpdate(s)) / static_cast<double>(s.batch);
  if (rule == "linear") return k;
  if (rule == "sqrt") return std::sqrt(k);
  return 1.0;
}

// One measured run.
struct Run {
  Family family;
  int workers = 0;
  double lr = 0;  // the initial learning rate it trained with
  int seed = 0;
  exec::LossCurve curve;
};

std::string Fixed(double v, int digits) {
  char s[64];
  std::snprintf(s, sizeof s, "%.*f", digits, v);
  return s;
}

// ", N diverged" for the runs of (family, workers) whose loss stopped
// being finite; "" when none did.
std::string Diverged(const std::vector<Run>& runs, const Family& family, int workers) {
  int n = 0;
  for (const Run& r : runs) {
    n += r.family.Key() == family.Key() && r.workers == workers && r.curve.diverged_at >= 0;
  }
  return n == 0 ? "" : ", " + std::to_string(n) + " diverged";
}

// "12.3 s", "45.6 ms", "789 us".
std::string Seconds(double s) {
  char text[32];
  if (s >= 1) {
    std::snprintf(text, sizeof text, "%.3g s", s);
  } else if (s >= 1e-3) {
    std::snprintf(text, sizeof text, "%.3g ms", s * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.3g us", s * 1e6);
  }
  return text;
}

// Refuses, before any proxy is trained, runs whose replicas would not fit
// in kMaxTtaMemoryBytes at once or whose training exceeds kMaxTtaFlops;
// else says the estimate on `err` (unless quiet).
//   memory of a run = (workers + 1) x params x 12 bytes (weights, gradients,
//                     momentum per replica and the average) + batch x saved
//                     activations x 4 bytes
//   work of a run   = steps x workers x batch x 3 x forward FLOPs per sample
//                     + (steps / eval_every + 1) x eval_samples x forward FLOPs
void CheckProxyCost(const models::ModelGraph& graph, const std::string& proxy, std::int64_t batch,
                    const std::vector<Run>& runs, const TtaOptions& o, std::ostream& err) {
  const models::GraphTotals t = graph.Totals();
  const double at_once = std::min<double>(
      static_cast<double>(runs.size()),
      o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency()));
  double largest_run_bytes = 0, flops = 0;
  for (const Run& r : runs) {
    const double w = r.workers;
    largest_run_bytes = std::max(largest_run_bytes,
                                 (w + 1) * static_cast<double>(t.params) * 12 +
                                     static_cast<double>(batch) * t.saved_elements * 4);
    flops += static_cast<double>(o.steps) * w * static_cast<double>(batch) * 3 * t.fwd_flops;
    // Evaluations: every eval_every updates and at the end, a forward pass
    // over eval_samples.
    flops += (static_cast<double>(o.steps) / o.eval_every + 1) *
             static_cast<double>(o.eval_samples) * t.fwd_flops;
  }
  const double bytes = largest_run_bytes * at_once;
  char line[400];
  if (bytes > kMaxTtaMemoryBytes) {
    std::snprintf(line, sizeof line,
                  "the proxy %s (%.3g parameters) would take about %.3g GiB for %.0f run(s) at "
                  "once, more than the %.0f GiB dtsim tta trains in memory",
                  proxy.c_str(), static_cast<double>(t.params), bytes / (1ull << 30), at_once,
                  kMaxTtaMemoryBytes / (1ull << 30));
    throw UserError(line, "use a small proxy (--proxy mnist-mlp or cifar10-cnn), fewer --workers, "
                          "a smaller --batch or fewer --jobs");
  }
  if (flops > kMaxTtaFlops) {
    std::snprintf(line, sizeof line,
                  "the proxy runs would take about %.3g FLOPs of training, more than the %.0e "
                  "dtsim tta allows (about a day on one core)",
                  flops, kMaxTtaFlops);
    throw UserError(line, "fewer --steps, --seeds or --workers, a smaller --batch or proxy");
  }
  if (!o.quiet) {
    std::snprintf(line, sizeof line,
                  "estimate: about %.3g GFLOPs of proxy training, %.3g MiB per run\n", flops / 1e9,
                  largest_run_bytes / (1 << 20));
    err << line;
  }
}

}  // namespace

void TtaCommand(const TtaOptions& o, std::ostream& out, std::ostream& err) {
  const sim::Sweep sweep = sim::LoadSweep(o.scenario_path, o.jobs);
  std::vector<Point> points;
  if (!o.local && !o.network.empty())
    throw UserError("--network prices an emulated link of this machine: it needs --local",
                    "add --local");
  const LocalRunOptions local{.threads = 1, .network = o.network, .latency = o.latency};
  for (const sim::SweepPoint& sp : sweep.points)
    points.push_back(SimulatePoint(sp, o.local ? &local : nullptr));

  // The proxy: the named model, else the scenario's; trained on the data
  // `dtsim exec` would use.
  const config::Scenario& first = sweep.points.front().scenario;
  const models::ModelGraph graph =
      o.proxy.empty() ? config::BuildWorkloadModel(first)
      : (o.proxy.ends_with(".yaml") || o.proxy.ends_with(".yml") || o.proxy.ends_with(".onnx"))
          ? models::LoadModelFile(o.proxy)
          : models::BuildZooModel(o.proxy);
  const std::int64_t batch = o.batch > 0 ? o.batch : first.workload.batch_per_device;
  const Target target = TargetOf(o, graph);
  // Every replica trains with the rule `dtsim exec` applies to the
  // scenario; the settings differ only in their initial rate.
  const exec::OptimizerOptions rule = ProxyOptimizer(o, first);
  std::vector<double> grid = o.lr_grid;
  for (double rate : grid) {
    if (!(std::isfinite(rate) && rate > 0))
      throw UserError("--lr-grid: rates must be finite and > 0, got " + Shortest(rate));
  }
  std::sort(grid.begin(), grid.end());
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  // An IDX folder holds a test split: every run is evaluated on its first
  // eval_samples (as `dtsim exec --eval-every` evaluates); other data on
  // the training set's last samples.
  const bool test_split = !o.dataset.empty() && fs::is_directory(o.dataset);
  const std::unique_ptr<exec::Dataset> eval_data =
      test_split ? exec::MakeEvalDataset(graph, o.dataset) : nullptr;

  // The settings to measure: every family at the measured worker counts.
  std::map<Family, std::vector<int>> measured;
  for (const Point& p : points) {
    if (!p.infeasible.empty()) continue;
    std::vector<int>& w = measured[p.family];
    if (o.workers.empty()) w.push_back(p.workers);
  }
  for (auto& [family, w] : measured) {
    if (!o.workers.empty()) w = o.workers;
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
  }
  if (measured.empty()) throw InfeasiblePlan("dtsim tta: no point of the sweep can run");
  auto setting_of = [&](const Family& family, int workers, double lr) {
    exec::ReplicaSetting s;
    s.mode = family.mode;
    s.workers = workers;
    s.averaging_period = family.averaging_period;
    s.staleness = family.staleness;
    s.backups = std::min(workers - 1,
                         static_cast<int>(std::lround(family.backup_fraction * workers)));
    s.batch = batch;
    s.lr = lr;
    s.optimizer = rule;
    return s;
  };
  // The rate a setting trains at without a grid: --lr scaled by the rule.
  auto scaled_lr = [&](const Family& family, int workers) {
    return o.lr * LrScale(o.lr_scaling, setting_of(family, workers, o.lr));
  };
  std::vector<Run> runs;
  for (const auto& [family, ws] : measured) {
    for (int w : ws) {
      const std::vector<double> rates = grid.empty() ? std::vector<double>{scaled_lr(family, w)} : grid;
      for (double rate : rates) {
        for (int seed = 1; seed <= o.seeds; ++seed) runs.push_back({family, w, rate, seed, {}});
      }
    }
  }
  CheckProxyCost(graph, o.proxy.empty() ? graph.name() : o.proxy, batch, runs, o, err);
  const std::string lr_rule =
      grid.empty() ? Shortest(o.lr) + " for one worker's batch, scaled " + o.lr_scaling
                   : "tuned per setting over the grid " + [&] {
                       std::string g;
                       for (double rate : grid) g += (g.empty() ? "" : ",") + Shortest(rate);
                       return g;
                     }() + " (the rate with the fewest mean updates to the target)";
  if (!o.quiet) {
    err << sweep.name << ": " << points.size() << " points simulated; measuring " << runs.size()
        << " proxy runs (" << measured.size() << " settings x worker counts x "
        << (grid.empty() ? 1 : grid.size()) << " rates x " << o.seeds << " seeds) of "
        << graph.name() << ", batch " << batch << " per worker, up to " << o.steps
        << " updates, " << RuleText(rule) << "\n";
  }
  // Runs are independent: each has its own backend, data and model; the
  // test split is read by all.
  const std::optional<ParallelFailure> failure = ParallelFor(
      runs.size(), o.jobs, {}, 1.0, [&](std::size_t i) {
        Run& r = runs[i];
        // The seed as `dtsim exec` uses a scenario's: the data's order and
        // the parameters' initialisation.
        const std::unique_ptr<exec::Dataset> data =
            exec::MakeDataset(graph, o.dataset, static_cast<std::uint64_t>(r.seed));
        const std::unique_ptr<exec::Backend> cpu = exec::MakeCpuBackend(exec::BestCpuIsa());
        exec::ModelProblemOptions po;
        po.batch = batch;
        po.eval_samples = o.eval_samples;
        po.seed = static_cast<std::uint64_t>(r.seed);
        if (eval_data) {
          // Data parallelism and local SGD evaluate the test split's first
          // eval_samples in one share per replica; parameter servers on
          // one worker (exec/runtime/plan_executor.cc).
          const bool shared = r.family.mode == exec::SyncMode::kSynchronous ||
                              r.family.mode == exec::SyncMode::kLocalSgd;
          po.eval_shards = shared ? r.workers : 1;
        } else {
          // Held out: the dataset's last samples (training reads from 0 up).
          po.eval_first = std::max<std::int64_t>(0, data->size() - o.eval_samples);
        }
        exec::ModelProblem problem(graph, *data, *cpu, po, eval_data.get());
        exec::ReplicaRunOptions ro;
        ro.steps = o.steps;
        ro.eval_every = o.eval_every;
        // The rest of the curve does not change the estimate.
        switch (target.kind) {
          case Target::Kind::kFraction: ro.stop_at_fraction = target.value; break;
          case Target::Kind::kLoss: ro.stop_at_loss = target.value; break;
          case Target::Kind::kAccuracy: ro.stop_at_accuracy = target.value; break;
        }
        ro.divergence_is_result = true;  // a diverging setting does not reach the target
        r.curve = exec::TrainReplicas(problem, *cpu, setting_of(r.family, r.workers, r.lr), ro);
      });
  if (failure) std::rethrow_exception(failure->error);

  // Updates to the target per family and worker count, at the rate that
  // gets there in the fewest (the only one without a grid).
  struct Measured {
    std::vector<int> workers;
    std::vector<sim::StepsEstimate> steps;
    std::vector<double> lr;  // the rate chosen; NaN when no rate reached the target
  };
  constexpr double kNoRate = std::numeric_limits<double>::quiet_NaN();
  std::map<Family, Measured> estimates;
  for (const auto& [family, ws] : measured) {
    for (int w : ws) {
      std::map<double, std::vector<sim::LossPoints>> by_rate;  // ascending rates
      for (const Run& r : runs) {
        if (r.family.Key() == family.Key() && r.workers == w)
          by_rate[r.lr].push_back(target.Points(r.curve));
      }
      sim::StepsEstimate best;
      double best_lr = kNoRate;
      for (const auto& [rate, seeds] : by_rate) {
        const sim::StepsEstimate e = sim::EstimateSteps(seeds, target.Threshold());
        // Ties keep the smaller rate; without a valid one, the estimate of
        // the rate most seeds brought to the target says how far it fell.
        if (e.valid() ? !best.valid() || e.mean < best.mean
                      : !best.valid() && (best.seeds == 0 || e.reached > best.reached)) {
          best = e;
          best_lr = e.valid() ? rate : kNoRate;
        }
      }
      Measured& m = estimates[family];
      m.workers.push_back(w);
      m.steps.push_back(best);
      m.lr.push_back(best_lr);
    }
  }

  // Per point: updates (measured or fitted) x simulated seconds per update.
  std::string csv;
  for (const sim::SweepAxis& a : sweep.axes) csv += sim::CsvField(a.path) + ',';
  csv += "point,setting,workers,throughput_samples_per_s,seconds_per_update,lr,target,"
         "updates_to_target,updates_low,updates_high,estimate,time_to_target_s,time_low_s,"
         "time_high_s,note\n";
  struct Row {
    std::size_t point;
    sim::StepsEstimate steps;
    double time = 0;
  };
  std::vector<Row> rows;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
      csv += sim::CsvField(sweep.axes[a].values[sweep.points[i].choice[a]]) + ',';
    }
    csv += sim::CsvField(sweep.points[i].name) + ',';
    if (!p.infeasible.empty()) {
      csv += ",,,,,,,,,,,,," + sim::CsvField("infeasible: " + p.infeasible) + "\n";
      continue;
    }
    csv += sim::CsvField(p.family.Name()) + ',' + std::to_string(p.workers) + ',' +
           Fixed(p.throughput, 3) + ',' + Fixed(p.seconds_per_update, 9) + ',';
    const Measured& m = estimates.at(p.family);
    const std::vector<int>& ws = m.workers;
    const std::vector<sim::StepsEstimate>& es = m.steps;
    std::vector<int> ok_w;
    std::vector<sim::StepsEstimate> ok_e;
    for (std::size_t k = 0; k < ws.size(); ++k) {
      if (es[k].valid()) {
        ok_w.push_back(ws[k]);
        ok_e.push_back(es[k]);
      }
    }
    const bool measured_here = std::find(ws.begin(), ws.end(), p.workers) != ws.end();
    bool missed_below = false;
    for (std::size_t k = 0; k < ws.size(); ++k) {
      missed_below = missed_below || (ws[k] <= p.workers && !es[k].valid());
    }
    sim::StepsEstimate e;
    std::string note;
    // The rate of the point: the grid's choice where measured (none where no
    // rate reached the target), else the scaled --lr.
    double lr = grid.empty() ? scaled_lr(p.family, p.workers) : kNoRate;
    if (measured_here) {
      const auto k = static_cast<std::size_t>(std::find(ws.begin(), ws.end(), p.workers) - ws.begin());
      e = es[k];
      if (!grid.empty()) lr = m.lr[k];
      if (!e.valid()) {
        note = std::to_string(e.seeds - e.reached) + " of " + std::to_string(e.seeds) +
               " seeds did not reach the target in " + std::to_string(o.steps) + " updates" +
               (grid.empty() ? "" : " at any rate of the grid (the closest rate's count)");
        for (const Run& r : runs) {
          if (r.family.Key() == p.family.Key() && r.workers == p.workers &&
              r.curve.diverged_at >= 0) {
            note += "; seed " + std::to_string(r.seed) + " diverged (loss not finite at update " +
                    std::to_string(r.curve.diverged_at) + ")";
          }
        }
      }
    } else if (missed_below) {
      // Fewer workers already missed the target: more are not predicted.
      note = "fewer measured workers did not reach the target: not extrapolated";
    } else if (ok_w.size() >= 2) {
      e = sim::WorkersFit(ok_w, ok_e).At(p.workers);
      if (e.extrapolated) note = "extrapolated from the measured worker counts";
    } else {
      note = "fewer than 2 measured worker counts reached the target: no fit";
    }
    csv += (std::isnan(lr) ? std::string() : Shortest(lr)) + ',' +
           sim::CsvField(target.Condition()) + ',';
    if (!e.valid()) {
      csv += ",,,none,,,," + sim::CsvField(note) + "\n";
      continue;
    }
    const double t = e.mean * p.seconds_per_update;
    rows.push_back({i, e, t});
    csv += Fixed(e.mean, 2) + ',' + Fixed(e.low, 2) + ',' + Fixed(e.high, 2) + ',' +
           (e.fitted ? "fitted" : "measured") + ',' + Fixed(t, 6) + ',' +
           Fixed(e.low * p.seconds_per_update, 6) + ',' + Fixed(e.high * p.seconds_per_update, 6) +
           ',' + sim::CsvField(note) + "\n";
  }

  // The curves, as CSV and TensorBoard scalars (one run per setting, rate
  // and seed; accuracy empty where the problem has none), and per measured
  // setting its updates to the target under a tag naming the target.
  std::string curves = "setting,workers,seed,lr,update,samples,loss,relative_loss,accuracy\n";
  for (const Run& r : runs) {
    for (std::size_t k = 0; k < r.curve.loss.size(); ++k) {
      const double acc = r.curve.accuracy[k];
      curves += sim::CsvField(r.family.Name()) + ',' + std::to_string(r.workers) + ',' +
                std::to_string(r.seed) + ',' + Shortest(r.lr) + ',' +
                std::to_string(r.curve.steps[k]) + ',' + std::to_string(r.curve.samples[k]) +
                ',' + Fixed(r.curve.loss[k], 6) + ',' + Fixed(r.curve.loss[k] / r.curve.loss[0], 6) +
                ',' + (std::isnan(acc) ? std::string() : Fixed(acc, 6)) + "\n";
    }
  }
  report::EventFile events;
  for (const Run& r : runs) {
    std::string run = r.family.Name() + " W=" + std::to_string(r.workers) +
                      (grid.empty() ? "" : " lr=" + Shortest(r.lr)) + " seed=" +
                      std::to_string(r.seed);
    std::replace(run.begin(), run.end(), ' ', '_');
    for (std::size_t k = 0; k < r.curve.loss.size(); ++k) {
      events.AddScalar(run + "/loss", r.curve.steps[k], 0, static_cast<float>(r.curve.loss[k]));
      if (!std::isnan(r.curve.accuracy[k]))
        events.AddScalar(run + "/accuracy", r.curve.steps[k], 0,
                         static_cast<float>(r.curve.accuracy[k]));
    }
  }
  for (const auto& [family, m] : estimates) {
    for (std::size_t k = 0; k < m.workers.size(); ++k) {
      if (!m.steps[k].valid()) continue;
      std::string tag = "updates_to_" + target.Slug() + "/" + family.Name() + " W=" +
                        std::to_string(m.workers[k]);
      std::replace(tag.begin(), tag.end(), ' ', '_');
      events.AddScalar(tag, 0, 0, static_cast<float>(m.steps[k].mean));
    }
  }

  // The plot: time to the target against the first numeric axis that is
  // not the devices (H), one line per combination of the others.
  report::LineChart chart;
  chart.title = sweep.name + ": time to " + target.Describe();
  chart.y.label = "time to target (s)";
  chart.x.include_zero = false;
  std::size_t x_axis = sweep.axes.size();
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    if (sweep.axes[a].numeric && sweep.axes[a].path.rfind("cluster.", 0) != 0) {
      x_axis = a;
      break;
    }
  }
  chart.x.label = x_axis < sweep.axes.size() ? sweep.axes[x_axis].path : "point";
  chart.x.scale = report::Scale::kLog2;
  chart.x.integer = true;
  // A point's values of the axes other than x (its line, and its group for
  // the best setting), and its x.
  auto other_axes = [&](std::size_t point) {
    std::vector<std::size_t> key;
    for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
      if (a != x_axis) key.push_back(sweep.points[point].choice[a]);
    }
    return key;
  };
  auto x_of = [&](std::size_t point) {
    return x_axis < sweep.axes.size()
               ? std::strtod(sweep.axes[x_axis].values[sweep.points[point].choice[x_axis]].c_str(),
                             nullptr)
               : static_cast<double>(point + 1);
  };
  // Beside it, the simulated throughput of the same points.
  report::LineChart speed = chart;
  speed.title = sweep.name + ": simulated throughput";
  speed.y.label = "throughput (samples/s)";
  std::map<std::vector<std::size_t>, std::size_t> series_of;
  for (const Row& row : rows) {
    auto [it, added] = series_of.emplace(other_axes(row.point), chart.series.size());
    if (added) {
      std::string name;
      for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
        if (a == x_axis) continue;
        name += (name.empty() ? "" : ", ") + report::ShortAxisName(sweep, a) + "=" +
                sweep.axes[a].values[sweep.points[row.point].choice[a]];
      }
      chart.series.push_back({name, {}});
      speed.series.push_back({name, {}});
    }
    chart.series[it->second].points.push_back({x_of(row.point), row.time});
    speed.series[it->second].points.push_back({x_of(row.point), points[row.point].throughput});
  }
  const std::string svg = report::RenderLineChart(chart);
  const std::string speed_svg = report::RenderLineChart(speed);

  // The best setting per combination of the axes other than x.
  std::map<std::vector<std::size_t>, const Row*> best;
  for (const Row& row : rows) {
    const Row*& b = best[other_axes(row.point)];
    if (b == nullptr || row.time < b->time) b = &row;
  }
  std::string best_text;
  for (const auto& [key, row] : best) {
    const sim::SweepPoint& sp = sweep.points[row->point];
    const double spu = points[row->point].seconds_per_update;
    best_text += "best: " + sp.name + ": " + Seconds(row->time) + " (" +
                 Seconds(row->steps.low * spu) + " to " + Seconds(row->steps.high * spu) + "), " +
                 Fixed(row->steps.mean, 1) + " updates of " + Seconds(spu) +
                 (row->steps.fitted ? ", fitted" : "") +
                 (row->steps.extrapolated ? " (extrapolated)" : "") + "\n";
  }

  // The page: the sweep's page (throughput, scaling, breakdown, its table)
  // led by the time-to-accuracy section: the best settings, the plots of
  // time to target and throughput, and tta.csv as a table.
  const std::string evaluated =
      test_split ? "held out: the first " + std::to_string(o.eval_samples) +
                       " samples of the test split of " + o.dataset
                 : "held out: " + std::to_string(o.eval_samples) + " samples of the training set";
  std::string lead = "<h2>Time to " + report::EscapeXml(target.Describe()) +
                     "</h2>\n<p>Updates to the target (" + report::EscapeXml(target.Condition()) +
                     ", " + report::EscapeXml(evaluated) + ") measured on " +
                     report::EscapeXml(graph.name()) + " (batch " + std::to_string(batch) +
                     " per worker, " + std::to_string(o.seeds) + " seeds, trained with " +
                     report::EscapeXml(RuleText(rule)) + " as dtsim exec trains, learning rate " +
                     report::EscapeXml(lr_rule) +
                     "), times the simulated seconds per update (docs/tta.md). Files: "
                     "<a href=\"tta.csv\">tta.csv</a>, <a href=\"curves.csv\">curves.csv</a>, "
                     "<a href=\"tta.svg\">tta.svg</a>.</p>\n<pre>" +
                     report::EscapeXml(best_text) + "</pre>\n<figure>\n" + svg +
                     "</figure>\n<figure>\n" + speed_svg + "</figure>\n<table>\n";
  {
    bool header = true;
    std::size_t at = 0;
    while (at < csv.size()) {
      const std::size_t end = csv.find('\n', at);
      const std::string line = csv.substr(at, end - at);
      at = end + 1;
      lead += "<tr>";
      for (const std::string& f : report::SplitCsvLine(line)) {
        lead += (header ? "<th>" : "<td>") + report::EscapeXml(f) + (header ? "</th>" : "</td>");
      }
      lead += "</tr>\n";
      header = false;
    }
  }
  lead += "</table>\n";
  sim::SweepRunOptions sweep_options;
  sweep_options.jobs = o.jobs;
  const std::vector<sim::PointResult> results = sim::RunSweep(sweep, sweep_options);
  const std::string sweep_csv = sim::SweepCsv(sweep, results);
  const report::SweepPlots plots = report::PlotSweep(sweep, results);

  const fs::path dir = o.out_dir.empty() ? fs::path(sweep.out_dir) / "tta" : fs::path(o.out_dir);
  OutputSet files(dir);
  WriteOutput(files, "tta.csv", csv);
  WriteOutput(files, "curves.csv", curves);
  WriteOutput(files, "tta.svg", svg);
  WriteOutput(files, "sweep.csv", sweep_csv);
  WriteOutput(files, "throughput.svg", plots.throughput);
  WriteOutput(files, "scaling_efficiency.svg", plots.scaling_efficiency);
  WriteOutput(files, "breakdown.svg", plots.breakdown);
  WriteOutput(files, "index.html", report::SweepPageHtml(sweep, plots, sweep_csv, lead));
  WriteOutput(files, report::kEventFileName, events.bytes());
  const auto written = files.Commit();
  if (rows.empty()) {
    throw InfeasiblePlan("dtsim tta: no point reaches " + target.Describe() + " within " +
                             std::to_string(o.steps) + " updates (tta.csv in " + dir.string() +
                             " says why for each)",
                         "give more --steps, an easier target or another learning rate");
  }
  if (o.quiet) return;
  // The measured updates to the target, per setting.
  out << "training rule: " << RuleText(rule) << ", learning rate " << lr_rule << "\n";
  out << "updates to " << target.Describe() << " (mean of " << o.seeds
      << " seeds, 95% band):\n";
  for (const auto& [family, m] : estimates) {
    for (std::size_t k = 0; k < m.workers.size(); ++k) {
      const sim::StepsEstimate& e = m.steps[k];
      out << "  " << family.Name() << ", " << m.workers[k] << " workers: "
          << (e.valid() ? Fixed(e.mean, 1) + " (" + Fixed(e.low, 1) + " to " + Fixed(e.high, 1) +
                              "), lr " + Shortest(m.lr[k])
                        : std::string("not reached by ") + std::to_string(e.seeds - e.reached) +
                              " seed(s)" + Diverged(runs, family, m.workers[k]))
          << "\n";
    }
  }
  out << best_text;
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

namespace {

// The update rule of the proxy's runs: rate, its scaling or grid, optimizer,
// warm-up and decay (as `dtsim exec` applies them).
void AddUpdateRuleOptions(CLI::App* cmd, TtaOptions* o) {
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
  cmd->add_option("--proxy", o->proxy,
                  "Model trained for real: a zoo name or model file (default: the scenario's)");
  cmd->add_option("--dataset", o->dataset,
                  "The proxy's data, shuffled by each seed as dtsim exec shuffles it: an IDX "
                  "folder (MNIST, Fashion-MNIST: trains on train-*, evaluates on the first "
                  "--eval-samples of t10k-*) or a dataset file (docs/dataset_format.md); "
                  "default a synthetic set shaped like the model");
  cmd->add_option("--batch", o->batch,
                  "Samples per worker per update on the proxy (default: batch_per_device)")
      ->check(CLI::Range(std::int64_t{1}, kMaxTtaBatch));
  cmd->add_option("--workers", o->workers,
                  "Worker counts to measure (default: each point's own); others are fitted "
                  "as a power law of the measured ones")
      ->delimiter(',')
      ->check(CLI::Range(1, kMaxTtaWorkers));
  cmd->add_option("--steps", o->steps, "Updates per run at most")
      ->check(CLI::Range(std::int64_t{1}, kMaxTtaSteps))
      ->capture_default_str();
  cmd->add_option("--eval-every", o->eval_every, "Updates between loss evaluations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--eval-samples", o->eval_samples, "Held-out samples of each evaluation")
      ->check(CLI::Range(std::int64_t{1}, kMaxTtaEvalSamples))
      ->capture_default_str();
  cmd->add_option("--seeds", o->seeds, "Seeds per setting (the band comes from them)")
      ->check(CLI::Range(1, kMaxTtaSeeds))
      ->capture_default_str();
  auto* target =
      cmd->add_option(
             "--target", o->target,
             "Target: the held-out loss as a fraction of the initial one, in (0, 1] (the default, "
             "0.6, when no target is given)")
          ->check(FinitePositive() & CLI::Range(0.0, 1.0));
  auto* target_loss =
      cmd->add_option("--target-loss", o->target_loss, "Target: an absolute held-out loss")
          ->check(FinitePositive())
          ->excludes(target);
  cmd->add_option("--target-accuracy", o->target_accuracy,
                  "Target: a held-out top-1 accuracy in (0, 1] (a classifier)")
      ->check(FinitePositive() & CLI::Range(0.0, 1.0))
      ->excludes(target)
      ->excludes(target_loss);
  AddUpdateRuleOptions(cmd, o.get());
  cmd->add_option("-j,--jobs", o->jobs, "Proxy runs at once (default: one per core)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("-q,--quiet", o->quiet, "No summary");
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
