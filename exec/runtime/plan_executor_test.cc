// The seeds' mathematics, executed for real from plans (runs as 1, 2 and 4
// MPI ranks; tests needing a world size skip otherwise):
//   - synchronous data parallelism over n workers with m samples each gives
//     the parameters of one worker with batch n x m;
//   - parameter averaging every step (local SGD, H = 1, plain SGD) gives
//     them too; with H = 4 the replicas agree after each average;
//   - a pipeline (GPipe and 1F1B, 2 micro-batches) gives the parameters of
//     the unsplit model, also when the first and last stage share a tied
//     embedding table.
#include "exec/runtime/plan_executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "exec/comm/mpi_communicator.h"
#include "exec/comm/solo_communicator.h"
#include "exec/data/synthetic_dataset.h"
#include "exec/kernels/cpu_backend.h"
#include "models/zoo.h"
#include "plan/data_parallel.h"
#include "plan/hybrid.h"
#include "plan/layers.h"
#include "plan/partition.h"

namespace dtsim::exec {
namespace {

constexpr int kIterations = 3;

const models::ModelGraph& Cnn() {
  static const models::ModelGraph g = models::BuildZooModel("cifar10-cnn");
  return g;
}

const Dataset& Images() {
  static const ClassImageDataset d({.channels = 3, .height = 24, .width = 24, .seed = 7});
  return d;
}

// `o`'s synchronisation (what is averaged, post-local steps, outer
// optimizer) with the given batch and H, over `ranks` ranks on one node.
plan::Plan DataPlan(int ranks, int batch, int averaging_period, plan::DataParallelOptions o = {}) {
  o.batch_per_rank = batch;
  o.iterations = averaging_period;
  o.averaging_period = averaging_period;
  return plan::BuildDataParallelPlan(Cnn(), {1, ranks}, o);
}

ExecOptions Options() {
  ExecOptions o;
  o.iterations = kIterations;
  o.optimizer.lr.initial_lr = 0.01;
  o.seed = 3;
  return o;
}

// One worker with the whole batch, run in this process.
std::vector<float> SoloParams(int batch) {
  SoloCommunicator solo;
  CpuBackend cpu;
  return ExecutePlan(DataPlan(1, batch, 1), Cnn(), Images(), solo, cpu, Options()).final_params;
}

void ExpectClose(const std::vector<float>& a, const std::vector<float>& b, std::size_t offset = 0) {
  ASSERT_LE(a.size() + offset, b.size());
  // Float sums in another order: 1e-4 relative + 1e-6 after 3 SGD steps.
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i + offset], 1e-4 * std::abs(b[i + offset]) + 1e-6) << "parameter " << i;
}

class PlanExecutor : public testing::Test {
 protected:
  MpiCommunicator world_;
  CpuBackend cpu_;
};

TEST_F(PlanExecutor, DataParallelEqualsOneWorkerWithTheWholeBatch) {
  const int n = world_.size();
  for (auto algorithm : {plan::CollectiveAlgorithm::kRing, plan::CollectiveAlgorithm::kTree}) {
    plan::DataParallelOptions o;
    o.batch_per_rank = 4;
    o.algorithm = algorithm;
    o.bucket_bytes = 1 << 20;  // several buckets
    const plan::Plan p = plan::BuildDataParallelPlan(Cnn(), {1, n}, o);
    const ExecResult r = ExecutePlan(p, Cnn(), Images(), world_, cpu_, Options());
    ExpectClose(r.final_params, SoloParams(4 * n));
    EXPECT_EQ(r.losses.size(), static_cast<std::size_t>(kIterations));
  }
}

