#include "sim/time_to_accuracy.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "sim/statistics.h"

namespace dtsim::sim {

std::optional<double> StepsToTarget(const LossPoints& curve, double target) {
  DTSIM_CHECK(curve.steps.size() == curve.loss.size(), "one loss per evaluation");
  for (std::size_t i = 0; i < curve.loss.size(); ++i) {
    if (curve.loss[i] > target) continue;
    if (i == 0) return curve.steps[0];
    // Between evaluation i - 1 (above) and i (at or below).
    const double l0 = curve.loss[i - 1], l1 = curve.loss[i];
    const double f = l0 == l1 ? 1.0 : (l0 - target) / (l0 - l1);
    return curve.steps[i - 1] + f * (curve.steps[i] - curve.steps[i - 1]);
  }
  return std::nullopt;
}

StepsEstimate EstimateSteps(const std::vector<LossPoints>& seeds, double target) {
  StepsEstimate e;
  e.seeds = static_cast<int>(seeds.size());
  std::vector<double> steps;
  for (const LossPoints& c : seeds) {
    if (const std::optional<double> s = StepsToTarget(c, target)) steps.push_back(*s);
  }
  e.reached = static_cast<int>(steps.size());
  if (!e.valid()) return e;
  e.mean = Mean(steps);
  const double half = steps.size() > 1 ? ConfidenceHalfWidth95(steps) : 0.0;
  e.low = std::max(0.0, e.mean - half);
  e.high = e.mean + half;
  return e;
}

WorkersFit::WorkersFit(const std::vector<int>& workers, const std::vector<StepsEstimate>& estimates)
    : workers_(workers), estimates_(estimates) {
  DTSIM_CHECK(!workers.empty() && workers.size() == estimates.size(), "one estimate per count");
  const auto n = static_cast<double>(workers.size());
  double sx = 0, sy = 0;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    DTSIM_CHECK(estimates[i].valid() && estimates[i].mean > 0 && workers[i] >= 1,
                "valid estimates of positive counts");
    sx += std::log(static_cast<double>(workers[i]));
    sy += std::log(estimates[i].mean);
  }
  mean_log_w_ = sx / n;
  const double mean_y = sy / n;
  double sxy = 0;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const double dx = std::log(static_cast<double>(workers[i])) - mean_log_w_;
    sxx_ += dx * dx;
    sxy += dx * (std::log(estimates[i].mean) - mean_y);
  }
  b_ = sxx_ > 0 ? sxy / sxx_ : 0.0;
  a_ = mean_y - b_ * mean_log_w_;
  if (workers.size() > 2) {
    double ss = 0;
    for (std::size_t i = 0; i < workers.size(); ++i) {
      const double r = std::log(estimates[i].mean) -
                       (a_ + b_ * std::log(static_cast<double>(workers[i])));
      ss += r * r;
    }
    residual_sd_ = std::sqrt(ss / (n - 2));
  }
}

StepsEstimate WorkersFit::At(int workers) const {
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i] == workers) return estimates_[i];
  }
  StepsEstimate e;
  e.fitted = true;
  e.seeds = estimates_[0].seeds;
  e.reached = e.seeds;
  const int lo = *std::min_element(workers_.begin(), workers_.end());
  const int hi = *std::max_element(workers_.begin(), workers_.end());
  e.extrapolated = workers < lo || workers > hi;
  const double x = std::log(static_cast<double>(workers));
  const double y = a_ + b_ * x;
  e.mean = std::exp(y);
  // The band: the measured estimates' own relative half-width (the widest),
  // and with three or more points the fit's 95% prediction interval for a
  // new point, both in log space, added.
  double rel = 0;
  for (const StepsEstimate& m : estimates_) {
    rel = std::max(rel, std::log(m.high / m.mean));
  }
  double pred = 0;
  if (workers_.size() > 2 && sxx_ > 0) {
    const auto n = static_cast<double>(workers_.size());
    const double dx = x - mean_log_w_;
    pred = StudentT975(static_cast<int>(workers_.size()) - 2) * residual_sd_ *
           std::sqrt(1 + 1 / n + dx * dx / sxx_);
  }
  e.low = e.mean * std::exp(-(rel + pred));
  e.high = e.mean * std::exp(rel + pred);
  return e;
}

}  // namespace dtsim::sim
