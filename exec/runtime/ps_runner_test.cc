// Parameter-server plans executed for real (runs as 2, 3 and 4 MPI ranks;
// the last one or two ranks are servers):
//   - synchronous with k = n and plain SGD gives the parameters of one
//     worker with the whole batch (servers hold them; each worker's replica
//     is its last pull, one update earlier), pushing gradients or parameters;
//   - k of n applies exactly k pushes per step and drops the rest;
//   - asynchronous applies every push alone, with staleness 0 for one
//     worker and a mean of at most n - 1 for n workers.
#include "exec/runtime/ps_runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "exec/comm/mpi_communicator.h"
#include "exec/comm/solo_communicator.h"
#include "exec/data/synthetic_dataset.h"
#include "exec/kernels/cpu_backend.h"
#include "models/zoo.h"
#include "plan/data_parallel.h"
#include "plan/parameter_server.h"

namespace dtsim::exec {
namespace {

constexpr int kIterations = 3;
constexpr int kBatch = 4;  // per worker

const models::ModelGraph& Cnn() {
  static const models::ModelGraph g = models::BuildZooModel("cifar10-cnn");
  return g;
}

const Dataset& Images() {
  static const ClassImageDataset d({.channels = 3, .height = 24, .width = 24, .seed = 7});
  return d;
}

ExecOptions Options() {
  ExecOptions o;
  o.iterations = kIterations;
  o.optimizer.lr.initial_lr = 0.01;
  o.seed = 3;
  return o;
}

plan::Plan PsPlan(int workers, int servers, const plan::ParameterServerOptions& base = {}) {
  plan::ParameterServerOptions o = base;
  o.batch_per_rank = kBatch;
  o.servers = servers;
  return plan::BuildParameterServerPlan(Cnn(), {1, workers}, o);
}

// One worker with the whole batch for `iterations` steps, in this process.
std::vector<float> SoloParams(int batch, int iterations) {
  SoloCommunicator solo;
  CpuBackend cpu;
  plan::DataParallelOptions o;
  o.batch_per_rank = batch;
  ExecOptions eo = Options();
  eo.iterations = iterations;
  return ExecutePlan(plan::BuildDataParallelPlan(Cnn(), {1, 1}, o), Cnn(), Images(), solo, cpu,
                     eo)
      .final_params;
}

void ExpectClose(const std::vector<float>& a, const std::vector<float>& b, std::int64_t offset) {
  ASSERT_LE(a.size() + static_cast<std::size_t>(offset), b.size());
  // Float sums in another order: 1e-4 relative + 1e-6 after 3 SGD steps
  // (as plan_executor_test.cc).
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float ref = b[i + static_cast<std::size_t>(offset)];
    ASSERT_NEAR(a[i], ref, 1e-4 * std::abs(ref) + 1e-6) << "parameter " << i;
  }
}

// (workers, servers) splits of this world size.
std::vector<std::pair<int, int>> Splits(int world) {
  std::vector<std::pair<int, int>> out;
  for (int servers = 1; servers <= 2; ++servers)
    if (world - servers >= 1) out.push_back({world - servers, servers});
  return out;
}

class PsExecutor : public testing::Test {
 protected:
  void SetUp() override {
    if (world_.size() < 2) GTEST_SKIP() << "needs a worker and a server";
  }
  bool IsServer(int workers) const { return world_.rank() >= workers; }

