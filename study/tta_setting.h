// The settings of a time-to-accuracy study: each sweep point's
// synchronisation and simulated seconds per update, and the replica
// settings its proxy runs train with.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>

#include "exec/runtime/optimizer.h"
#include "exec/replicas/replica_trainer.h"
#include "study/sweep.h"
#include "study/tta_options.h"

namespace dtsim::study {

// A point's synchronisation, without its worker count: the settings of one
// curve family.
struct Family {
  exec::SyncMode mode = exec::SyncMode::kSynchronous;
  int averaging_period = 1;
  int staleness = 0;
  double backup_fraction = 0;  // kBackup: dropped gradients / workers
  auto Key() const {
    return std::tuple(static_cast<int>(mode), averaging_period, staleness, backup_fraction);
  }
  bool operator<(const Family& o) const { return Key() < o.Key(); }
  // "synchronous", "local_sgd H=8", "asynchronous staleness=3", "backup 25%
  // dropped".
  std::string Name() const;
};

// What the simulator says about one sweep point.
struct TtaPoint {
  Family family;
  int workers = 0;
  double seconds_per_update = 0;  // 0 when the point cannot run
  double throughput = 0;          // samples/s
  std::string infeasible;         // why the point cannot run; "" = it can
};

// Simulates `sp` (on this machine as `local_run` makes it, when given).
// Throws UserError for a strategy other than data parallelism, local SGD
// and parameter servers.
TtaPoint SimulateTtaPoint(const SweepPoint& sp, const LocalRun& local_run);

// The update rule `dtsim exec` applies to the scenario (`scenario_rule`,
// exec::OptimizerFor) with the options' optimizer, momentum,
// warm-up and exponential decay. Its initial rate is each setting's
// (ReplicaSetting::lr). Throws UserError for a value out of range.
exec::OptimizerOptions ProxyOptimizer(const TtaOptions& o, exec::OptimizerOptions scenario_rule);

// The replica setting of `family` at `workers`, `batch` samples per worker
// and initial rate `lr`, trained with `rule`.
exec::ReplicaSetting SettingOf(const Family& family, int workers, double lr, std::int64_t batch,
                               const exec::OptimizerOptions& rule);

// The factor lr_scaling ("linear", "sqrt", else none) applies to one
// worker's rate in `setting`: of samples per update over one worker's batch.
double LrScale(const std::string& lr_scaling, const exec::ReplicaSetting& setting);
// The rate a setting trains at without a grid: o.lr scaled by
// o.lr_scaling.
double ScaledLr(const TtaOptions& o, const Family& family, int workers, std::int64_t batch,
                const exec::OptimizerOptions& rule);

}  // namespace dtsim::study