// Issue 13: recomputation re-runs forwards of op ranges before their
// backward (plan/compute_tasks.h). Re-running a forward from the same inputs
// gives the same activations, so the parameters after training are
// bit-identical to the plan without recomputation, whichever ranges re-run.
TEST_F(PlanExecutor, RecomputedForwardsGiveBitIdenticalParameters) {
  SoloCommunicator solo;
  plan::DataParallelOptions o;
  o.batch_per_rank = 4;
  const std::vector<float> plain =
      ExecutePlan(plan::BuildDataParallelPlan(Cnn(), {1, 1}, o), Cnn(), Images(), solo, cpu_, Options())
          .final_params;
  for (const auto& u : plan::LayerUnits(Cnn())) o.recompute.emplace_back(u.begin, u.end);
  const plan::Plan re = plan::BuildDataParallelPlan(Cnn(), {1, 1}, o);
  o.recompute.clear();
  EXPECT_GT(re.num_tasks(), plan::BuildDataParallelPlan(Cnn(), {1, 1}, o).num_tasks());
  EXPECT_EQ(ExecutePlan(re, Cnn(), Images(), solo, cpu_, Options()).final_params, plain);
}

// Issue 14 item 3: with 2+ ranks the gradient buckets all-reduce on a comm
// thread while the backward goes on (the plan overlaps them); the bits are
// those of running them on the rank's one thread.
TEST_F(PlanExecutor, CommThreadGivesBitIdenticalResults) {
  plan::DataParallelOptions o;
  o.batch_per_rank = 4;
  o.bucket_bytes = 1 << 18;  // several buckets, the first ready early in the backward
  const plan::Plan p = plan::BuildDataParallelPlan(Cnn(), {1, world_.size()}, o);
  ExecOptions eo = Options();
  eo.record_timeline = true;
  const ExecResult threaded = ExecutePlan(p, Cnn(), Images(), world_, cpu_, eo);
  eo.comm_thread = false;
  const ExecResult inline_comm = ExecutePlan(p, Cnn(), Images(), world_, cpu_, eo);
  EXPECT_EQ(threaded.overlapped_comm, world_.size() > 1);
  EXPECT_FALSE(inline_comm.overlapped_comm);
  EXPECT_EQ(threaded.final_params, inline_comm.final_params);
  EXPECT_EQ(threaded.losses, inline_comm.losses);
  EXPECT_EQ(threaded.timeline.size(), inline_comm.timeline.size());
}

TEST_F(PlanExecutor, MpiAllReduceGivesTheSameParameters) {
  ExecOptions eo = Options();
  eo.mpi_allreduce = true;
  const ExecResult r =
      ExecutePlan(DataPlan(world_.size(), 4, 1), Cnn(), Images(), world_, cpu_, eo);
  ExpectClose(r.final_params, SoloParams(4 * world_.size()));
}

TEST_F(PlanExecutor, AveragingEveryStepEqualsDataParallel) {
  // SGD: mean_i(p - lr g_i) = p - lr mean_i(g_i).
  plan::DataParallelOptions o;
  o.average_parameters = true;
  const plan::Plan p = DataPlan(world_.size(), 4, 1, o);
  ASSERT_EQ(p.sync.averaged, plan::Averaged::kParameters);
  const ExecResult r = ExecutePlan(p, Cnn(), Images(), world_, cpu_, Options());
  ExpectClose(r.final_params, SoloParams(4 * world_.size()));
}

TEST_F(PlanExecutor, LocalSgdReplicasAgreeAfterEachAverage) {
  if (world_.size() < 2) GTEST_SKIP() << "needs 2+ ranks";
  // H = 2, 4 iterations: averages after iterations 1 and 3, so the replicas
  // end equal; after 3 iterations (one local step since) they differ.
  for (int iterations : {4, 3}) {
    ExecOptions eo = Options();
    eo.iterations = iterations;
    const ExecResult r = ExecutePlan(DataPlan(world_.size(), 4, 2), Cnn(), Images(), world_,
                                     cpu_, eo);
    std::vector<float> mine = r.final_params, first = r.final_params;
    std::vector<int> group;
    for (int i = 0; i < world_.size(); ++i) group.push_back(i);
    world_.Broadcast(first.data(), first.size(), 0, group);
    if (iterations == 4) {
      EXPECT_EQ(mine, first) << "rank " << world_.rank();
    } else if (world_.rank() != 0) {
      EXPECT_NE(mine, first) << "rank " << world_.rank();
    }
  }
}

