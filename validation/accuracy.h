// How far predictions are from measurements: absolute percentage errors and
// their mean and maximum over a set of runs.
#pragma once

#include <vector>

namespace dtsim::validation {

// Signed percentage error: (predicted - measured) / measured x 100; > 0
// when the prediction is too slow (too high). REQUIRES: measured > 0.
double PercentError(double predicted, double measured);
// Absolute percentage error |PercentError|.
double AbsPercentError(double predicted, double measured);

// Errors over a set of runs; runs whose prediction failed count in `failed`
// only.
struct ErrorSummary {
  int runs = 0;              // predicted + failed
  int predicted = 0;         // runs with a prediction
  int failed = 0;            // runs whose prediction failed
  double mean_ape = 0;       // mean absolute percentage error (MAPE), %; 0 without predictions
  double median_ape = 0;     // %, the mean of the two middle values for an even count
  double max_ape = 0;        // %
  double mean_signed_pe = 0; // mean of PercentError, %: > 0 = predictions too high on average
};

// `signed_errors` are the PercentError of the predicted runs.
ErrorSummary SummarizeErrors(const std::vector<double>& signed_errors, int failed);

}  // namespace dtsim::validation
