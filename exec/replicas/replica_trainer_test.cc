#include "exec/replicas/replica_trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "common/error.h"
#include "exec/data/synthetic_dataset.h"
#include "exec/kernels/cpu_isa.h"
#include "exec/replicas/model_problem.h"
#include "exec/replicas/quadratic_problem.h"
#include "models/zoo.h"

namespace dtsim::exec {
namespace {

struct Seeds {
  std::vector<double> mean, stderr_;
};

// The loss at every step over `n` seeds: mean and standard error.
Seeds OverSeeds(const ReplicaSetting& s, int d, double sigma, int steps, int n) {
  const std::unique_ptr<Backend> host = MakeCpuBackend(CpuIsa::kPortable);
  std::vector<double> sum(steps + 1, 0), sq(steps + 1, 0);
  for (int seed = 1; seed <= n; ++seed) {
    QuadraticProblem q(d, sigma, static_cast<std::uint64_t>(seed));
    const LossCurve c = TrainReplicas(q, *host, s, {.steps = steps, .eval_every = 1});
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

// With H = 1 local SGD's curve is data parallelism's (mean_r(p - lr g_r)
// = p - lr mean_r(g_r)), up to float rounding, on the same samples; with
// momentum too (mean_r(v_r) follows the synchronous recursion v = mu v +
// mean_r(g_r)), and with warm-up (every replica's step counter is the
// iteration, as the synchronous optimizer's).
TEST(ReplicaTrainer, LocalSgdWithH1IsDataParallelism) {
  const std::unique_ptr<Backend> host = MakeCpuBackend(CpuIsa::kPortable);
  QuadraticProblem q(8, 1.0, 7);
  OptimizerOptions momentum;
  momentum.algorithm = OptimizerAlgorithm::kMomentum;
  momentum.momentum = 0.9;
  momentum.lr.warmup_steps = 10;
  for (const OptimizerOptions& rule : {OptimizerOptions{}, momentum}) {
    ReplicaSetting s{.mode = SyncMode::kSynchronous, .workers = 4, .batch = 2, .lr = 0.05,
                     .optimizer = rule};
    const LossCurve dp = TrainReplicas(q, *host, s, {.steps = 60, .eval_every = 5});
    s.mode = SyncMode::kLocalSgd;
    const LossCurve local = TrainReplicas(q, *host, s, {.steps = 60, .eval_every = 5});
    ASSERT_EQ(dp.loss.size(), local.loss.size());
    EXPECT_LT(dp.loss.back(), 0.5 * dp.loss.front());  // it learns
    for (std::size_t i = 0; i < dp.loss.size(); ++i) {
      EXPECT_NEAR(local.loss[i], dp.loss[i], 1e-5 * dp.loss[i])
          << OptimizerAlgorithmName(rule.algorithm) << ", evaluation " << i;
      EXPECT_TRUE(std::isnan(dp.accuracy[i]));  // the quadratic has no classes
    }
    EXPECT_EQ(dp.samples, local.samples);
  }
  // Stopping at 10% of the initial loss: the curve ends at the first
  // evaluation at or below it.
  ReplicaSetting s{.mode = SyncMode::kSynchronous, .workers = 4, .batch = 2, .lr = 0.1};
  const LossCurve stopped =
      TrainReplicas(q, *host, s, {.steps = 60, .eval_every = 5, .stop_at_fraction = 0.1});
  ASSERT_LT(stopped.loss.size(), 13u);
  EXPECT_LE(stopped.loss.back(), 0.1 * stopped.loss.front());
  EXPECT_GT(stopped.loss[stopped.loss.size() - 2], 0.1 * stopped.loss.front());
  // The same with an absolute loss.
  const double at = 0.1 * stopped.loss.front();
  const LossCurve absolute =
      TrainReplicas(q, *host, s, {.steps = 60, .eval_every = 5, .stop_at_loss = at});
  EXPECT_EQ(absolute.loss, stopped.loss);
}

// One parameter w (w0 = 0); sample i's loss is (i + 1)(w - 1)^2 / 2, so its
// gradient is (i + 1)(w - 1): samples differ in curvature, and local SGD's
// replicas then drift apart between averages. Evaluate reports w itself as
// the "loss", so a curve is the path of the (averaged) parameter.
class CurvatureProblem final : public TrainingProblem {
 public:
  std::int64_t num_params() const override { return 1; }
  std::vector<float> InitialParams() const override { return {0.0f}; }
  double Gradient(const float* w, std::int64_t first, std::int64_t count, float* grad) override {
    double g = 0;
    for (std::int64_t i = first; i < first + count; ++i) g += static_cast<double>(i + 1) * (w[0] - 1);
    grad[0] = static_cast<float>(g / static_cast<double>(count));
    return 0;
  }
  Evaluation Evaluate(const float* w) override { return {.loss = w[0]}; }
};

// Momentum 0.9 and 2 steps of warm-up (lr(0) = 0.5 x 1/2 = 0.25, then 0.5),
// 2 workers of batch 1 (worker r's step s reads sample 2 s + r):
//   synchronous, one momentum v:
//     step 0: g = mean(1 (0 - 1), 2 (0 - 1)) = -1.5; v = -1.5; w = 0.375
//     step 1: g = mean(3, 4) x (0.375 - 1) = -2.1875; v = -1.35 - 2.1875 =
//             -3.5375; w = 0.375 + 0.5 x 3.5375 = 2.14375
//   local SGD H = 2, a momentum per replica, w averaged after steps 1, 3:
//     replica 0 (samples 0, 2, 4, 6), replica 1 (1, 3, 5, 7):
//     step 0: v0 = -1, w0 = 0.25; v1 = -2, w1 = 0.5          mean 0.375
//     step 1: g0 = 3 (0.25 - 1) = -2.25, v0 = -3.15, w0 = 1.825;
//             g1 = 4 (0.5 - 1) = -2, v1 = -3.8, w1 = 2.4;   averaged 2.1125
//     step 2: g0 = 5 x 1.1125 = 5.5625, v0 = 2.7275, w0 = 0.74875;
//             g1 = 6 x 1.1125 = 6.675, v1 = 3.255, w1 = 0.485; mean 0.616875
//     step 3: g0 = 7 (0.74875 - 1) = -1.75875, v0 = 0.696, w0 = 0.40075;
//             g1 = 8 (0.485 - 1) = -4.12, v1 = -1.1905, w1 = 1.08025;
//             averaged 0.7405
//   (averaging the momentum buffers too would give 0.7770625 at step 3).
TEST(ReplicaTrainer, MomentumAndWarmUpByHand) {
  const std::unique_ptr<Backend> host = MakeCpuBackend(CpuIsa::kPortable);
  CurvatureProblem p;
  OptimizerOptions rule;
  rule.algorithm = OptimizerAlgorithm::kMomentum;
  rule.momentum = 0.9;
  rule.lr.warmup_steps = 2;
  ReplicaSetting s{.mode = SyncMode::kSynchronous, .workers = 2, .batch = 1, .lr = 0.5,
                   .optimizer = rule};
  const LossCurve sync = TrainReplicas(p, *host, s, {.steps = 2, .eval_every = 1});
  const std::vector<double> sync_expected = {0, 0.375, 2.14375};
  ASSERT_EQ(sync.loss.size(), sync_expected.size());
  for (std::size_t t = 0; t < sync_expected.size(); ++t)
    EXPECT_NEAR(sync.loss[t], sync_expected[t], 1e-6) << "step " << t;
  s.mode = SyncMode::kLocalSgd;
  s.averaging_period = 2;
  const LossCurve local = TrainReplicas(p, *host, s, {.steps = 4, .eval_every = 1});
  const std::vector<double> local_expected = {0, 0.375, 2.1125, 0.616875, 0.7405};
  ASSERT_EQ(local.loss.size(), local_expected.size());
  for (std::size_t t = 0; t < local_expected.size(); ++t)
    EXPECT_NEAR(local.loss[t], local_expected[t], 1e-6) << "step " << t;
}

// A parameter server without staleness applies update t from worker t mod
// W's batch t / W, i.e. samples [t b, (t + 1) b): one worker of batch b in
// synchronous steps, provided the server's optimizer steps (its momentum
// and its warm-up counter) once per applied push.
TEST(ReplicaTrainer, ServerStepsOncePerPush) {
  const std::unique_ptr<Backend> host = MakeCpuBackend(CpuIsa::kPortable);
  QuadraticProblem q(8, 1.0, 5);
  OptimizerOptions rule;
  rule.algorithm = OptimizerAlgorithm::kMomentum;
  rule.momentum = 0.9;
  rule.lr.warmup_steps = 8;
  const ReplicaRunOptions run{.steps = 24, .eval_every = 4};
  const LossCurve async = TrainReplicas(
      q, *host,
      {.mode = SyncMode::kAsynchronous, .workers = 4, .batch = 2, .lr = 0.05, .optimizer = rule},
      run);
  const LossCurve one = TrainReplicas(
      q, *host, {.mode = SyncMode::kSynchronous, .workers = 1, .batch = 2, .lr = 0.05, .optimizer = rule},
      run);
  ASSERT_EQ(async.loss.size(), one.loss.size());
  for (std::size_t i = 0; i < one.loss.size(); ++i) EXPECT_DOUBLE_EQ(async.loss[i], one.loss[i]) << i;
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
  const std::unique_ptr<Backend> host = MakeCpuBackend(CpuIsa::kPortable);
  for (int staleness : {0, 3}) {
    QuadraticProblem q(d, 0.0, 3);
    ReplicaSetting s{.mode = SyncMode::kAsynchronous, .workers = 4, .staleness = staleness,
                     .batch = 65536, .lr = eta};
    const LossCurve c = TrainReplicas(q, *host, s, {.steps = steps, .eval_every = 1});
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
  const LossCurve replicas = TrainReplicas(two, *cpu, s, run);
  s.mode = SyncMode::kLocalSgd;
  const LossCurve local = TrainReplicas(two, *cpu, s, run);
  const LossCurve single = TrainReplicas(
      one, *cpu, {.mode = SyncMode::kSynchronous, .workers = 1, .batch = 8, .lr = 0.05}, run);
  ASSERT_EQ(replicas.loss.size(), single.loss.size());
  EXPECT_LT(single.loss.back(), single.loss.front());  // it learns
  for (std::size_t i = 0; i < single.loss.size(); ++i) {
    EXPECT_NEAR(replicas.loss[i], single.loss[i], 1e-4 * single.loss[i]) << i;
    EXPECT_NEAR(local.loss[i], single.loss[i], 1e-4 * single.loss[i]) << i;
  }
  EXPECT_EQ(replicas.samples, single.samples);
}

// The evaluation set: a separate dataset's first samples in `shards`
// ranges of eval_samples / shards, each rounded down to whole batches (as
// `dtsim exec` splits it over replicas), loss and top-1 accuracy averaged
// over the samples evaluated.
TEST(ModelProblem, EvaluatesLossAndAccuracyOnASeparateSet) {
  const models::ModelGraph g = models::BuildZooModel("mnist-mlp");
  const TeacherDatasetOptions teacher{.shape = g.op(0).output_shape, .classes = 10};
  const TeacherDataset train(teacher);
  const TeacherDataset test(teacher);  // the same samples, as another object
  const std::unique_ptr<Backend> cpu = MakeCpuBackend(CpuIsa::kPortable);
  // 64 training samples from 0 (8 whole batches) = the test set's 64 in
  // one range = in two ranges [0, 32) and [32, 64).
  ModelProblem own(g, train, *cpu, {.batch = 8, .eval_samples = 64});
  ModelProblem one(g, train, *cpu, {.batch = 8, .eval_samples = 64}, &test);
  ModelProblem two(g, train, *cpu, {.batch = 8, .eval_samples = 64, .eval_shards = 2}, &test);
  const std::vector<float> w = own.InitialParams();
  const Evaluation a = own.Evaluate(w.data()), b = one.Evaluate(w.data()),
                   c = two.Evaluate(w.data());
  EXPECT_NEAR(b.loss, a.loss, 1e-6 * a.loss);
  EXPECT_NEAR(c.loss, a.loss, 1e-6 * a.loss);
  EXPECT_DOUBLE_EQ(b.accuracy, a.accuracy);
  EXPECT_DOUBLE_EQ(c.accuracy, a.accuracy);
  EXPECT_GE(a.accuracy, 0.0);
  EXPECT_LE(a.accuracy, 1.0);
  // 60 samples in 2 shards: 30 each, 24 of them in whole batches of 8, so
  // 48 evaluated and the accuracy is a multiple of 1/48.
  ModelProblem odd(g, train, *cpu, {.batch = 8, .eval_samples = 60, .eval_shards = 2}, &test);
  const double correct = odd.Evaluate(w.data()).accuracy * 48;
  EXPECT_NEAR(correct, std::round(correct), 1e-9);
  // 15 samples in 2 shards leave 7 per shard: no whole batch.
  EXPECT_THROW(ModelProblem(g, train, *cpu, {.batch = 8, .eval_samples = 15, .eval_shards = 2},
                            &test),
               UserError);
}

TEST(ReplicaTrainer, RefusesSettingsOutOfRangeAndDivergence) {
  const std::unique_ptr<Backend> host = MakeCpuBackend(CpuIsa::kPortable);
  QuadraticProblem q(2, 0.0, 1);
  EXPECT_THROW(TrainReplicas(q, *host, {.workers = 0}, {}), UserError);
  EXPECT_THROW(TrainReplicas(q, *host, {.mode = SyncMode::kBackup, .workers = 2, .backups = 2}, {}),
               UserError);
  // lr 3 on f = |e|^2 / 2: e' = -2 e, the loss grows 4x per step until it
  // is not finite.
  try {
    TrainReplicas(q, *host, {.workers = 1, .batch = 4096, .lr = 3.0}, {.steps = 2000, .eval_every = 50});
    ADD_FAILURE() << "diverged without an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("diverged"), std::string::npos);
  }
  // As a result: the curve ends before the step that diverged.
  const LossCurve c =
      TrainReplicas(q, *host, {.workers = 1, .batch = 4096, .lr = 3.0},
                    {.steps = 2000, .eval_every = 50, .divergence_is_result = true});
  EXPECT_GT(c.diverged_at, 0);
  EXPECT_LT(c.steps.back(), c.diverged_at);
}

}  // namespace
}  // namespace dtsim::exec