// Issue 13, item 6: hierarchical averaging (PyTorch's
// HierarchicalModelAverager). 4 ranks, pairs {0, 1} and {2, 3} average every
// 2 steps, everyone every 4. After 2 iterations each pair agrees and the
// pairs differ; after 4 everyone agrees.
TEST_F(PlanExecutor, HierarchicalAveragingAgreesWithinGroupsThenEverywhere) {
  if (world_.size() != 4) GTEST_SKIP() << "needs 4 ranks";
  plan::DataParallelOptions o;
  o.batch_per_rank = 4;
  o.iterations = 4;
  o.averaging_period = 4;
  o.averaging_levels = {{2, 2}};
  const plan::Plan p = plan::BuildDataParallelPlan(Cnn(), {1, 4}, o);
  for (int iterations : {2, 4}) {
    ExecOptions eo = Options();
    eo.iterations = iterations;
    const ExecResult r = ExecutePlan(p, Cnn(), Images(), world_, cpu_, eo);
    std::vector<float> partner = r.final_params, zero = r.final_params;
    // Each rank's partner in its pair (0 <-> 1, 2 <-> 3), and rank 0.
    const std::vector<int> everyone = {0, 1, 2, 3};
    for (int pair_first : {0, 2}) {
      std::vector<float> first = r.final_params;
      world_.Broadcast(first.data(), first.size(), pair_first, everyone);
      if (world_.rank() / 2 * 2 == pair_first) partner = first;
    }
    world_.Broadcast(zero.data(), zero.size(), 0, everyone);
    EXPECT_EQ(r.final_params, partner) << "rank " << world_.rank() << ", " << iterations;
    if (iterations == 4) {
      EXPECT_EQ(r.final_params, zero) << "rank " << world_.rank();
    } else if (world_.rank() >= 2) {
      EXPECT_NE(r.final_params, zero) << "rank " << world_.rank();
    }
  }
}

// DiLoCo's outer step (Douillard et al. 2023): with momentum 0 the
// parameters after the one global average of H = 4 steps are
// theta0 - lr (theta0 - average), linear in lr. So lr = 1 is plain local
// SGD, and for lr = 1, 1/2, 1/4 the results satisfy
// plain - half = 2 (half - quarter) (both are (lr1 - lr2)(average - theta0)).
TEST_F(PlanExecutor, OuterOptimizerStepIsLinearInItsLearningRate) {
  if (world_.size() < 2) GTEST_SKIP() << "needs 2+ ranks";
  auto run = [&](bool outer, float lr) {
    ExecOptions eo = Options();
    eo.iterations = 4;
    plan::DataParallelOptions o;
    o.outer = {outer, lr, 0};  // momentum 0
    return ExecutePlan(DataPlan(world_.size(), 4, 4, o), Cnn(), Images(), world_, cpu_, eo)
        .final_params;
  };
  const std::vector<float> plain = run(false, 1), one = run(true, 1), half = run(true, 0.5f),
                           quarter = run(true, 0.25f);
  ExpectClose(one, plain);
  ASSERT_EQ(half.size(), plain.size());
  double moved = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const double a = plain[i] - half[i], b = 2.0 * (half[i] - quarter[i]);
    ASSERT_NEAR(a, b, 1e-5 * std::abs(plain[i]) + 1e-6) << "parameter " << i;
    moved += std::abs(a);
  }
  EXPECT_GT(moved, 0) << "the outer learning rate must change the result";
}

