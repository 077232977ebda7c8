#include "validation/fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/error.h"
#include "common/parallel_for.h"

namespace dtsim::validation {
namespace {

// Predictions of `rows` at `values`; NaN where a prediction failed, and
// then (when `why` is given) why in (*why)[i].
std::vector<double> PredictRows(const std::vector<std::size_t>& rows, const RowPredictor& predict,
                                const std::vector<double>& values, int jobs,
                                std::vector<std::string>* why = nullptr) {
  std::vector<double> out(rows.size(), std::numeric_limits<double>::quiet_NaN());
  if (why != nullptr) why->assign(rows.size(), "");
  ParallelFor(rows.size(), jobs, {}, 1.0, [&](std::size_t i) {
    std::string reason;
    try {
      const double p = predict(rows[i], values);
      if (std::isfinite(p) && p > 0) out[i] = p;
      else reason = "the predicted step time is not a positive number";
    } catch (const UserError& e) {
      reason = e.message();  // stays NaN: the row failed
    } catch (const std::exception& e) {
      reason = e.what();
    }
    if (why != nullptr) (*why)[i] = reason;
  });
  return out;
}

// Nelder-Mead iterations on `simplex` (n + 1 points, values `f`) until the
// values' spread is below 1e-4 MAPE points or `budget` evaluations are
// spent. Coefficients 1, 2, 0.5, 0.5.
template <typename Objective, typename Clamp>
void NelderMead(Objective& objective, Clamp& clamp, int budget, int* evaluations,
                std::vector<std::vector<double>>* simplex_io, std::vector<double>* f_io) {
  auto& simplex = *simplex_io;
  auto& f = *f_io;
  const std::size_t n = simplex.size() - 1;
  while (*evaluations < budget) {
    std::vector<std::size_t> order(n + 1);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return f[a] < f[b]; });
    std::vector<std::vector<double>> s2;
    std::vector<double> f2;
    for (std::size_t i : order) {
      s2.push_back(simplex[i]);
      f2.push_back(f[i]);
    }
    simplex = s2;
    f = f2;
    if (f[n] - f[0] < 1e-4) break;
    std::vector<double> centroid(n, 0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t d = 0; d < n; ++d) centroid[d] += simplex[i][d] / static_cast<double>(n);
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (std::size_t d = 0; d < n; ++d) x[d] = centroid[d] + t * (simplex[n][d] - centroid[d]);
      return clamp(x);
    };
    const std::vector<double> xr = along(-1.0);
    const double fr = objective(xr);
    if (fr < f[0]) {
      const std::vector<double> xe = along(-2.0);
      const double fe = objective(xe);
      if (fe < fr) { simplex[n] = xe; f[n] = fe; } else { simplex[n] = xr; f[n] = fr; }
    } else if (fr < f[n - 1]) {
      simplex[n] = xr;
      f[n] = fr;
    } else {
      const std::vector<double> xc = fr < f[n] ? along(-0.5) : along(0.5);
      const double fc = objective(xc);
      if (fc < std::min(fr, f[n])) {
        simplex[n] = xc;
        f[n] = fc;
      } else {  // shrink towards the best
        for (std::size_t i = 1; i <= n && *evaluations < budget; ++i) {
          for (std::size_t d = 0; d < n; ++d) simplex[i][d] = simplex[0][d] + 0.5 * (simplex[i][d] - simplex[0][d]);
          f[i] = objective(simplex[i]);
        }
      }
    }
  }
}

}  // namespace

int MinRowsToFit(std::size_t constants) { return static_cast<int>(3 * constants); }

