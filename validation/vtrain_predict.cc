#include "validation/vtrain_predict.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "common/error.h"
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
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads =
      std::min<std::size_t>(n, o.jobs > 0 ? static_cast<std::size_t>(o.jobs) : cores);

  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::condition_variable finished;
  int done = 0;                                // guarded by mutex
  std::size_t running = threads;               // guarded by mutex
  auto work = [&] {
    for (std::size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      out[i] = PredictRow(rows[i], o);         // each thread writes its own rows
      std::lock_guard<std::mutex> lock(mutex);
      ++done;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (--running == 0) finished.notify_all();
  };
  std::vector<std::thread> workers;
  for (std::size_t t = 0; t < threads; ++t) workers.emplace_back(work);
  {
    std::unique_lock<std::mutex> lock(mutex);
    const auto interval = std::chrono::duration<double>(o.progress_interval_s);
    while (running > 0) {
      if (!o.progress) {
        finished.wait(lock, [&] { return running == 0; });
        break;
      }
      finished.wait_for(lock, interval, [&] { return running == 0; });
      if (running > 0) {
        const int now_done = done;
        lock.unlock();
        o.progress(now_done, static_cast<int>(n));
        lock.lock();
      }
    }
  }
  for (std::thread& t : workers) t.join();
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