  MpiCommunicator world_;
  CpuBackend cpu_;
};

TEST_F(PsExecutor, SynchronousEqualsDataParallel) {
  for (const auto& [workers, servers] : Splits(world_.size())) {
    SCOPED_TRACE(std::to_string(workers) + " workers, " + std::to_string(servers) + " servers");
    const plan::Plan p = PsPlan(workers, servers);
    const ExecResult r = ExecutePlan(p, Cnn(), Images(), world_, cpu_, Options());
    const std::vector<float> solo = SoloParams(kBatch * workers, kIterations);
    if (IsServer(workers)) {
      // The plan's shard: ceil(P / S) parameters (plan/parameter_server.cc).
      const std::int64_t per = (static_cast<std::int64_t>(solo.size()) + servers - 1) / servers;
      EXPECT_EQ(r.params_offset, per * (world_.rank() - workers));
      EXPECT_EQ(static_cast<std::int64_t>(r.final_params.size()),
                std::min<std::int64_t>(per, static_cast<std::int64_t>(solo.size()) - r.params_offset));
      ExpectClose(r.final_params, solo, r.params_offset);
      // One update per step, of all n workers' gradients.
      EXPECT_EQ(r.update_contributions, std::vector<std::int32_t>(kIterations, workers));
    } else {
      // The replica holds the last pull: the parameters after step 2 of 3.
      EXPECT_EQ(r.final_params.size(), solo.size());
      ExpectClose(r.final_params, SoloParams(kBatch * workers, kIterations - 1), 0);
    }
    // Every server: one update per step, each of n pushes, none stale.
    EXPECT_EQ(r.server_updates, kIterations * servers);
    EXPECT_EQ(r.pushes_applied, kIterations * servers * workers);
    EXPECT_EQ(r.pushes_dropped, 0);
    EXPECT_EQ(r.max_staleness, 0);
    EXPECT_EQ(r.losses.size(), static_cast<std::size_t>(kIterations));
  }
}

// Whole variables dealt round-robin (plan/ps_placement.h): each server's
// final_params are its spans of the solo run's parameters, concatenated.
TEST_F(PsExecutor, RoundRobinPlacementEqualsDataParallel) {
  // Two servers where the world allows: variables alternate between them,
  // so each holds many separate spans.
  const int servers = world_.size() >= 3 ? 2 : 1;
  const int workers = world_.size() - servers;
  plan::ParameterServerOptions o;
  o.placement = {plan::PsPlacementPolicy::kRoundRobin, 0};
  const plan::Plan p = PsPlan(workers, servers, o);
  const ExecResult r = ExecutePlan(p, Cnn(), Images(), world_, cpu_, Options());
  const std::vector<float> solo = SoloParams(kBatch * workers, kIterations);
  if (!IsServer(workers)) return;
  EXPECT_EQ(r.param_spans, p.server_params[static_cast<std::size_t>(world_.rank() - workers)]);
  std::vector<float> expected;
  for (const plan::ParamSpan& span : r.param_spans)
    expected.insert(expected.end(), solo.begin() + span.offset, solo.begin() + span.offset + span.count);
  ExpectClose(r.final_params, expected, 0);
}

TEST_F(PsExecutor, PushingParametersEqualsDataParallel) {
  // Plain SGD: mean_i(p - lr g_i) = p - lr mean_i(g_i).
  const int workers = world_.size() - 1;
  plan::ParameterServerOptions o;
  o.push_parameters = true;
  const ExecResult r =
      ExecutePlan(PsPlan(workers, 1, o), Cnn(), Images(), world_, cpu_, Options());
  const std::vector<float> solo = SoloParams(kBatch * workers, kIterations);
  // Servers hold the averages; a worker's replica is its last pull plus its
  // own (unaveraged) last update.
  if (IsServer(workers)) ExpectClose(r.final_params, solo, r.params_offset);
  EXPECT_EQ(r.server_updates, kIterations);
}

TEST_F(PsExecutor, KOfNAppliesExactlyKPushesPerStep) {
  if (world_.size() < 3) GTEST_SKIP() << "needs 2+ workers";
  const int workers = world_.size() - 1;
  const int k = workers - 1;
  const int iterations = 4;
  plan::ParameterServerOptions o;
  o.replicas_to_aggregate = k;
  ExecOptions eo = Options();
  eo.iterations = iterations;
  eo.slowdown.assign(static_cast<std::size_t>(world_.size()), 1.0);
  eo.slowdown[static_cast<std::size_t>(workers - 1)] = 3.0;  // a straggler
  const ExecResult r = ExecutePlan(PsPlan(workers, 1, o), Cnn(), Images(), world_, cpu_, eo);
  if (IsServer(workers)) {
    EXPECT_EQ(r.update_contributions, std::vector<std::int32_t>(iterations, k));
  }
  EXPECT_EQ(r.server_updates, iterations);
  EXPECT_EQ(r.pushes_applied, iterations * k);
  // Every worker pushes every step; each push is applied or dropped once.
  EXPECT_EQ(r.pushes_applied + r.pushes_dropped, iterations * workers);
  // Accepted pushes are computed from the current version by definition.
  EXPECT_EQ(r.max_staleness, 0);
  for (double loss : r.losses) EXPECT_TRUE(std::isfinite(loss));
}

TEST_F(PsExecutor, AsynchronousStalenessIsBounded) {
  const int iterations = 4;
  for (const auto& [workers, servers] : Splits(world_.size())) {
    SCOPED_TRACE(std::to_string(workers) + " workers, " + std::to_string(servers) + " servers");
    plan::ParameterServerOptions o;
    o.asynchronous = true;
    ExecOptions eo = Options();
    eo.iterations = iterations;
    const ExecResult r =
        ExecutePlan(PsPlan(workers, servers, o), Cnn(), Images(), world_, cpu_, eo);
    // Each push is an update of its own.
    const std::int64_t pushes = static_cast<std::int64_t>(iterations) * workers * servers;
    EXPECT_EQ(r.server_updates, pushes);
    EXPECT_EQ(r.pushes_applied, pushes);
    EXPECT_EQ(r.pushes_dropped, 0);
    if (IsServer(workers)) {
      EXPECT_EQ(r.update_contributions,
                std::vector<std::int32_t>(static_cast<std::size_t>(iterations * workers), 1));
    }
    // A worker's staleness counts the other workers' updates between its
    // pull and its push. Its pull-to-push windows do not overlap, so each
    // update falls in at most one window of each of the n - 1 others:
    // sum of staleness <= (n - 1) x updates, mean <= n - 1, no slack
    // needed. One worker: nothing else updates, so 0.
    EXPECT_GE(r.mean_staleness, 0.0);
    EXPECT_LE(r.mean_staleness, workers - 1);
    EXPECT_GE(static_cast<double>(r.max_staleness), r.mean_staleness);
    if (workers == 1) {
      EXPECT_EQ(r.max_staleness, 0);
    }
    for (double loss : r.losses) EXPECT_TRUE(std::isfinite(loss));
  }
}

TEST_F(PsExecutor, LocalSgdOverServersPushesEveryHSteps) {
  // H = 2 over 4 iterations: pushes (and updates) after iterations 1 and 3.
  const int workers = world_.size() - 1;
  plan::ParameterServerOptions o;
  o.averaging_period = 2;
  o.iterations = 2;
  o.push_parameters = true;
  ExecOptions eo = Options();
  eo.iterations = 4;
  const ExecResult r = ExecutePlan(PsPlan(workers, 1, o), Cnn(), Images(), world_, cpu_, eo);
  EXPECT_EQ(r.server_updates, 2);
  EXPECT_EQ(r.pushes_applied, 2 * workers);
  if (workers == 1) {
    // One worker: averaging its own parameters changes nothing, so this is
    // plain SGD with its batch for 4 steps.
    ExpectClose(r.final_params, SoloParams(kBatch, 4), r.params_offset);
  }
}

}  // namespace
}  // namespace dtsim::exec