// Post-local SGD: its synchronous phase is data parallelism. With H = 4
// and 3 iterations, local SGD would not have averaged yet (replicas differ);
// with post_local_steps = 3 every step averaged gradients, so the result is
// one worker's with the whole batch, as DataParallelEqualsOneWorker....
TEST_F(PlanExecutor, PostLocalSynchronousPhaseIsDataParallelism) {
  if (world_.size() < 2) GTEST_SKIP() << "needs 2+ ranks";
  plan::DataParallelOptions o;
  o.post_local_steps = kIterations;
  const ExecResult r =
      ExecutePlan(DataPlan(world_.size(), 4, 4, o), Cnn(), Images(), world_, cpu_, Options());
  ExpectClose(r.final_params, SoloParams(4 * world_.size()));
}

// A data-parallel plan over `ranks`, and with 2 ranks also a 2-stage
// pipeline of 3 micro-batches (several input slots per iteration).
std::vector<plan::Plan> DataAndPipelinePlans(int ranks) {
  std::vector<plan::Plan> plans = {DataPlan(ranks, 4, 1)};
  if (ranks == 2) {
    plan::HybridOptions o;
    o.pipeline = 2, o.micro_batch = 2, o.micro_batches = 3;
    o.chunks = {{0, Cnn().Find("pool2") + 1}, {Cnn().Find("pool2") + 1, Cnn().num_ops()}};
    o.symmetric = false;
    plans.push_back(plan::BuildHybridPlan(Cnn(), {1, 2}, o));
  }
  return plans;
}

// The input pipeline draws batches ahead on threads; every sample is a pure
// function of its index (dataset.h), so the trained parameters and losses
// are bit-identical to drawing each batch on the training thread. Pipeline
// plans have several micro-batch slots per iteration: each is prefetched.
TEST_F(PlanExecutor, PrefetchedInputGivesBitIdenticalResults) {
  const std::vector<plan::Plan> plans = DataAndPipelinePlans(world_.size());
  for (const plan::Plan& p : plans) {
    ExecOptions eo = Options();
    const ExecResult inline_input = ExecutePlan(p, Cnn(), Images(), world_, cpu_, eo);
    eo.input_threads = 3;
    const ExecResult prefetched = ExecutePlan(p, Cnn(), Images(), world_, cpu_, eo);
    EXPECT_EQ(prefetched.final_params, inline_input.final_params) << plan::StrategyName(p.strategy);
    EXPECT_EQ(prefetched.losses, inline_input.losses) << plan::StrategyName(p.strategy);
    ASSERT_FALSE(prefetched.times.empty());
    for (const auto& t : prefetched.times[0]) EXPECT_GE(t.input, 0.0);
  }
}

TEST_F(PlanExecutor, TimingByMarksGivesBitIdenticalResults) {
  // Timing compute tasks by backend marks instead of waiting after each
  // (what CUDA ranks do) changes when the host waits, never what runs: the
  // parameters and losses are bit-identical, every task is still in the
  // timeline, and compute time is still measured (on the CPU backend the
  // marks read the host clock).
  const std::vector<plan::Plan> plans = DataAndPipelinePlans(world_.size());
  for (const plan::Plan& p : plans) {
    ExecOptions eo = Options();
    eo.record_timeline = true;
    eo.task_timing = TaskTiming::kWaitEach;
    const ExecResult waited = ExecutePlan(p, Cnn(), Images(), world_, cpu_, eo);
    eo.task_timing = TaskTiming::kMarks;
    const ExecResult marked = ExecutePlan(p, Cnn(), Images(), world_, cpu_, eo);
    EXPECT_EQ(marked.final_params, waited.final_params) << plan::StrategyName(p.strategy);
    EXPECT_EQ(marked.losses, waited.losses) << plan::StrategyName(p.strategy);
    EXPECT_EQ(marked.timeline.size(), waited.timeline.size()) << plan::StrategyName(p.strategy);
    for (const TimelineEvent& e : marked.timeline) EXPECT_GE(e.end_us, e.start_us);
    ASSERT_FALSE(marked.times.empty());
    for (const auto& t : marked.times[0]) EXPECT_GT(t.compute, 0.0) << plan::StrategyName(p.strategy);
  }
}

