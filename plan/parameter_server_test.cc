// Parameter-server plans: when each gradient push may start.
#include "plan/parameter_server.h"

#include <gtest/gtest.h>

#include "plan/chain_test_graph.h"

namespace dtsim::plan {
namespace {

// The op whose backward task a worker's push to `server` waits for.
int PushWaitsForOp(const Plan& plan, RankId server) {
  for (TaskId t = 0; t < static_cast<TaskId>(plan.num_tasks()); ++t) {
    const Task& task = plan.task(t);
    if (task.kind != TaskKind::kSend || task.rank != 0 || task.peer != server) continue;
    const auto deps = plan.deps(t);
    EXPECT_EQ(deps.size(), 1u);
    return plan.task(deps[0]).op;
  }
  return -2;
}

// 4 layers on 2 servers: shard 1 holds the bytes of layers 2 and 3 (ops 3,
// 4), shard 0 those of layers 0 and 1 (ops 1, 2). Overlapped, shard 1's push
// starts after layer 2's weight gradient (the backward reaches it halfway),
// shard 0's after layer 0's, the step's last; without overlap both wait for
// the step's last task.
TEST(ParameterServerPlan, OverlappedPushesWaitForTheirShardOnly) {
  const models::ModelGraph g = ChainTestGraph(4);
  ParameterServerOptions o;
  o.servers = 2;
  o.overlap = true;
  const Plan overlapped = BuildParameterServerPlan(g, {1, 2}, o);
  const RankId first_server = 2;
  EXPECT_EQ(PushWaitsForOp(overlapped, first_server + 1), 3);
  EXPECT_EQ(PushWaitsForOp(overlapped, first_server), 1);
  o.overlap = false;
  const Plan after = BuildParameterServerPlan(g, {1, 2}, o);
  EXPECT_EQ(PushWaitsForOp(after, first_server + 1), 1);
  EXPECT_EQ(PushWaitsForOp(after, first_server), 1);
  // Parameters (local SGD over servers) exist only after the update.
  o.overlap = true;
  o.push_parameters = true;
  o.averaging_period = 2;
  o.iterations = 2;
  const Plan params = BuildParameterServerPlan(g, {1, 2}, o);
  for (TaskId t = 0; t < static_cast<TaskId>(params.num_tasks()); ++t)
    if (params.task(t).kind == TaskKind::kSend && params.task(t).rank == 0) {
      EXPECT_EQ(params.task(params.deps(t)[0]).kind, TaskKind::kOptimizer);
    }
}

}  // namespace
}  // namespace dtsim::plan
