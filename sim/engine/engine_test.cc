#include "sim/engine/engine.h"

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
  comm.kind = TaskKind::kSend;  // holds no stream; waits for A only
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

TEST(Engine, CommStreamRunsCollectivesInOrderAndSendsHoldNoStream) {
  // Two all-reduces (5 and 7 ns) on the comm streams run back to back; a
  // send (10 ns) holds no stream, so it runs alongside them from t = 0.
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
  EXPECT_EQ(r.timing[4].start, 0);
  EXPECT_EQ(r.makespan, 12);
  EXPECT_EQ(r.events, 3u);  // two collective completions and one task
}

TEST(Engine, KOfNDependencies) {
  // A task waiting for 2 of 3 compute tasks (100, 300, 200 ns on three
  // streams) starts when the second finishes: at 200.
  Plan p;
  p.ranks = {{0, 0}, {0, 1}, {0, 2}};
  TaskId a = p.AddTask(Compute(0));
  TaskId b = p.AddTask(Compute(1));
  TaskId c = p.AddTask(Compute(2));
  Task agg = Compute(0);
  agg.min_deps = 2;
  const TaskId deps[] = {a, b, c};
  TaskId k = p.AddTask(agg, deps);
  EngineResult r = RunEngine(p, TaskCosts{{100, 300, 200, 10}, {}});
  EXPECT_EQ(r.timing[static_cast<std::size_t>(k)].start, 200);
  EXPECT_EQ(r.makespan, 300);
}

TEST(Engine, ServerStreamServesInReadyOrder) {
  // Rank 1 is a server. Its two tasks are added in the order (x, y) but y's
  // input arrives first (worker task of 50 ns vs 200 ns): y runs first.
  Plan p;
  p.ranks = {{0, 0}, {1, 0, plan::RankRole::kServer}, {0, 1}};
  TaskId slow = p.AddTask(Compute(0));
  TaskId fast = p.AddTask(Compute(2));
  const TaskId dx[] = {slow};
  const TaskId dy[] = {fast};
  TaskId x = p.AddTask(Compute(1), dx);
  TaskId y = p.AddTask(Compute(1), dy);
  EngineResult r = RunEngine(p, TaskCosts{{200, 50, 30, 30}, {}});
  EXPECT_EQ(r.timing[static_cast<std::size_t>(y)].start, 50);
  EXPECT_EQ(r.timing[static_cast<std::size_t>(x)].start, 200);
}

}  // namespace
}  // namespace dtsim::sim
