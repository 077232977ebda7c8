#include "plan/data_parallel.h"

#include <gtest/gtest.h>

#include "plan/test_op.h"

namespace dtsim::plan {
namespace {

using models::ModelGraph;
using models::Op;
using models::OpKind;

// input -> dense(1000 params) -> relu -> dense(3000 params) -> loss
ModelGraph Tiny() {
  ModelGraph g("tiny");
  auto a = g.AddOp(TestOp("in", OpKind::kInput, 0), {});
  auto b = g.AddOp(TestOp("d1", OpKind::kDense, 1000), {a});
  auto c = g.AddOp(TestOp("relu", OpKind::kRelu, 0), {b});
  auto d = g.AddOp(TestOp("d2", OpKind::kDense, 3000), {c});
  g.AddOp(TestOp("loss", OpKind::kSoftmaxCrossEntropy, 0), {d});
  return g;
}

TEST(DataParallelPlan, TaskCountsPerRank) {
  DataParallelOptions o;
  o.iterations = 2;
  o.batch_per_rank = 4;
  o.bucket_bytes = 10000;
  Plan p = BuildDataParallelPlan(Tiny(), {2, 2}, o);
  EXPECT_EQ(p.num_ranks(), 4);
  EXPECT_EQ(p.samples_per_iteration, 16);
  EXPECT_EQ(p.ranks[3].node, 1);
  EXPECT_EQ(p.ranks[3].local, 1);
  // Per rank and iteration: 4 forward (input is free), backward-input for
  // loss, d2, relu (d1 reads only the input: none), 2 backward-weight, one
  // task per bucket (2) and the optimizer: 4 + 3 + 2 + 2 + 1 = 12.
  EXPECT_EQ(p.num_tasks(), 4u * 2 * 12);
  EXPECT_EQ(p.collectives().size(), 2u * 2);
  EXPECT_DOUBLE_EQ(p.collectives()[0].bytes, 12000);
  EXPECT_DOUBLE_EQ(p.collectives()[1].bytes, 4000);
  for (const Task& t : p.tasks()) {
    if (t.kind == TaskKind::kOptimizer) {
      EXPECT_EQ(t.params, 4000);
    }
  }
}

TEST(DataParallelPlan, OneRankHasNoCollectives) {
  Plan p = BuildDataParallelPlan(Tiny(), {1, 1}, {});
  EXPECT_TRUE(p.collectives().empty());
  EXPECT_EQ(p.num_tasks(), 4u + 3 + 2 + 1);
}

TEST(DataParallelPlan, BucketWaitsForItsGradientsOnly) {
  DataParallelOptions o;
  o.bucket_bytes = 10000;
  Plan p = BuildDataParallelPlan(Tiny(), {1, 2}, o);
  const Collective& first = p.collectives()[0];
  auto deps = p.deps(first.tasks[0]);
  ASSERT_EQ(deps.size(), 1u);
  EXPECT_EQ(p.task(deps[0]).kind, TaskKind::kBackwardWeight);
  EXPECT_EQ(p.task(deps[0]).op, 3);
  // Without overlap every bucket waits for the last backward task instead.
  o.overlap = false;
  Plan q = BuildDataParallelPlan(Tiny(), {1, 2}, o);
  auto late = q.deps(q.collectives()[0].tasks[0]);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(q.task(late[0]).op, 1);  // d1's weight gradient comes last
}

// Full recomputation of the range [d1, relu] (ops 1-2): rank 0's compute
// stream runs the forward of in..loss, then backward from loss down; on
// reaching the range (before relu's backward) the forwards of d1 and relu
// run again. Expected order, written out from that rule (the input op is
// free and gets no task; d1 reads only the graph input: no input gradient):
//   F1 F2 F3 F4 | B4i B3i B3w | F1 F2 | B2i B1w | optimizer
TEST(DataParallelPlan, RecomputeReRunsTheRangeBeforeItsBackward) {
  DataParallelOptions o;
  o.batch_per_rank = 4;
  o.recompute = {{1, 3}};
  const Plan plan = BuildDataParallelPlan(Tiny(), {1, 1}, o);
  std::vector<std::pair<TaskKind, int>> order;
  for (const Task& t : plan.tasks())
    if (t.rank == 0 && t.stream == StreamKind::kCompute) order.emplace_back(t.kind, t.op);
  using K = TaskKind;
  const std::vector<std::pair<TaskKind, int>> expected = {
      {K::kForward, 1},       {K::kForward, 2},        {K::kForward, 3},
      {K::kForward, 4},       {K::kBackwardInput, 4},  {K::kBackwardInput, 3},
      {K::kBackwardWeight, 3}, {K::kForward, 1},       {K::kForward, 2},
      {K::kBackwardInput, 2}, {K::kBackwardWeight, 1}, {K::kOptimizer, -1}};
  EXPECT_EQ(order, expected);
  // Without ranges: the same minus the two re-run forwards.
  o.recompute.clear();
  EXPECT_EQ(BuildDataParallelPlan(Tiny(), {1, 1}, o).num_tasks(), plan.num_tasks() - 2);
}

}  // namespace
}  // namespace dtsim::plan
