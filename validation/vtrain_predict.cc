#include "validation/vtrain_predict.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "common/error.h"
#include "common/parallel_for.h"
#include "sim/simulator.h"

namespace dtsim::validation {

double SimulatedIterationSeconds(const config::Scenario& scenario) {
  return sim::Simulate(scenario, sim::SimulateOptions{.fast = true}).metrics.step_time_s;
}

namespace {

RowPrediction PredictRow(const VtrainRow& row, const PredictOptions& o) {
  RowPrediction p;
  try {
    const config::Scenario scenario = VtrainScenario(row, o.setup);
    const double seconds =
        o.predictor ? o.predictor(scenario) : SimulatedIterationSeconds(scenario);
    if (!std::isfinite(seconds) || seconds <= 0) {
      p.error = "the predicted iteration time is not a time > 0 (" + std::to_string(seconds) +
                " s)";
    } else {
      p.predicted_ms = seconds * 1e3;
    }
  } catch (const UserError& e) {
    // "where: message (hint: ...)" on one line, without what()'s "error: ".
    const std::string where = e.where().ToString();
    p.error = (where.empty() ? "" : where + ": ") + e.message() +
              (e.hint().empty() ? "" : " (hint: " + e.hint() + ")");
  } catch (const std::exception& e) {
    p.error = e.what();  // an InternalError says so itself
  } catch (...) {
    p.error = "unknown exception";
  }
  if (!p.error.empty()) p.predicted_ms = 0;
  return p;
}

}  // namespace

std::vector<RowPrediction> PredictVtrain(const std::vector<VtrainRow>& rows,
                                         const PredictOptions& o) {
  const std::size_t n = rows.size();
  std::vector<RowPrediction> out(n);
  if (n == 0) {
    if (o.progress) o.progress(0, 0);
    return out;
  }
  // PredictRow never throws: a failing row is recorded in its result.
  ParallelFor(n, o.jobs, o.progress, o.progress_interval_s,
              [&](std::size_t i) { out[i] = PredictRow(rows[i], o); });
  if (o.progress) o.progress(static_cast<int>(n), static_cast<int>(n));
  return out;
}

std::vector<RowResult> JoinResults(const std::vector<VtrainRow>& rows,
                                   const std::vector<RowPrediction>& predictions) {
  DTSIM_CHECK(rows.size() == predictions.size(), "one prediction per row");
  std::vector<RowResult> results;
  results.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    RowResult r{&rows[i], &predictions[i]};
    if (predictions[i].ok()) {
      r.percent_error = PercentError(predictions[i].predicted_ms, rows[i].measured_ms);
      r.ape = std::abs(r.percent_error);
    }
    results.push_back(r);
  }
  return results;
}

ErrorSummary SummarizeResults(const std::vector<RowResult>& results,
                              const std::function<bool(const RowResult&)>& keep) {
  std::vector<double> errors;
  int failed = 0;
  for (const RowResult& r : results) {
    if (keep && !keep(r)) continue;
    if (r.prediction->ok()) {
      errors.push_back(r.percent_error);
    } else {
      ++failed;
    }
  }
  return SummarizeErrors(errors, failed);
}

}  // namespace dtsim::validation