ErrorSummary ScoreRows(const std::vector<std::size_t>& rows, const std::vector<double>& measured_s,
                       const RowPredictor& predict, const std::vector<double>& values, int jobs,
                       std::vector<double>* predicted_s, std::vector<std::string>* failures) {
  std::vector<std::string> why;
  const std::vector<double> p = PredictRows(rows, predict, values, jobs, &why);
  std::vector<double> errors;
  int failed = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (predicted_s != nullptr) (*predicted_s)[rows[i]] = std::isnan(p[i]) ? 0 : p[i];
    if (failures != nullptr) (*failures)[rows[i]] = why[i];
    if (std::isnan(p[i])) {
      ++failed;
      continue;
    }
    errors.push_back(PercentError(p[i], measured_s[rows[i]]));
  }
  return SummarizeErrors(errors, failed);
}

FitResult FitConstants(const std::vector<FitConstant>& constants,
                       const std::vector<std::size_t>& train,
                       const std::vector<double>& measured_s, const RowPredictor& predict,
                       const FitOptions& options) {
  const std::size_t n = constants.size();
  if (n == 0) throw UserError("nothing to fit: name at least one constant");
  if (static_cast<int>(train.size()) < MinRowsToFit(n))
    throw UserError("fitting " + std::to_string(n) + " constant(s) needs at least " +
                        std::to_string(MinRowsToFit(n)) + " measured rows, got " +
                        std::to_string(train.size()),
                    "measure more runs, or fit fewer constants (3 rows per constant)");
  std::vector<double> lo(n), hi(n), x0(n);
  for (std::size_t i = 0; i < n; ++i) {
    const FitConstant& c = constants[i];
    if (!(c.lower > 0) || !(c.upper >= c.lower) || !std::isfinite(c.upper))
      throw UserError("constant '" + c.name + "': bounds must satisfy 0 < lower <= upper");
    lo[i] = std::log(c.lower);
    hi[i] = std::log(c.upper);
    x0[i] = std::clamp(std::log(std::max(c.initial, c.lower)), lo[i], hi[i]);
  }
  const int budget = options.max_evaluations > 0 ? options.max_evaluations
                                                 : 40 * static_cast<int>(n + 1) + 24 * static_cast<int>(n);
  int evaluations = 0;
  // MAPE over the training rows; a failed row counts as a 1000% error so
  // that the search moves away from constants that break predictions.
  auto objective = [&](std::vector<double> x) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = std::exp(std::clamp(x[i], lo[i], hi[i]));
    ++evaluations;
    const std::vector<double> p = PredictRows(train, predict, v, options.jobs);
    double sum = 0;
    for (std::size_t i = 0; i < train.size(); ++i)
      sum += std::isnan(p[i]) ? 1000.0 : AbsPercentError(p[i], measured_s[train[i]]);
    return sum / static_cast<double>(train.size());
  };
  auto clamp = [&](std::vector<double> x) {
    for (std::size_t i = 0; i < n; ++i) x[i] = std::clamp(x[i], lo[i], hi[i]);
    return x;
  };
  // A coarse search first, so that Nelder-Mead starts in the right basin
  // (the step time is a max of host and device paths: the objective has
  // flat regions where a constant is hidden): two passes over the
  // constants, each tried at its current value times 10^(k/2),
  // k = -6..6 (within its bounds), keeping the best.
  double f0 = objective(x0);
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < n; ++i) {
      const double centre = x0[i];
      for (int k = -6; k <= 6; ++k) {
        if (k == 0) continue;
        std::vector<double> x = x0;
        x[i] = std::clamp(centre + 0.5 * k * std::log(10.0), lo[i], hi[i]);
        if (x[i] == x0[i]) continue;
        const double fx = objective(x);
        if (fx < f0) {
          f0 = fx;
          x0 = x;
        }
      }
    }
  // Nelder-Mead (Nelder and Mead 1965; coefficients 1, 2, 0.5, 0.5) on a
  // simplex of x0 and x0 + 0.7 along each axis (a factor of 2 in value),
  // restarted from its best point with a fresh simplex while it improves
  // and the budget lasts (restarts leave the flat corners a collapsed
  // simplex gets stuck in).
  std::vector<std::vector<double>> simplex;
  std::vector<double> f;
  double best_f = f0;
  std::vector<double> best_x = x0;
  for (int restart = 0; restart < 4 && evaluations < budget; ++restart) {
    simplex.assign(n + 1, best_x);
    f.assign(n + 1, best_f);
    for (std::size_t i = 0; i < n; ++i) {
      simplex[i + 1][i] += (best_x[i] + 0.7 <= hi[i]) ? 0.7 : -0.7;
      simplex[i + 1] = clamp(simplex[i + 1]);
      f[i + 1] = objective(simplex[i + 1]);
    }
    NelderMead(objective, clamp, budget, &evaluations, &simplex, &f);
    const std::size_t b = static_cast<std::size_t>(std::min_element(f.begin(), f.end()) - f.begin());
    const bool improved = f[b] < best_f - 1e-4;
    if (f[b] < best_f) {
      best_f = f[b];
      best_x = simplex[b];
    }
    if (!improved && restart > 0) break;
  }
  if (best_f >= 1000.0)
    throw UserError("every training row failed to predict with the constants tried");
  FitResult r;
  r.mape = best_f;
  r.evaluations = evaluations;
  for (std::size_t i = 0; i < n; ++i) r.values.push_back(std::exp(std::clamp(best_x[i], lo[i], hi[i])));
  return r;
}

