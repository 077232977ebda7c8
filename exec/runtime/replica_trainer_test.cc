#include "exec/runtime/replica_trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "common/error.h"
#include "exec/data/synthetic_dataset.h"
#include "exec/kernels/cpu_isa.h"
#include "exec/runtime/model_problem.h"
#include "exec/runtime/quadratic_problem.h"
#include "models/zoo.h"

namespace dtsim::exec {
namespace {

struct Seeds {
  std::vector<double> mean, stderr_;
};

// The loss at every step over `n` seeds: mean and standard error.
Seeds OverSeeds(const ReplicaSetting& s, int d, double sigma, int steps, int n) {
  std::vector<double> sum(steps + 1, 0), sq(steps + 1, 0);
  for (int seed = 1; seed <= n; ++seed) {
    QuadraticProblem q(d, sigma, static_cast<std::uint64_t>(seed));
    const LossCurve c = TrainReplicas(q, s, {.steps = steps, .eval_every = 1});
    for (int t = 0; t <= steps; ++t) {
      sum[t] += c.loss[t];
      sq[t] += c.loss[t] * c.loss[t];
    }
  }
  Seeds r;
  for (int t = 0; t <= steps; ++t) {
    const double mean = sum[t] / n;
    r.mean.push_back(mean);
    r.stderr_.push_back(std::sqrt(std::max(0.0, sq[t] / n - mean * mean) / (n - 1)));
  }
  return r;
}

// Issue 16: local SGD's expected loss follows the closed form above for H =
// 1, 5 and 25 (4 replicas), within 4 standard errors of 300 seeds.
TEST(ReplicaTrainer, LocalSgdFollowsTheClosedForm) {
  const int d = 8, steps = 50, workers = 4;
  const double sigma = 1.0, eta = 0.1, b = 2;
  for (int h : {1, 5, 25}) {
    ReplicaSetting s{.mode = SyncMode::kLocalSgd, .workers = workers, .averaging_period = h,
                     .batch = 2, .lr = eta};
    const Seeds measured = OverSeeds(s, d, sigma, steps, 300);
    const std::vector<double> expected =
        ExpectedLocalSgd(QuadraticProblem(d, sigma, 1).InitialError(), d, sigma, workers, b, eta, h, steps);
    for (int t = 0; t <= steps; t += 5) {
      EXPECT_NEAR(measured.mean[t], expected[t], 4 * measured.stderr_[t] + 1e-6 * expected[t])
          << "H " << h << ", step " << t;
    }
  }
  // The noise floor at step 50 rises with H: averaging less often keeps
  // more of each replica's noise.
  const std::vector<double> h1 = ExpectedLocalSgd(36.5, d, sigma, workers, b, eta, 1, steps);
  const std::vector<double> h25 = ExpectedLocalSgd(36.5, d, sigma, workers, b, eta, 25, steps);
  EXPECT_LT(h1[49], h25[49]);
}

// Synchronous data parallelism and backups: the closed form with the
// gradients of W b (or k b) samples per update.
TEST(ReplicaTrainer, SynchronousAndBackupsFollowTheClosedForm) {
  const int d = 8, steps = 40;
  const double sigma = 1.0, eta = 0.1;
  const double e0 = QuadraticProblem(d, sigma, 1).InitialError();
  ReplicaSetting sync{.mode = SyncMode::kSynchronous, .workers = 4, .batch = 2, .lr = eta};
  ReplicaSetting backup = sync;
  backup.mode = SyncMode::kBackup;
  backup.backups = 3;  // 1 of 4: one gradient of 2 samples per update
  for (const auto& [s, k] : {std::pair{sync, 4}, std::pair{backup, 1}}) {
    const Seeds measured = OverSeeds(s, d, sigma, steps, 300);
    const std::vector<double> expected =
        ExpectedLocalSgd(e0, d, sigma, 1, 2.0 * k, eta, 1, steps);
    for (int t = 0; t <= steps; t += 5) {
      EXPECT_NEAR(measured.mean[t], expected[t], 4 * measured.stderr_[t] + 1e-6 * expected[t])
          << SyncModeName(s.mode) << ", step " << t;
    }
  }
  EXPECT_EQ(SamplesPerUpdate(backup), 2);
  EXPECT_EQ(SamplesPerUpdate(sync), 8);
}

// Issue 16: with H = 1 local SGD's curve is data parallelism's (mean_r(p -
// lr g_r) = p - lr mean_r(g_r)), up to float rounding, on the same samples.
TEST(ReplicaTrainer, LocalSgdWithH1IsDataParallelism) {
  QuadraticProblem q(8, 1.0, 7);
  ReplicaSetting s{.mode = SyncMode::kSynchronous, .workers = 4, .batch = 2, .lr = 0.1};
  const LossCurve dp = TrainReplicas(q, s, {.steps = 60, .eval_every = 5});
  s.mode = SyncMode::kLocalSgd;
  const LossCurve local = TrainReplicas(q, s, {.steps = 60, .eval_every = 5});
  ASSERT_EQ(dp.loss.size(), local.loss.size());
  for (std::size_t i = 0; i < dp.loss.size(); ++i) {
    EXPECT_NEAR(local.loss[i], dp.loss[i], 1e-5 * dp.loss[i]) << "evaluation " << i;
  }
  EXPECT_EQ(dp.samples, local.samples);
  // Stopping at 10% of the initial loss: the curve ends at the first
  // evaluation at or below it.
  s.mode = SyncMode::kSynchronous;
  const LossCurve stopped =
      TrainReplicas(q, s, {.steps = 60, .eval_every = 5, .stop_at_fraction = 0.1});
  ASSERT_LT(stopped.loss.size(), dp.loss.size());
  EXPECT_LE(stopped.loss.back(), 0.1 * stopped.loss.front());
  EXPECT_GT(stopped.loss[stopped.loss.size() - 2], 0.1 * stopped.loss.front());
}

// Asynchronous updates with staleness s follow the delayed recursion
// e_{t+1} = e_t - eta e_{t-s} when the batch is large enough that A ~ I and
// the noise vanishes (b = 65536 samples in d = 2: A's spread ~ 0.7% per
// step), checked over the first 12 updates (the loss falls 20-fold), where
// the spread compounded stays below 5%. Staleness slows the descent.
TEST(ReplicaTrainer, StalenessFollowsTheDelayedRecursion) {
  const int d = 2, steps = 12;
  const double eta = 0.3;
  std::vector<double> last;
  for (int staleness : {0, 3}) {
    QuadraticProblem q(d, 0.0, 3);
    ReplicaSetting s{.mode = SyncMode::kAsynchronous, .workers = 4, .staleness = staleness,
                     .batch = 65536, .lr = eta};
    const LossCurve c = TrainReplicas(q, s, {.steps = steps, .eval_every = 1});
    std::vector<double> e{1.0};  // e_t / e_0, the same in every coordinate
    for (int t = 0; t < steps; ++t) {
      e.push_back(e[t] - eta * e[std::max(0, t - staleness)]);
    }
    for (int t = 0; t <= steps; t += 2) {
      const double expected = q.InitialError() * e[t] * e[t] / 2;
      EXPECT_NEAR(c.loss[t], expected, 0.05 * expected) << "staleness " << staleness
                                                         << ", step " << t;
    }
    last.push_back(c.loss[steps]);
  }
  EXPECT_GT(last[1], last[0]);
}

// A real model: 2 replicas of batch 4 in synchronous steps train as one of
// batch 8 (the gradient of the mean over 8 samples = the mean of two means
// over 4), up to float rounding; H = 1 local SGD the same.
TEST(ReplicaTrainer, ModelReplicasTrainAsOneLargerBatch) {
  const models::ModelGraph g = models::BuildZooModel("mnist-mlp");
  const TeacherDataset data(TeacherDatasetOptions{.shape = g.op(0).output_shape, .classes = 10});
  const std::unique_ptr<Backend> cpu = MakeCpuBackend(CpuIsa::kPortable);
  ModelProblem two(g, data, *cpu, {.batch = 4, .eval_samples = 64, .eval_first = 100000});
  ModelProblem one(g, data, *cpu, {.batch = 8, .eval_samples = 64, .eval_first = 100000});
  const ReplicaRunOptions run{.steps = 20, .eval_every = 5};
  ReplicaSetting s{.mode = SyncMode::kSynchronous, .workers = 2, .batch = 4, .lr = 0.05};
  const LossCurve replicas = TrainReplicas(two, s, run);
  s.mode = SyncMode::kLocalSgd;
  const LossCurve local = TrainReplicas(two, s, run);
  const LossCurve single = TrainReplicas(
      one, {.mode = SyncMode::kSynchronous, .workers = 1, .batch = 8, .lr = 0.05}, run);
  ASSERT_EQ(replicas.loss.size(), single.loss.size());
  EXPECT_LT(single.loss.back(), single.loss.front());  // it learns
  for (std::size_t i = 0; i < single.loss.size(); ++i) {
    EXPECT_NEAR(replicas.loss[i], single.loss[i], 1e-4 * single.loss[i]) << i;
    EXPECT_NEAR(local.loss[i], single.loss[i], 1e-4 * single.loss[i]) << i;
  }
  EXPECT_EQ(replicas.samples, single.samples);
}

TEST(ReplicaTrainer, RefusesSettingsOutOfRangeAndDivergence) {
  QuadraticProblem q(2, 0.0, 1);
  EXPECT_THROW(TrainReplicas(q, {.workers = 0}, {}), UserError);
  EXPECT_THROW(TrainReplicas(q, {.mode = SyncMode::kBackup, .workers = 2, .backups = 2}, {}),
               UserError);
  // lr 3 on f = |e|^2 / 2: e' = -2 e, the loss grows 4x per step until it
  // is not finite.
  try {
    TrainReplicas(q, {.workers = 1, .batch = 4096, .lr = 3.0}, {.steps = 2000, .eval_every = 50});
    ADD_FAILURE() << "diverged without an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("diverged"), std::string::npos);
  }
  // As a result: the curve ends before the step that diverged.
  const LossCurve c =
      TrainReplicas(q, {.workers = 1, .batch = 4096, .lr = 3.0},
                    {.steps = 2000, .eval_every = 50, .divergence_is_result = true});
  EXPECT_GT(c.diverged_at, 0);
  EXPECT_LT(c.steps.back(), c.diverged_at);
}

}  // namespace
}  // namespace dtsim::exec
