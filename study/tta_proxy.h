// The proxy runs of a time-to-accuracy study: which settings are measured,
// what the runs would cost, training them, and the updates each setting
// took to the target.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "exec/data/dataset.h"
#include "exec/replicas/replica_trainer.h"
#include "models/graph.h"
#include "sim/time_to_accuracy.h"
#include "study/tta_options.h"
#include "study/tta_setting.h"
#include "study/tta_target.h"

namespace dtsim::study {

// The proxy every run trains, and how.
struct Proxy {
  std::string name;        // --proxy as given, else the model's name
  std::int64_t batch = 0;  // samples per worker per update
  Target target;
  exec::OptimizerOptions rule;  // every setting's; the settings differ in their initial rate
  std::vector<double> grid;     // rates tried per setting, ascending; empty = the scaled lr
};

// One measured run.
struct TtaRun {
  Family family;
  int workers = 0;
  double lr = 0;  // the initial learning rate it trained with
  int seed = 0;
  exec::LossCurve curve;
};

// A family's updates to the target per measured worker count, at the rate
// that gets there in the fewest (the only one without a grid).
struct Measured {
  std::vector<int> workers;               // ascending
  std::vector<sim::StepsEstimate> steps;  // per worker count
  std::vector<double> lr;                 // the rate chosen; NaN when no rate reached the target
};

// The worker counts measured per family of the feasible points: `workers`
// when given, else each point's own; sorted, unique.
std::map<Family, std::vector<int>> MeasuredSettings(const std::vector<TtaPoint>& points,
                                                    const std::vector<int>& workers);

// Every run to train: each setting at each rate (the grid's, else the
// scaled o.lr) and seed 1..o.seeds.
std::vector<TtaRun> PlanRuns(const std::map<Family, std::vector<int>>& measured, const Proxy& proxy,
                             const TtaOptions& o);

// Refuses, before any proxy is trained, runs whose replicas would not fit
// in kMaxTtaMemoryBytes at once or whose training exceeds kMaxTtaFlops
// (UserError); else says the estimate on `err` (unless o.quiet).
//   memory of a run = (workers + 1) x params x 12 bytes (weights, gradients,
//                     momentum per replica and the average) + batch x saved
//                     activations x 4 bytes
//   work of a run   = steps x workers x batch x 3 x forward FLOPs per sample
//                     + (steps / eval_every + 1) x eval_samples x forward FLOPs
void CheckProxyCost(const models::ModelGraph& graph, const Proxy& proxy,
                    const std::vector<TtaRun>& runs, const TtaOptions& o, std::ostream& err);

// Trains every run of `runs` (o.jobs at once) on `graph` with exec's data
// for o.dataset, evaluated on `test_data` (null: the training set's last
// o.eval_samples), until the target or o.steps; fills each run's curve.
void TrainProxyRuns(const models::ModelGraph& graph, const Proxy& proxy, const TtaOptions& o,
                    const exec::Dataset* test_data, std::vector<TtaRun>* runs);

// Per family and measured worker count, the updates to the target at the
// best rate (ties keep the smaller; without a valid one, the rate most
// seeds brought to the target says how far it fell).
std::map<Family, Measured> EstimateUpdates(const std::map<Family, std::vector<int>>& measured,
                                           const std::vector<TtaRun>& runs, const Target& target);

}  // namespace dtsim::study
