#include "plan/plan.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace dtsim::plan {
namespace {

TEST(Plan, DependenciesAreStoredPerTask) {
  Plan p;
  p.ranks = {{0, 0}, {0, 1}};
  Task t;
  TaskId a = p.AddTask(t);
  t.rank = 1;
  TaskId b = p.AddTask(t);
  const TaskId deps[] = {a, b};
  TaskId c = p.AddTask(t, deps);
  EXPECT_TRUE(p.deps(a).empty());
  ASSERT_EQ(p.deps(c).size(), 2u);
  EXPECT_EQ(p.deps(c)[1], b);
}

TEST(Plan, RejectsForwardDependencyAndBadRank) {
  Plan p;
  p.ranks = {{0, 0}};
  Task t;
  const TaskId future[] = {5};
  EXPECT_THROW(p.AddTask(t, future), InternalError);
  t.rank = 3;
  EXPECT_THROW(p.AddTask(t), InternalError);
}

TEST(Plan, CollectiveAddsOneCommTaskPerMember) {
  Plan p;
  p.ranks = {{0, 0}, {0, 1}, {1, 0}};
  const auto g = p.AddGroup({0, 2});
  Collective c;
  c.group = g;
  c.bytes = 8;
  const auto ci = p.AddCollective(c, {{}, {}}, 3);
  const Collective& stored = p.collectives()[static_cast<std::size_t>(ci)];
  ASSERT_EQ(stored.tasks.size(), 2u);
  EXPECT_EQ(p.task(stored.tasks[1]).rank, 2);
  EXPECT_EQ(p.task(stored.tasks[1]).stream, StreamKind::kComm);
  EXPECT_EQ(p.task(stored.tasks[1]).iteration, 3);
}

}  // namespace
}  // namespace dtsim::plan
