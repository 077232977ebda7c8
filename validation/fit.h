// Fitting a few model constants to measured runs, with an honest error
// (`dtsim fit` and `dtsim validate vtrain --fit`).
//
// The objective is the mean absolute percentage error (MAPE) of the
// predicted step times over the training rows. It is minimised over the
// logarithms of the constants (constants are positive and span decades),
// each clamped to its [lower, upper] bounds: first a coordinate search on
// a grid of half decades, 10^-3 to 10^3 around the initial values (two
// passes), then Nelder-Mead from the best point, restarted while it
// improves, within a fixed budget of evaluations: deterministic for given
// rows, constants and predictor. k-fold cross-validation assigns each
// row to a fold by a hash of its key (FoldOf), fits on the other folds and
// scores the fold's rows with those constants, so that no row is scored by
// constants fitted on it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validation/accuracy.h"

namespace dtsim::validation {

struct FitConstant {
  std::string name;   // e.g. "framework.per_kernel"
  double initial = 0; // > 0
  double lower = 0;   // > 0
  double upper = 0;   // >= lower
  bool seconds = true;  // a time; false: a dimensionless number (an efficiency)
  // The range a physical value falls in (same unit as `initial`); a fitted
  // value outside it is reported as implausible: the fit then stands in for
  // a cost the model lacks. 0, 0: no range known.
  double plausible_lower = 0;
  double plausible_upper = 0;
  std::string plausible_source = "";  // where the range comes from, for the report
};

// Predicted step time (seconds) of row `row` with the constants set to
// `values` (one per constant, in order). Called from several threads at
// once; throws when the row cannot be predicted.
using RowPredictor = std::function<double(std::size_t row, const std::vector<double>& values)>;

struct FitOptions {
  int max_evaluations = 0;  // 0 = 40 x (constants + 1) + 24 x constants
  int jobs = 0;             // rows predicted at once; results do not depend on it
};

struct FitResult {
  std::vector<double> values;  // fitted, one per constant
  double mape = 0;             // on the training rows, %
  int evaluations = 0;
};

// The fewest training rows a fit of `constants` constants accepts: 3 per
// constant (fewer rows than that let the fit follow the noise of each).
int MinRowsToFit(std::size_t constants);

// Fits the constants to the rows `train` (indices), whose measured step
// times are `measured_s[i]`. Throws UserError when there are fewer rows than
// MinRowsToFit, a bound is not positive or lower > upper, or the initial
// predictions fail.
FitResult FitConstants(const std::vector<FitConstant>& constants,
                       const std::vector<std::size_t>& train,
                       const std::vector<double>& measured_s, const RowPredictor& predict,
                       const FitOptions& options = {});

// Throws UserError unless 2 <= folds <= rows.
void CheckFolds(int folds, std::size_t rows);

// The fold (in [0, folds)) of the row with key `key`: FNV-1a of the key.
int FoldOf(const std::string& key, int folds);

struct CrossValidation {
  int folds = 0;
  ErrorSummary before;  // every row, with the initial constants
  std::vector<double> before_s;                  // per row: that prediction (0 = failed)
  std::vector<std::string> before_failure;       // per row: why it failed ("" = it did not)
  ErrorSummary after;   // every row, each scored by the fit of the other folds
  std::vector<std::vector<double>> fold_values;  // fitted constants per fold
  std::vector<double> predicted_s;               // per row: held-out prediction (0 = failed)
  std::vector<std::string> held_out_failure;     // per row: why it failed ("" = it did not)
};

// k-fold cross-validation of FitConstants over all rows (keys[i] names row
// i). Throws UserError when folds < 2, folds exceeds the rows, or a
// training set is smaller than MinRowsToFit.
CrossValidation CrossValidate(const std::vector<FitConstant>& constants,
                              const std::vector<std::string>& keys,
                              const std::vector<double>& measured_s, const RowPredictor& predict,
                              int folds, const FitOptions& options = {});

// Errors of predicting rows `rows` with `values`; failed predictions count
// as failed. When given, (*predicted_s)[row] receives each row's prediction
// (0 = failed) and (*failures)[row] why it failed ("" = it did not): both
// indexed by row, sized for every row by the caller.
ErrorSummary ScoreRows(const std::vector<std::size_t>& rows, const std::vector<double>& measured_s,
                       const RowPredictor& predict, const std::vector<double>& values, int jobs,
                       std::vector<double>* predicted_s = nullptr,
                       std::vector<std::string>* failures = nullptr);

// The errors as fit.json writes them: runs, failed, mape_percent,
// median_ape_percent, max_ape_percent, mean_signed_percent.
nlohmann::ordered_json FitErrorsJson(const ErrorSummary& e);

}  // namespace dtsim::validation
