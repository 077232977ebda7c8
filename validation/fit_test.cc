// Fitting constants: recovers known constants from synthetic measurements
// made by dtsim itself (with noise), refuses too few rows, and
// cross-validation never scores a row with constants fitted on it.
#include "validation/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <mutex>
#include <set>

#include "common/error.h"
#include "config/scenario.h"
#include "sim/simulator.h"
#include "validation/fit_constants.h"

namespace dtsim::validation {
namespace {

// Rows: the MNIST MLP and the CIFAR-10 CNN on one H100 at batch sizes 2
// to 1,024 with PyTorch eager, the host's cost per kernel and per step set
// by the constants. The "measurements" are dtsim's own predictions at
// per_kernel = 30 us, per_step = 300 us, times a lognormal noise of 2%
// (seeded): the fit must find them again. Two models, because a host
// cost per step and one per kernel are told apart only by models that
// launch different numbers of kernels; and 30 us per launch, above the
// H100's 8 us per small kernel, so that small batches are host-bound
// (below it, dispatch hides behind the device and no fit can see it).
struct Synthetic {
  std::vector<config::Scenario> rows;
  std::vector<double> measured;
  std::vector<std::string> keys;
};

config::Scenario Row(const char* model, int batch, double per_kernel, double per_step) {
  config::Scenario s;
  s.cluster.device = "H100-SXM";
  s.workload.model.zoo_name = model;
  s.workload.batch_per_device = batch;
  s.workload.iterations = 3;
  s.workload.framework = *config::FindFramework("pytorch-eager");
  s.workload.framework.per_kernel_s = per_kernel;
  s.workload.framework.per_step_s = per_step;
  return s;
}

double Predict(const config::Scenario& s) { return sim::Simulate(s).metrics.step_time_s; }

Synthetic MakeSynthetic() {
  Synthetic d;
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> noise(0.0, 0.02);
  for (const char* model : {"mnist-mlp", "cifar10-cnn"})
    for (int batch = 2; batch <= 1024; batch *= 2) {
      d.rows.push_back(Row(model, batch, 1, 1));
      d.measured.push_back(Predict(Row(model, batch, 30e-6, 300e-6)) * noise(rng));
      d.keys.push_back(std::string(model) + "/" + std::to_string(batch));
    }
  return d;
}

RowPredictor Predictor(const Synthetic& d) {
  return [&d](std::size_t row, const std::vector<double>& v) {
    config::Scenario s = d.rows[row];
    s.workload.framework.per_kernel_s = v[0];
    s.workload.framework.per_step_s = v[1];
    return Predict(s);
  };
}

const std::vector<FitConstant> kConstants = {{"framework.per_kernel", 1e-6, 1e-8, 1e-2},
                                             {"framework.per_step", 1e-6, 1e-8, 1e-1}};

TEST(Fit, RecoversKnownConstantsFromNoisyMeasurements) {
  const Synthetic d = MakeSynthetic();
  std::vector<std::size_t> all(d.rows.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const FitResult r = FitConstants(kConstants, all, d.measured, Predictor(d));
  EXPECT_LT(r.mape, 3.0) << r.values[0] << " " << r.values[1];  // the noise is 2% (lognormal sigma)
  EXPECT_NEAR(r.values[0], 30e-6, 0.15 * 30e-6);
  EXPECT_NEAR(r.values[1], 300e-6, 0.15 * 300e-6);
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

TEST(Fit, RecoversATransportEfficiency) {
  // Rows: ResNet-50 data parallel over 2 machines on 10 GbE without
  // overlap, batch 4 to 128 per GPU: the gradients' all-reduce is the same
  // in every row, compute grows with the batch. "Measured": dtsim's own
  // prediction with the transport between nodes at efficiency 0.7, times 2%
  // lognormal noise; the fit starts from native (1) through the names a
  // user types.
  std::vector<config::Scenario> rows;
  std::vector<double> measured;
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> noise(0.0, 0.02);
  for (int batch = 4; batch <= 128; batch *= 2) {
    config::Scenario s;
    s.cluster.nodes = 2;
    s.cluster.device = "V100-SXM2-32GB";
    s.cluster.network.link = "10GbE";
    s.workload.model.zoo_name = "resnet50";
    s.workload.batch_per_device = batch;
    s.workload.iterations = 3;
    s.parallelism.overlap = false;
    rows.push_back(s);
    s.cluster.network.transport.efficiency = 0.7;
    measured.push_back(Predict(s) * noise(rng));
  }
  const std::vector<FitConstant> c = ParseFitConstants("network.transport.efficiency", rows[0]);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(c[0].seconds);
  EXPECT_EQ(c[0].initial, 1.0);
  EXPECT_EQ(c[0].upper, 1.0);
  const RowPredictor predict = [&](std::size_t row, const std::vector<double>& v) {
    config::Scenario s = rows[row];
    ApplyFitConstants(c, v, &s);
    return Predict(s);
  };
  std::vector<std::size_t> all(rows.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const FitResult r = FitConstants(c, all, measured, predict);
  EXPECT_NEAR(r.values[0], 0.7, 0.05);
  EXPECT_LT(r.mape, 3.0);
  EXPECT_EQ(FormatFitValue(c[0], 0.7), "0.7");
}

TEST(Fit, FailedRowsSayWhy) {
  // Rows 0 and 2 predict 1 s; row 1 throws; row 3 predicts NaN.
  const RowPredictor predict = [](std::size_t row, const std::vector<double>&) {
    if (row == 1) throw UserError("the plan does not fit in memory");
    return row == 3 ? std::nan("") : 1.0;
  };
  const std::vector<std::size_t> rows = {0, 1, 2, 3};
  std::vector<double> predicted(4, -1);
  std::vector<std::string> failures(4, "unset");
  const ErrorSummary e = ScoreRows(rows, {1, 1, 1, 1}, predict, {1e-6}, 1, &predicted, &failures);
  EXPECT_EQ(e.failed, 2);
  EXPECT_EQ(predicted, (std::vector<double>{1, 0, 1, 0}));
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "the plan does not fit in memory");  // the message, no "error:"
  EXPECT_EQ(failures[2], "");
  EXPECT_NE(failures[3].find("not a positive number"), std::string::npos) << failures[3];
}

TEST(Fit, EveryConstantHasAPlausibleRangeThatTheReportChecks) {
  const config::Scenario base;
  for (const std::string& name : FittableConstants()) {
    const FitConstant c = ParseFitConstants(name, base)[0];
    // Each range lies inside the fit's own bounds and names its source.
    EXPECT_GT(c.plausible_lower, 0) << name;
    EXPECT_GE(c.plausible_lower, c.lower) << name;
    EXPECT_LE(c.plausible_upper, c.upper) << name;
    EXPECT_LT(c.plausible_lower, c.plausible_upper) << name;
    EXPECT_FALSE(c.plausible_source.empty()) << name;
  }
  const FitConstant k = ParseFitConstants("per_kernel", base)[0];
  // HTA's 5-20 us per launch: 8 us is plausible; 80.8 us (a fit that
  // absorbed something else) is not, and the warning gives value and range.
  EXPECT_TRUE(IsPlausible(k, 8e-6));
  EXPECT_EQ(ImplausibleWarning(k, 8e-6), "");
  EXPECT_FALSE(IsPlausible(k, 80.8e-6));
  const std::string w = ImplausibleWarning(k, 80.8e-6);
  EXPECT_NE(w.find("per_kernel = 80.8 us"), std::string::npos) << w;
  EXPECT_NE(w.find("[1 us, 40 us]"), std::string::npos) << w;
  EXPECT_EQ(FitConstantJson(k, 80.8e-6)["plausible"], false);
  const FitConstant eff = ParseFitConstants("transport.efficiency", base)[0];
  EXPECT_FALSE(IsPlausible(eff, 0.1));  // below the 0.5 floor of a working link
  EXPECT_EQ(FitConstantJson(eff, 0.9)["plausible"], true);
}

TEST(Fit, FoldsAreAtMostTheRows) {
  // 6 rows: 6 folds hold one row each; 100 would leave 94 folds empty.
  EXPECT_NO_THROW(CheckFolds(6, 6));
  try {
    CheckFolds(100, 6);
    ADD_FAILURE() << "100 folds of 6 rows accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--folds 100 is more than the 6 measured runs"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(CheckFolds(1, 6), UserError);
}

TEST(Fit, FoldsAreAFixedFunctionOfTheKey) {
  // FNV-1a of "a" is 0xaf63dc4c8601ec8c (the FNV reference vectors): odd.
  EXPECT_EQ(FoldOf("a", 2), 0 == (0xaf63dc4c8601ec8cull % 2) ? 0 : 1);
  EXPECT_EQ(FoldOf("a", 2), FoldOf("a", 2));
}

}  // namespace
}  // namespace dtsim::validation
