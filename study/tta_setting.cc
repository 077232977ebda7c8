#include "study/tta_setting.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error.h"
#include "exec/train/lr_schedule.h"
#include "sim/simulator.h"
#include "study/tta_text.h"

namespace dtsim::study {

std::string Family::Name() const {
  char s[96];
  switch (mode) {
    case exec::SyncMode::kLocalSgd:
      std::snprintf(s, sizeof s, "local_sgd H=%d", averaging_period);
      break;
    case exec::SyncMode::kAsynchronous:
      std::snprintf(s, sizeof s, "asynchronous staleness=%d", staleness);
      break;
    case exec::SyncMode::kBackup:
      std::snprintf(s, sizeof s, "backup %.0f%% dropped", 100 * backup_fraction);
      break;
    default: std::snprintf(s, sizeof s, "synchronous");
  }
  return s;
}

namespace {

// The family of point `s`, simulated as `pred` with `workers` workers;
// `async`: an asynchronous parameter server.
Family FamilyOf(const config::Scenario& s, const sim::Prediction& pred, int workers, bool async) {
  Family f;
  const config::Strategy strategy = s.parallelism.strategy;
  const int aggregate = s.parallelism.parameter_server.replicas_to_aggregate;
  if (strategy == config::Strategy::kLocalSgd) {
    f.mode = exec::SyncMode::kLocalSgd;
    f.averaging_period = pred.comm.averaging_period;
  } else if (async) {
    f.mode = exec::SyncMode::kAsynchronous;
    // The simulated run's mean staleness, to the nearest update.
    f.staleness = pred.async ? static_cast<int>(std::lround(pred.async->staleness.mean)) : 0;
  } else if (strategy == config::Strategy::kParameterServer && aggregate > 0 &&
             aggregate < workers) {
    f.mode = exec::SyncMode::kBackup;
    f.backup_fraction = 1.0 - static_cast<double>(aggregate) / workers;
  }
  return f;
}

}  // namespace

TtaPoint SimulateTtaPoint(const SweepPoint& sp, const LocalRun& local_run) {
  TtaPoint p;
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
  if (local_run) {
    // Every plan rank (workers and servers) is a process of its own.
    here = sp.scenario;
    local_run(pred.plan.num_ranks(), &here);
    pred = sim::Simulate(here, options);
  }
  const config::Scenario& s = local_run ? here : sp.scenario;
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
  p.family = FamilyOf(s, pred, p.workers, async);
  return p;
}

exec::OptimizerOptions ProxyOptimizer(const TtaOptions& o, exec::OptimizerOptions r) {
  if (o.optimizer == "sgd")
    r.algorithm = exec::OptimizerAlgorithm::kSgd;
  else if (o.optimizer == "momentum")
    r.algorithm = exec::OptimizerAlgorithm::kMomentum;
  else if (o.optimizer == "adam")
    r.algorithm = exec::OptimizerAlgorithm::kAdam;
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

exec::ReplicaSetting SettingOf(const Family& family, int workers, double lr, std::int64_t batch,
                               const exec::OptimizerOptions& rule) {
  exec::ReplicaSetting s;
  s.mode = family.mode;
  s.workers = workers;
  s.averaging_period = family.averaging_period;
  s.staleness = family.staleness;
  s.backups =
      std::min(workers - 1, static_cast<int>(std::lround(family.backup_fraction * workers)));
  s.batch = batch;
  s.lr = lr;
  s.optimizer = rule;
  return s;
}

double ScaledLr(const TtaOptions& o, const Family& family, int workers, std::int64_t batch,
                const exec::OptimizerOptions& rule) {
  return o.lr * LrScale(o.lr_scaling, SettingOf(family, workers, o.lr, batch, rule));
}

double LrScale(const std::string& rule, const exec::ReplicaSetting& s) {
  // Samples per update over one worker's batch: the global batch factor.
  const double k = static_cast<double>(exec::SamplesPerUpdate(s)) / static_cast<double>(s.batch);
  if (rule == "linear") return k;
  if (rule == "sqrt") return std::sqrt(k);
  return 1.0;
}

}  // namespace dtsim::study
