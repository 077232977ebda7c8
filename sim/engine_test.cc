#include "sim/engine.h"

#include <gtest/gtest.h>

namespace dtsim::sim {
namespace {

using plan::Plan;
using plan::StreamKind;
using plan::Task;
using plan::TaskId;
using plan::TaskKind;

Plan TwoRanks() {
  Plan p;
  p.ranks = {{0, 0}, {0, 1}};
  p.iterations = 1;
  return p;
}

Task Compute(int rank) {
  Task t;
  t.kind = TaskKind::kForward;
  t.rank = rank;
  return t;
}

TEST(Engine, StreamRunsTasksInProgramOrder) {
  Plan p = TwoRanks();
  p.AddTask(Compute(0));
  p.AddTask(Compute(0));
  TaskCosts c{{100, 50}, {}};
  EngineResult r = RunEngine(p, c);
  EXPECT_EQ(r.timing[0].start, 0);
  EXPECT_EQ(r.timing[1].start, 100);
  EXPECT_EQ(r.makespan, 150);
}

TEST(Engine, CrossStreamDependencyAndOverlap) {
  // Rank 0: compute A (100) then B (100); a comm task depends on A only, so
  // it overlaps B: makespan = max(200, 100 + 80).
  Plan p = TwoRanks();
  TaskId a = p.AddTask(Compute(0));
  p.AddTask(Compute(0));
  Task comm;
  comm.kind = TaskKind::kSend;
  comm.stream = StreamKind::kComm;
  comm.rank = 0;
  const TaskId deps[] = {a};
  p.AddTask(comm, deps);
  EngineResult r = RunEngine(p, TaskCosts{{100, 100, 80}, {}});
  EXPECT_EQ(r.timing[2].start, 100);
  EXPECT_EQ(r.makespan, 200);
}

TEST(Engine, CollectiveWaitsForSlowestMember) {
  // Rank 0 computes 100 ns, rank 1 300 ns; the all-reduce (50 ns) starts at
  // 300 on both and ends at 350.
  Plan p = TwoRanks();
  TaskId a = p.AddTask(Compute(0));
  TaskId b = p.AddTask(Compute(1));
  p.AddGroup({0, 1});
  plan::Collective c;
  c.group = 0;
  c.bytes = 1;
  p.AddCollective(c, {{a}, {b}}, 0);
  EngineResult r = RunEngine(p, TaskCosts{{100, 300, 0, 0}, {50}});
  EXPECT_EQ(r.timing[2].ready, 100);
  EXPECT_EQ(r.timing[2].start, 300);
  EXPECT_EQ(r.timing[3].end, 350);
  EXPECT_EQ(r.makespan, 350);
}

TEST(Engine, CommStreamRunsCollectivesInOrder) {
  // Two all-reduces (5 and 7 ns) then a send (10 ns) on rank 0's comm
  // stream, none with dependencies: they run back to back, 5 + 7 + 10.
  Plan p = TwoRanks();
  p.AddGroup({0, 1});
  plan::Collective c;
  c.group = 0;
  p.AddCollective(c, {{}, {}}, 0);
  p.AddCollective(c, {{}, {}}, 0);
  Task send;
  send.kind = TaskKind::kSend;
  send.stream = StreamKind::kComm;
  send.rank = 0;
  p.AddTask(send);
  EngineResult r = RunEngine(p, TaskCosts{{0, 0, 0, 0, 10}, {5, 7}});
  EXPECT_EQ(r.timing[2].start, 5);
  EXPECT_EQ(r.timing[4].start, 12);
  EXPECT_EQ(r.makespan, 22);
  EXPECT_EQ(r.events, 3u);  // two collective completions and one task
}

}  // namespace
}  // namespace dtsim::sim
