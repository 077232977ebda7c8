// PipeDream's plan and planner (issue 13 item 4): weight versions against
// the paper's NOAM, the 1F1B-RR round robin, and the partitioning dynamic
// program against exhaustive search.
#include "plan/pipedream.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "common/error.h"
#include "plan/chain_test_graph.h"
#include "plan/layers.h"
#include "plan/partition.h"

namespace dtsim::plan {
namespace {

TEST(PipeDream, MinibatchesInFlightAreTheDownstreamWorkersOverTheReplicas) {
  // Straight pipeline: p - s (1F1B's warm-up plus one); the input stage's is
  // NOAM = ceil(workers / input-stage replicas) (Narayanan et al. 2019, §3.3).
  EXPECT_EQ(PipeDreamInFlight({1, 1, 1, 1}, 0), 4);
  EXPECT_EQ(PipeDreamInFlight({1, 1, 1, 1}, 3), 1);
  EXPECT_EQ(PipeDreamInFlight({3, 1}, 0), 2);  // ceil(4 / 3)
  EXPECT_EQ(PipeDreamInFlight({3, 1}, 1), 1);
  EXPECT_EQ(PipeDreamInFlight({1, 3}, 0), 4);
  EXPECT_EQ(PipeDreamInFlight({2, 2, 4}, 1), 3);  // ceil(6 / 2)
  EXPECT_EQ(PipeDreamRound({3, 1}), 3);
  EXPECT_EQ(PipeDreamRound({2, 3, 4}), 12);
  EXPECT_EQ(PipeDreamRound({1, 1}), 1);
}

// PipeDream on `g` (4 layers): layers 0-2 on 3 replicas, layer 3 on one.
HybridOptions ThreeOne(const models::ModelGraph& g, int iterations) {
  HybridOptions o;
  o.schedule = PipelineSchedule::kPipeDream;
  o.pipeline = 2;
  o.stage_replicas = {3, 1};
  o.iterations = iterations;
  o.chunks = ChunksFromCounts(LayerUnits(g), {3, 1});
  return o;
}

TEST(PipeDream, PlanRunsEachMinibatchRoundRobinWithAnUpdateAfterEach) {
  const models::ModelGraph g = ChainTestGraph(4);
  HybridOptions o = ThreeOne(g, 4);
  o.micro_batch = 8;
  const Plan plan = BuildHybridPlan(g, {1, 4}, o);
  const int minibatches = 3 * 4;  // lcm(3, 1) per iteration
  EXPECT_EQ(plan.samples_per_iteration, 3 * 8);
  std::vector<int> forwards(4, 0), updates(4, 0);
  for (const Task& t : plan.tasks()) {
    if (t.kind == TaskKind::kForward) {
      ++forwards[static_cast<std::size_t>(t.rank)];
      const int mb = t.iteration * 3 + t.micro_batch;
      // Round robin: minibatch b on replica b mod 3 of stage 0.
      if (t.rank < 3) {
        EXPECT_EQ(t.rank, mb % 3);
      }
    }
    if (t.kind == TaskKind::kOptimizer) ++updates[static_cast<std::size_t>(t.rank)];
  }
  // Stage 0's replicas share the minibatches; stage 1 runs them all; every
  // replica updates after each of its minibatches.
  EXPECT_EQ(forwards, (std::vector<int>{4, 4, 4, minibatches}));
  EXPECT_EQ(updates, forwards);
  // Stage 0 all-reduces its 3 x 1,000 fp32 gradients once per round.
  int syncs = 0;
  for (const Collective& c : plan.collectives()) {
    EXPECT_EQ(plan.groups()[static_cast<std::size_t>(c.group)], (std::vector<RankId>{0, 1, 2}));
    EXPECT_DOUBLE_EQ(c.bytes, 3 * 1000 * 4.0);
    ++syncs;
  }
  EXPECT_EQ(syncs, minibatches / 3);
  // The stages' replicas add up to the devices.
  o.stage_replicas = {2, 1};
  EXPECT_THROW(BuildHybridPlan(g, {1, 4}, o), InternalError);
}

// A replicated stage's backward runs in bucket segments from its last op
// down, each all-reduced as soon as every replica has run it (DDP's buckets):
// with 4,000-byte buckets (one layer's fp32 weights) stage 0's 3 layers make
// 3 all-reduces per round, the first after the segment of its last layer,
// while the stage's backward goes on.
TEST(PipeDream, ReplicatedStagesAllReduceBucketsDuringTheBackward) {
  const models::ModelGraph g = ChainTestGraph(4);
  HybridOptions o = ThreeOne(g, 2);
  o.bucket_bytes = 4000;
  const Plan plan = BuildHybridPlan(g, {1, 4}, o);
  EXPECT_EQ(plan.collectives().size(), 3u * 2);  // 3 buckets x 2 rounds (2 iterations of 3)
  const Collective& first = plan.collectives()[0];
  EXPECT_DOUBLE_EQ(first.bytes, 4000);
  const Task& segment = plan.task(plan.deps(first.tasks[0])[0]);
  EXPECT_EQ(segment.kind, TaskKind::kBackward);
  EXPECT_EQ(segment.op, 3);  // layer2.fc, the stage's last op (op 0 is the input view)
  EXPECT_EQ(segment.op_count, 1);
  // The update waits for all three.
  for (TaskId t = 0; t < static_cast<TaskId>(plan.num_tasks()); ++t)
    if (plan.task(t).kind == TaskKind::kOptimizer && plan.task(t).rank == 0) {
      EXPECT_EQ(plan.deps(t).size(), 3u);
      break;
    }
}

// Every pipeline of `units` on `devices` (stages, cuts, replicas), for the
// exhaustive check.
double BruteForce(int units, int first, int devices, const std::function<double(int, int, int)>& stage_s,
                  const std::function<double(int)>& edge_s) {
  constexpr double kNone = 1e300;
  if (first == units) return devices == 0 ? 0 : kNone;
  double best = kNone;
  for (int end = first + 1; end <= units; ++end)
    for (int m = 1; m <= devices; ++m) {
      const double rest = BruteForce(units, end, devices - m, stage_s, edge_s);
      if (rest >= kNone) continue;
      double c = std::max(rest, stage_s(first, end, m));
      if (end < units) c = std::max(c, edge_s(end));
      best = std::min(best, c);
    }
  return best;
}

TEST(PipeDream, PlannerMatchesExhaustiveSearch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.1, 2.0);
  for (int trial = 0; trial < 40; ++trial) {
    PipeDreamProblem pr;
    const int units = 2 + trial % 4, devices = 1 + trial % 5;
    for (int i = 0; i < units; ++i) {
      pr.compute_s.push_back(u(rng));
      pr.param_bytes.push_back(trial % 3 == 0 ? 0 : u(rng) * 1e9);
      pr.boundary_bytes.push_back(u(rng) * 1e8);
    }
    pr.devices = devices;
    // A ring all-reduce, 2 (m - 1) / m bytes at 10 GB/s; sends at 1 GB/s.
    pr.sync_s = [](double bytes, int m) { return 2.0 * (m - 1) / m * bytes / 10e9; };
    pr.send_s = [](double bytes) { return bytes / 1e9; };
    const auto stage_s = [&](int i, int j, int m) {
      double c = 0, w = 0;
      for (int k = i; k < j; ++k) {
        c += pr.compute_s[static_cast<std::size_t>(k)];
        w += pr.param_bytes[static_cast<std::size_t>(k)];
      }
      return std::max(c, m > 1 ? pr.sync_s(w, m) : 0.0) / m;
    };
    const auto edge_s = [&](int i) { return 2 * pr.send_s(pr.boundary_bytes[static_cast<std::size_t>(i - 1)]); };
    const PipeDreamPartition got = PlanPipeDream(pr);
    EXPECT_NEAR(got.slowest_s, BruteForce(units, 0, devices, stage_s, edge_s), 1e-12) << trial;
    // The partition it returns has the time it reports.
    int units_seen = 0, devices_seen = 0;
    double slowest = 0;
    for (std::size_t k = 0; k < got.units.size(); ++k) {
      slowest = std::max(slowest, stage_s(units_seen, units_seen + got.units[k], got.replicas[k]));
      units_seen += got.units[k];
      devices_seen += got.replicas[k];
      if (units_seen < units) slowest = std::max(slowest, edge_s(units_seen));
    }
    EXPECT_EQ(units_seen, units);
    EXPECT_EQ(devices_seen, devices);
    EXPECT_NEAR(slowest, got.slowest_s, 1e-12) << trial;
  }
}

TEST(PipeDream, PlannerReplicatesComputeAndKeepsLargeWeightsOnOneDevice) {
  // The shape of the paper's VGG-16 result (§5.2: a "15-1" configuration):
  // convolutions are most of the compute and few weights, the dense layers
  // the reverse. Unit A: 3 s per minibatch, no weights; unit B: 1 s and
  // weights that take 10 s to synchronize. On 4 devices: A on 3 replicas,
  // B on one, 1 s per minibatch, against 4 / 4 = 1 s of compute but a 10 s
  // sync for data parallelism.
  PipeDreamProblem pr;
  pr.compute_s = {3, 1};
  pr.param_bytes = {0, 1};
  pr.boundary_bytes = {0, 0};
  pr.devices = 4;
  pr.sync_s = [](double bytes, int) { return bytes * 10; };
  pr.send_s = [](double) { return 0.0; };
  PipeDreamPartition got = PlanPipeDream(pr);
  EXPECT_EQ(got.units, (std::vector<int>{1, 1}));
  EXPECT_EQ(got.replicas, (std::vector<int>{3, 1}));
  EXPECT_DOUBLE_EQ(got.slowest_s, 1.0);
  // With free synchronization, data parallelism (one stage, 4 replicas)
  // ties and wins: fewer stages.
  pr.sync_s = [](double, int) { return 0.0; };
  got = PlanPipeDream(pr);
  EXPECT_EQ(got.replicas, (std::vector<int>{4}));
  EXPECT_DOUBLE_EQ(got.slowest_s, 1.0);
  // Given replicas, only the layers move: 2 devices as [1, 1] on units of
  // 1, 1, 1, 1 split 2 + 2.
  pr.compute_s = {1, 1, 1, 1};
  pr.param_bytes = {0, 0, 0, 0};
  pr.boundary_bytes = {0, 0, 0, 0};
  pr.devices = 2;
  pr.replicas = {1, 1};
  got = PlanPipeDream(pr);
  EXPECT_EQ(got.units, (std::vector<int>{2, 2}));
  EXPECT_DOUBLE_EQ(got.slowest_s, 2.0);
}

}  // namespace
}  // namespace dtsim::plan
