// Parameter-server plans: when each gradient push may start.
#include "plan/parameter_server.h"

#include <gtest/gtest.h>

namespace dtsim::plan {
namespace {

// An input view and `layers` dense layers of 1,000 fp32 parameters each.
models::ModelGraph Chain(int layers) {
  models::ModelGraph g("chain");
  models::Op in;
  in.name = "in";
  in.kind = models::OpKind::kReshape;
  in.output_shape = {64};
  models::OpId prev = g.AddOp(in, {});
  for (int i = 0; i < layers; ++i) {
    models::Op fc;
    fc.name = "fc" + std::to_string(i);
    fc.kind = models::OpKind::kDense;
    fc.output_shape = {64};
    fc.fwd_flops = fc.bwd_input_flops = fc.bwd_weight_flops = 1e6;
    fc.params = 1000;
    prev = g.AddOp(fc, {prev});
  }
  return g;
}

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

// 4 layers on 2 servers: shard 1 holds the bytes of fc2 and fc3 (ops 3, 4),
// shard 0 those of fc0 and fc1 (ops 1, 2). Overlapped, shard 1's push
// starts after fc2's weight gradient (the backward reaches it halfway),
// shard 0's after fc0's, the step's last; without overlap both wait for
// the step's last task.
TEST(ParameterServerPlan, OverlappedPushesWaitForTheirShardOnly) {
  const models::ModelGraph g = Chain(4);
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