TEST_F(PlanExecutor, PipelineEqualsTheUnsplitModel) {
  if (world_.size() != 2) GTEST_SKIP() << "a 2-stage pipeline needs exactly 2 ranks";
  const models::OpId cut = Cnn().Find("pool2") + 1;
  std::size_t first_stage_params = 0;
  for (models::OpId v = 0; v < cut; ++v) first_stage_params += Cnn().op(v).params;
  const std::vector<float> solo = SoloParams(8);
  for (auto schedule : {plan::PipelineSchedule::kGpipe, plan::PipelineSchedule::kOneFOneB}) {
    plan::HybridOptions o;
    o.pipeline = 2;
    o.micro_batch = 4;
    o.micro_batches = 2;
    o.schedule = schedule;
    o.chunks = {{0, cut}, {cut, Cnn().num_ops()}};
    o.symmetric = false;
    const plan::Plan p = plan::BuildHybridPlan(Cnn(), {1, 2}, o);
    const ExecResult r = ExecutePlan(p, Cnn(), Images(), world_, cpu_, Options());
    ExpectClose(r.final_params, solo, world_.rank() == 0 ? 0 : first_stage_params);
    EXPECT_EQ(r.final_params.size(),
              world_.rank() == 0 ? first_stage_params : solo.size() - first_stage_params);
  }
}

// A small GPT whose LM head shares the token table (tied embeddings): 2
// layers, H = 16, 4 heads, S = 8, V = 32.
const models::ModelGraph& TiedGpt() {
  static const models::ModelGraph g = models::BuildTransformer(
      {.layers = 2, .hidden = 16, .heads = 4, .sequence = 8, .vocab = 32});
  return g;
}

TEST_F(PlanExecutor, PipelineWithTiedEmbeddingsEqualsTheUnsplitModel) {
  // Issue 10 item 12: a 2-stage pipeline of a tied transformer hung (the
  // head's stage lacked the table). The last stage now holds a copy, and
  // the plan's embedding-group all-reduce sums the two stages' gradients
  // of it (Megatron-LM's _allreduce_embedding_grads), so the pipeline
  // trains the unsplit model: same losses, same parameters.
  if (world_.size() != 2) GTEST_SKIP() << "a 2-stage pipeline needs exactly 2 ranks";
  const models::ModelGraph& g = TiedGpt();
  const TokenDataset tokens({.vocab = 32, .seq_len = 8, .seed = 5});
  ExecOptions eo = Options();
  // Momentum: the copy's optimizer state must follow the table's too. (Not
  // Adam: it divides by sqrt(v), turning rounding noise in near-zero
  // gradients into full-size steps.)
  eo.optimizer.algorithm = OptimizerAlgorithm::kMomentum;
  eo.optimizer.lr.initial_lr = 0.05;
  const auto chunks = plan::EvenLayerChunks(plan::LayerUnits(g), 2);
  std::size_t first_stage_params = 0;
  for (models::OpId v = chunks[0].first; v < chunks[0].second; ++v)
    first_stage_params += g.op(v).params;
  SoloCommunicator solo;
  plan::DataParallelOptions one;
  one.batch_per_rank = 4;
  const ExecResult unsplit =
      ExecutePlan(plan::BuildDataParallelPlan(g, {1, 1}, one), g, tokens, solo, cpu_, eo);
  for (auto schedule : {plan::PipelineSchedule::kGpipe, plan::PipelineSchedule::kOneFOneB}) {
    plan::HybridOptions o;
    o.pipeline = 2;
    o.micro_batch = 2;
    o.micro_batches = 2;
    o.schedule = schedule;
    o.chunks = chunks;
    o.symmetric = false;
    const plan::Plan p = plan::BuildHybridPlan(g, {1, 2}, o);
    const ExecResult r = ExecutePlan(p, g, tokens, world_, cpu_, eo);
    // The differences come only from the order of float sums: the table's
    // gradient is (head part + lookup part) here and accumulated op by op
    // there, and micro-batch gradients add in another order; each reorders
    // sums of a few terms, a few ulps (fp32 eps 1.2e-7) relative, which 3
    // momentum steps (linear in the gradients) keep well under 1e-4
    // relative + 1e-6.
    ExpectClose(r.final_params, unsplit.final_params,
                world_.rank() == 0 ? 0 : first_stage_params);
    EXPECT_EQ(r.final_params.size(), world_.rank() == 0
                                         ? first_stage_params
                                         : unsplit.final_params.size() - first_stage_params);
    ASSERT_EQ(r.losses.size(), unsplit.losses.size());
    for (std::size_t i = 0; i < r.losses.size(); ++i)
      EXPECT_NEAR(r.losses[i], unsplit.losses[i], 1e-5 * std::abs(unsplit.losses[i]))
          << "iteration " << i;
  }
}