void CheckFolds(int folds, std::size_t rows) {
  if (folds < 2) throw UserError("cross-validation needs at least 2 folds");
  if (static_cast<std::size_t>(folds) > rows)
    throw UserError("--folds " + std::to_string(folds) + " is more than the " +
                        std::to_string(rows) + " measured runs: the folds past them would be "
                        "empty refits",
                    "give at most one fold per run (--folds " + std::to_string(rows) + ")");
}

int FoldOf(const std::string& key, int folds) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int>(h % static_cast<std::uint64_t>(folds));
}

CrossValidation CrossValidate(const std::vector<FitConstant>& constants,
                              const std::vector<std::string>& keys,
                              const std::vector<double>& measured_s, const RowPredictor& predict,
                              int folds, const FitOptions& options) {
  DTSIM_CHECK(keys.size() == measured_s.size(), "one key per measured row");
  CheckFolds(folds, keys.size());
  CrossValidation cv;
  cv.folds = folds;
  std::vector<std::size_t> all(keys.size());
  std::iota(all.begin(), all.end(), 0);
  std::vector<double> initial;
  for (const FitConstant& c : constants) initial.push_back(c.initial);
  cv.before_s.assign(keys.size(), 0);
  cv.before_failure.assign(keys.size(), "");
  cv.before = ScoreRows(all, measured_s, predict, initial, options.jobs, &cv.before_s,
                        &cv.before_failure);
  cv.predicted_s.assign(keys.size(), 0);
  cv.held_out_failure.assign(keys.size(), "");
  for (int k = 0; k < folds; ++k) {
    std::vector<std::size_t> train, test;
    for (std::size_t i = 0; i < keys.size(); ++i) (FoldOf(keys[i], folds) == k ? test : train).push_back(i);
    const FitResult fit = FitConstants(constants, train, measured_s, predict, options);
    cv.fold_values.push_back(fit.values);
    if (!test.empty())
      ScoreRows(test, measured_s, predict, fit.values, options.jobs, &cv.predicted_s,
                &cv.held_out_failure);
  }
  std::vector<double> errors;
  int failed = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (cv.predicted_s[i] <= 0) {
      ++failed;
      continue;
    }
    errors.push_back(PercentError(cv.predicted_s[i], measured_s[i]));
  }
  cv.after = SummarizeErrors(errors, failed);
  return cv;
}

nlohmann::ordered_json FitErrorsJson(const ErrorSummary& e) {
  return {{"runs", e.runs},
          {"failed", e.failed},
          {"mape_percent", e.mean_ape},
          {"median_ape_percent", e.median_ape},
          {"max_ape_percent", e.max_ape},
          {"mean_signed_percent", e.mean_signed_pe}};
}

}  // namespace dtsim::validation
