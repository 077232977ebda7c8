// Time to accuracy: for every point of a sweep, the time to reach a target
// = the updates to it, measured for real on a small proxy with the point's
// synchronisation (exec/replicas/replica_trainer.h), x the seconds per update
// simulated on the cluster (sim/time_to_accuracy.h says how they combine).
// docs/tta.md describes the method and its checks.
#pragma once

#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "study/sweep.h"
#include "study/tta_options.h"
#include "study/tta_proxy.h"
#include "study/tta_setting.h"
#include "study/tta_table.h"
#include "study/tta_target.h"

namespace dtsim::study {

// Everything a study measured and estimated, that its files are written from.
struct TtaStudy {
  std::vector<TtaPoint> points;  // one per sweep point, in order
  std::string model;             // the proxy model's name
  Proxy proxy;
  // The learning rate in words: "0.05 for one worker's batch, scaled
  // linear", or the grid it was tuned over.
  std::string lr_rule;
  bool test_split = false;  // evaluated on exec's test split (else held-out training samples)
  std::vector<TtaRun> runs;
  std::map<Family, Measured> estimates;
  TtaTable table;  // tta.csv and the points with an estimate
};

// Simulates every point of `sweep` (on this machine as `local_run` makes
// it, when given), trains the proxy runs (o.proxy, else the first point's
// model) as `dtsim exec` would and estimates each point's time to the
// target. Says the plan and cost of the runs on `err` unless
// o.quiet. Throws UserError for a bad option or a strategy the proxy cannot
// train, InfeasiblePlan when no point can run.
TtaStudy MeasureTta(const Sweep& sweep, const TtaOptions& o, const LocalRun& local_run,
                    std::ostream& err);

// curves.csv: every run's evaluations (accuracy empty where the problem has
// none).
std::string CurvesCsv(const TtaStudy& study);

// The axis time to target is plotted against: the first numeric one that is
// not the cluster's; sweep.axes.size() = none (the points in order).
std::size_t TtaXAxis(const Sweep& sweep);
// A point's value along x_axis (none: its position from 1).
double TtaX(const Sweep& sweep, std::size_t x_axis, std::size_t point);
// A point's choices on the axes other than x_axis: its line in the plots
// and its group for the best setting.
std::vector<std::size_t> OtherAxes(const Sweep& sweep, std::size_t x_axis, std::size_t point);

// "best: NAME: 12.3 s (10 s to 15 s), 40.0 updates of 308 ms" per group of
// the axes other than x, each line ending in '\n'.
std::string BestSettingsText(const Sweep& sweep, const TtaStudy& study);
// The rule and the measured updates to the target per setting, for the
// summary.
std::string UpdatesSummary(const TtaStudy& study, const TtaOptions& o);

}  // namespace dtsim::study