TEST_F(PlanExecutor, ResumedRunIsBitIdentical) {
  // 4 iterations straight, against 2, a "crash", and 2 more from the
  // checkpoint: the same parameters, bit for bit (Adam, so optimizer state
  // must be restored too).
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("dtsim_resume_" + std::to_string(world_.size())))
                              .string();
  if (world_.rank() == 0) std::filesystem::remove_all(dir);
  world_.Barrier();
  ExecOptions eo = Options();
  eo.optimizer.algorithm = OptimizerAlgorithm::kAdam;
  eo.optimizer.lr.initial_lr = 1e-3;
  eo.iterations = 4;
  const plan::Plan p = DataPlan(world_.size(), 4, 1);
  const std::vector<float> straight = ExecutePlan(p, Cnn(), Images(), world_, cpu_, eo).final_params;
  eo.checkpoint_dir = dir;
  eo.checkpoint_every = 2;
  eo.iterations = 2;
  ExecutePlan(p, Cnn(), Images(), world_, cpu_, eo);
  eo.iterations = 4;
  eo.resume = true;
  const ExecResult resumed = ExecutePlan(p, Cnn(), Images(), world_, cpu_, eo);
  EXPECT_EQ(resumed.first_iteration, 2);
  EXPECT_EQ(resumed.final_params, straight);
  world_.Barrier();
  if (world_.rank() == 0) std::filesystem::remove_all(dir);
}

TEST_F(PlanExecutor, TimelineHoldsEveryTaskOfEveryRank) {
  // Every rank runs each of its plan tasks once per iteration: rank 0's
  // gathered timeline has (its tasks) x iterations events per rank, each
  // with a non-negative duration, in order on each of the rank's streams
  // (collectives run on a comm thread beside the compute, CommThread).
  const plan::Plan p = DataPlan(world_.size(), 4, 1);
  ExecOptions eo = Options();
  eo.iterations = 2;
  eo.record_timeline = true;
  const ExecResult r = ExecutePlan(p, Cnn(), Images(), world_, cpu_, eo);
  if (world_.rank() != 0) {
    EXPECT_TRUE(r.timeline.empty());
    return;
  }
  for (int rank = 0; rank < world_.size(); ++rank) {
    std::size_t tasks = 0;
    for (const plan::Task& t : p.tasks()) tasks += t.rank == rank;
    std::size_t events = 0;
    double last_end[2] = {0, 0};  // compute, comm
    for (const TimelineEvent& e : r.timeline) {
      if (e.rank != rank) continue;
      ++events;
      EXPECT_GE(e.end_us, e.start_us);
      double& last = last_end[p.task(e.task).stream == plan::StreamKind::kCompute ? 0 : 1];
      EXPECT_GE(e.start_us + 1.0, last);  // float rounding: 1 us
      last = e.end_us;
    }
    EXPECT_EQ(events, tasks * 2) << "rank " << rank;
  }
}

}  // namespace
}  // namespace dtsim::exec
