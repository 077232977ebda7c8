// Fitting constants: recovers known constants from synthetic measurements
// made by dtsim itself (with noise), refuses too few rows, and
// cross-validation never scores a row with constants fitted on it.
#include "validation/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <mutex>
#include <set>

#include "config/scenario.h"
#include "sim/simulator.h"

namespace dtsim::validation {
namespace {

// Rows: the MNIST MLP on one H100 at batch sizes 2 to 32,768 with PyTorch eager,
// dispatch per kernel and per op set by the constants. The "measurements"
// are dtsim's own predictions at per_kernel = 6 us, per_op = 15 us, times
// a lognormal noise of 2% (seeded): the fit must find them again.
struct Synthetic {
  std::vector<config::Scenario> rows;
  std::vector<double> measured;
  std::vector<std::string> keys;
};

config::Scenario Row(int batch, double per_kernel, double per_op) {
  config::Scenario s;
  s.cluster.device = "H100-SXM";
  s.workload.model.zoo_name = "mnist-mlp";
  s.workload.batch_per_device = batch;
  s.workload.iterations = 3;
  s.workload.framework = *config::FindFramework("pytorch-eager");
  s.workload.framework.per_kernel_s = per_kernel;
  s.workload.framework.per_op_s = per_op;
  return s;
}

double Predict(const config::Scenario& s) { return sim::Simulate(s).metrics.step_time_s; }

Synthetic MakeSynthetic() {
  Synthetic d;
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> noise(0.0, 0.02);
  for (int batch = 2; batch <= 32768; batch *= 2) {
    d.rows.push_back(Row(batch, 1, 1));
    d.measured.push_back(Predict(Row(batch, 6e-6, 15e-6)) * noise(rng));
    d.keys.push_back("batch" + std::to_string(batch));
  }
  return d;
}

RowPredictor Predictor(const Synthetic& d) {
  return [&d](std::size_t row, const std::vector<double>& v) {
    config::Scenario s = d.rows[row];
    s.workload.framework.per_kernel_s = v[0];
    s.workload.framework.per_op_s = v[1];
    return Predict(s);
  };
}

const std::vector<FitConstant> kConstants = {{"framework.per_kernel", 3e-6, 1e-7, 1e-3},
                                             {"framework.per_op", 3e-6, 1e-7, 1e-3}};

TEST(Fit, RecoversKnownConstantsFromNoisyMeasurements) {
  const Synthetic d = MakeSynthetic();
  std::vector<std::size_t> all(d.rows.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const FitResult r = FitConstants(kConstants, all, d.measured, Predictor(d));
  // per_kernel and per_op add up per op: their sum per op is what the
  // rows determine best (the MLP has one kernel per op and pass, mostly),
  // so check the fitted step cost, and each constant within 2x.
  EXPECT_LT(r.mape, 3.0);  // the noise is 2% (lognormal sigma)
  EXPECT_NEAR(std::log(r.values[0] + r.values[1]), std::log(21e-6), std::log(1.15));
  EXPECT_GT(r.values[1], r.values[0]);
}

TEST(Fit, RefusesMoreConstantsThanRowsAllow) {
  const Synthetic d = MakeSynthetic();
  EXPECT_THROW(FitConstants(kConstants, {0, 1, 2, 3, 4}, d.measured, Predictor(d)), UserError);
  EXPECT_EQ(MinRowsToFit(2), 6);
}

TEST(Fit, CrossValidationNeverScoresARowItFittedOn) {
  const Synthetic d = MakeSynthetic();
  std::vector<std::set<std::size_t>> seen_in_fit;
  // A predictor that records which rows each fit evaluates.
  std::mutex mu;
  std::set<std::size_t> current;
  RowPredictor recording = [&](std::size_t row, const std::vector<double>& v) {
    {
      std::lock_guard<std::mutex> lock(mu);
      current.insert(row);
    }
    return Predictor(d)(row, v);
  };
  FitOptions o;
  o.max_evaluations = 12;
  o.jobs = 1;
  const CrossValidation cv = CrossValidate(kConstants, d.keys, d.measured, recording, 2, o);
  EXPECT_EQ(cv.fold_values.size(), 2u);
  // Each fold's constants were fitted on the other fold's rows only: refit
  // fold 0 alone and check the rows it touched.
  for (int k = 0; k < 2; ++k) {
    std::vector<std::size_t> train;
    for (std::size_t i = 0; i < d.keys.size(); ++i)
      if (FoldOf(d.keys[i], 2) != k) train.push_back(i);
    current.clear();
    FitConstants(kConstants, train, d.measured, recording, o);
    for (std::size_t row : current) EXPECT_NE(FoldOf(d.keys[row], 2), k) << "row " << row;
  }
  EXPECT_EQ(cv.after.predicted, static_cast<int>(d.rows.size()));
  EXPECT_LT(cv.after.mean_ape, cv.before.mean_ape);
}

TEST(Fit, FoldsAreAFixedFunctionOfTheKey) {
  // FNV-1a of "a" is 0xaf63dc4c8601ec8c (the FNV reference vectors): odd.
  EXPECT_EQ(FoldOf("a", 2), 0 == (0xaf63dc4c8601ec8cull % 2) ? 0 : 1);
  EXPECT_EQ(FoldOf("a", 2), FoldOf("a", 2));
}

}  // namespace
}  // namespace dtsim::validation
