// Predicts the iteration time of every vTrain row, several rows at a time.
// A row whose scenario or simulation fails is recorded as failed, with the
// message, and the other rows go on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "validation/accuracy.h"
#include "validation/vtrain.h"

namespace dtsim::validation {

// Scenario -> predicted iteration time, seconds. Throws when it cannot
// predict. Must be callable from several threads at once.
using IterationPredictor = std::function<double(const config::Scenario&)>;

// dtsim's prediction: sim::Simulate(scenario, {.fast = true}).metrics.step_time_s.
double SimulatedIterationSeconds(const config::Scenario& scenario);

// What became of one row.
struct RowPrediction {
  double predicted_ms = 0;  // when ok()
  std::string error;        // why there is no prediction; "" when ok()
  bool ok() const { return error.empty(); }
};

struct PredictOptions {
  VtrainSetup setup;              // shared by every row's scenario
  IterationPredictor predictor;   // empty = SimulatedIterationSeconds
  // Rows predicted at once; 0 = std::thread::hardware_concurrency(). The
  // results do not depend on it.
  int jobs = 0;
  // Called on the calling thread with (rows done, rows in all) about every
  // progress_interval_s while rows run, and once at the end. Empty: no calls.
  std::function<void(int done, int total)> progress;
  double progress_interval_s = 0.1;
};

// One RowPrediction per row, in row order. Never throws for a row's failure:
// an exception from VtrainScenario or the predictor (or a prediction that is
// not a finite number > 0) becomes that row's error.
std::vector<RowPrediction> PredictVtrain(const std::vector<VtrainRow>& rows,
                                         const PredictOptions& options = {});

// A row with its outcome and errors, as the reports use them.
struct RowResult {
  const VtrainRow* row = nullptr;
  const RowPrediction* prediction = nullptr;
  double percent_error = 0;  // PercentError when predicted, else 0
  double ape = 0;            // |percent_error|
};
// Pairs rows and predictions. REQUIRES: same size.
std::vector<RowResult> JoinResults(const std::vector<VtrainRow>& rows,
                                   const std::vector<RowPrediction>& predictions);

// Errors of the results for which `keep` is true (all when empty).
ErrorSummary SummarizeResults(const std::vector<RowResult>& results,
                              const std::function<bool(const RowResult&)>& keep = {});

}  // namespace dtsim::validation
