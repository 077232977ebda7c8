#include "plan/merge.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "plan/data_parallel.h"
#include "plan/test_op.h"

namespace dtsim::plan {
namespace {

using models::ModelGraph;
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

Plan TinyPlan(ClusterShape shape, int iterations) {
  DataParallelOptions o;
  o.iterations = iterations;
  o.batch_per_rank = 4;
  o.bucket_bytes = 10000;
  return BuildDataParallelPlan(Tiny(), shape, o);
}

std::vector<RankId> Identity(int n) {
  std::vector<RankId> r;
  for (int i = 0; i < n; ++i) r.push_back(i);
  return r;
}

void ExpectSameTask(const Task& a, const Task& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.iteration, b.iteration);
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.op_count, b.op_count);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.collective, b.collective);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.peer, b.peer);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.seconds, b.seconds);
}

TEST(MergePlans, OnePlanAloneIsTheSamePlan) {
  const Plan p = TinyPlan({2, 2}, 2);
  const MergedPlan m = MergePlans({{&p, Identity(p.num_ranks()), 0}}, p.ranks);
  const Plan& q = m.plan;
  ASSERT_EQ(q.num_tasks(), p.num_tasks());
  EXPECT_EQ(m.first_task, std::vector<TaskId>{0});
  for (TaskId t = 0; t < static_cast<TaskId>(p.num_tasks()); ++t) {
    ExpectSameTask(q.task(t), p.task(t));
    const auto a = p.deps(t), b = q.deps(t);
    EXPECT_EQ(std::vector<TaskId>(a.begin(), a.end()), std::vector<TaskId>(b.begin(), b.end()));
  }
  EXPECT_EQ(q.groups(), p.groups());
  ASSERT_EQ(q.collectives().size(), p.collectives().size());
  for (std::size_t c = 0; c < p.collectives().size(); ++c) {
    EXPECT_EQ(q.collectives()[c].tasks, p.collectives()[c].tasks);
    EXPECT_EQ(q.collectives()[c].group, p.collectives()[c].group);
    EXPECT_EQ(q.collectives()[c].bytes, p.collectives()[c].bytes);
  }
  EXPECT_EQ(q.num_ranks(), p.num_ranks());
  EXPECT_EQ(q.iterations, p.iterations);
  EXPECT_EQ(q.samples_per_iteration, p.samples_per_iteration);
  EXPECT_EQ(q.ops_on_rank, p.ops_on_rank);
}

// Two 2-rank jobs on a 4-node cluster of one device each, interleaved
// (job A on nodes 0 and 2, job B on 1 and 3), B starting 0.5 s later.
TEST(MergePlans, RemapsRanksAndDelaysALaterPart) {
  const Plan a = TinyPlan({2, 1}, 1);
  const Plan b = TinyPlan({2, 1}, 3);
  std::vector<RankPlacement> cluster(4);
  for (int r = 0; r < 4; ++r) cluster[static_cast<std::size_t>(r)].node = r;
  const MergedPlan m = MergePlans({{&a, {0, 2}, 0}, {&b, {1, 3}, 0.5}}, cluster);
  const Plan& q = m.plan;
  // B's part: 2 delay tasks (one per rank), then its tasks.
  ASSERT_EQ(q.num_tasks(), a.num_tasks() + 2 + b.num_tasks());
  ASSERT_EQ(m.first_task.size(), 2u);
  EXPECT_EQ(m.first_task[0], 0);
  EXPECT_EQ(m.first_task[1], static_cast<TaskId>(a.num_tasks() + 2));
  EXPECT_EQ(m.first_collective[1], static_cast<std::int32_t>(a.collectives().size()));
  EXPECT_EQ(q.iterations, 3);
  for (TaskId t = 0; t < static_cast<TaskId>(a.num_tasks()); ++t)
    EXPECT_EQ(q.task(t).rank, a.task(t).rank == 0 ? 0 : 2);
  const auto delay0 = static_cast<TaskId>(a.num_tasks());
  EXPECT_EQ(q.task(delay0).rank, 1);
  EXPECT_EQ(q.task(delay0 + 1).rank, 3);
  EXPECT_EQ(q.task(delay0).seconds, 0.5);
  for (TaskId t = 0; t < static_cast<TaskId>(b.num_tasks()); ++t) {
    const TaskId id = m.first_task[1] + t;
    EXPECT_EQ(q.task(id).rank, b.task(t).rank == 0 ? 1 : 3);
    // Tasks without dependencies of their own wait for their rank's delay.
    if (b.deps(t).empty()) {
      ASSERT_EQ(q.deps(id).size(), 1u);
      EXPECT_EQ(q.deps(id)[0], delay0 + b.task(t).rank);
    } else {
      EXPECT_EQ(q.deps(id)[0], b.deps(t)[0] + m.first_task[1]);
    }
  }
  // B's collectives span B's merged ranks.
  const Collective& c = q.collectives()[static_cast<std::size_t>(m.first_collective[1])];
  EXPECT_EQ(q.groups()[static_cast<std::size_t>(c.group)], (std::vector<RankId>{1, 3}));
  EXPECT_EQ(c.tasks.front(), b.collectives().front().tasks.front() + m.first_task[1]);
}

TEST(MergePlans, SharedRanksAreABug) {
  const Plan a = TinyPlan({2, 1}, 1);
  std::vector<RankPlacement> cluster(3);
  EXPECT_THROW(MergePlans({{&a, {0, 1}, 0}, {&a, {1, 2}, 0}}, cluster), dtsim::InternalError);
}

}  // namespace
}  // namespace dtsim::plan
