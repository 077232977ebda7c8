// A plan's synchronisation section and gradient buckets, as the builders
// fill them in.
#include "plan/sync.h"

#include <gtest/gtest.h>

#include "plan/test_op.h"

#include "plan/data_parallel.h"
#include "plan/parameter_server.h"

namespace dtsim::plan {
namespace {

using models::ModelGraph;
using models::Op;
using models::OpKind;

// op 0 input, 1 dense (1000 params), 2 relu, 3 dense (3000), 4 dense (500),
// 5 loss. fp32 gradients: op 1 = 4000 B, op 3 = 12000 B, op 4 = 2000 B.
ModelGraph Small() {
  ModelGraph g("small");
  auto in = g.AddOp(TestOp("in", OpKind::kInput, 0), {});
  auto d1 = g.AddOp(TestOp("d1", OpKind::kDense, 1000), {in});
  auto relu = g.AddOp(TestOp("relu", OpKind::kRelu, 0), {d1});
  auto d2 = g.AddOp(TestOp("d2", OpKind::kDense, 3000), {relu});
  auto d3 = g.AddOp(TestOp("d3", OpKind::kDense, 500), {d2});
  g.AddOp(TestOp("loss", OpKind::kSoftmaxCrossEntropy, 0), {d3});
  return g;
}

TEST(GradientBuckets, OpRangesAndBytesInBackwardOrder) {
  // Cap 10000 B, backward order op 4, 3, 1: op 4 (2000 B) leaves the first
  // bucket open, op 3 brings it to 14000 >= 10000 and closes it: ops [3, 5),
  // 14000 B. Op 1 (4000 B) is left for the last one: [1, 2), 4000 B.
  EXPECT_EQ(GradientBuckets(Small(), 10000),
            (std::vector<GradientBucket>{{3, 5, 14000}, {1, 2, 4000}}));
  // A cap above the model's 18000 B: one bucket over ops [1, 5), the relu
  // (op 2, no parameters) inside its range.
  EXPECT_EQ(GradientBuckets(Small(), 1e9), (std::vector<GradientBucket>{{1, 5, 18000}}));
  // A cap of 0 closes a bucket after every op with parameters.
  EXPECT_EQ(GradientBuckets(Small(), 0),
            (std::vector<GradientBucket>{{4, 5, 2000}, {3, 4, 12000}, {1, 2, 4000}}));
}

TEST(PlanSync, DataParallelPlanCarriesItsBuckets) {
  DataParallelOptions o;
  o.bucket_bytes = 10000;
  o.iterations = 2;
  const Plan p = BuildDataParallelPlan(Small(), {1, 2}, o);
  EXPECT_EQ(p.strategy, Strategy::kData);
  EXPECT_EQ(p.sync.averaging_period, 1);
  EXPECT_EQ(p.sync.averaged, Averaged::kGradients);
  ASSERT_EQ(p.buckets, GradientBuckets(Small(), 10000));
  // One all-reduce per bucket and iteration, each of its bucket's bytes.
  ASSERT_EQ(p.collectives().size(), 2u * 2);
  for (const Collective& c : p.collectives())
    EXPECT_DOUBLE_EQ(c.bytes, p.buckets[static_cast<std::size_t>(c.bucket)].bytes);
}

TEST(PlanSync, LocalSgdPlanDescribesItsAverages) {
  DataParallelOptions o;
  o.averaging_period = 4;
  o.iterations = 4;
  o.averaging_levels = {{2, 2}};
  o.post_local_steps = 3;
  o.outer = {true, 0.5f, 0.8f};
  const Plan p = BuildDataParallelPlan(Small(), {1, 4}, o);
  EXPECT_EQ(p.strategy, Strategy::kLocalSgd);
  EXPECT_STREQ(StrategyName(p.strategy), "local_sgd");
  EXPECT_EQ(p.sync.averaging_period, 4);
  EXPECT_EQ(p.sync.averaged, Averaged::kParameters);
  EXPECT_EQ(p.sync.post_local_steps, 3);
  EXPECT_TRUE(p.sync.outer.nesterov);
  EXPECT_FLOAT_EQ(p.sync.outer.lr, 0.5f);
  EXPECT_FLOAT_EQ(p.sync.outer.momentum, 0.8f);
  EXPECT_EQ(p.sync.levels, (std::vector<AveragingLevel>{{2, 2}}));
  EXPECT_EQ(p.sync.servers.servers, 0);

  // Local SGD asked for with H = 1: the plan is synchronous data
  // parallelism in shape, and its collectives average parameters.
  o = {};
  o.average_parameters = true;
  const Plan h1 = BuildDataParallelPlan(Small(), {1, 2}, o);
  EXPECT_EQ(h1.strategy, Strategy::kData);
  EXPECT_EQ(h1.sync.averaged, Averaged::kParameters);
}

TEST(PlanSync, ParameterServerPlanDescribesItsServers) {
  ParameterServerOptions o;
  o.servers = 2;
  o.dedicated = false;
  o.replicas_to_aggregate = 1;
  const Plan grads = BuildParameterServerPlan(Small(), {1, 2}, o);
  EXPECT_EQ(grads.strategy, Strategy::kParameterServer);
  EXPECT_EQ(grads.sync.averaged, Averaged::kGradients);
  EXPECT_EQ(grads.sync.servers.servers, 2);
  EXPECT_FALSE(grads.sync.servers.dedicated);
  EXPECT_FALSE(grads.sync.servers.asynchronous);
  EXPECT_EQ(grads.sync.servers.replicas_to_aggregate, 1);
  EXPECT_TRUE(grads.buckets.empty());

  o.push_parameters = true;
  EXPECT_EQ(BuildParameterServerPlan(Small(), {1, 2}, o).sync.averaged, Averaged::kParameters);
  // Local SGD over servers (H > 1) pushes parameters whatever the payload.
  o.push_parameters = false;
  o.averaging_period = 2;
  o.iterations = 2;
  const Plan local = BuildParameterServerPlan(Small(), {1, 2}, o);
  EXPECT_EQ(local.strategy, Strategy::kLocalSgd);
  EXPECT_EQ(local.sync.averaging_period, 2);
  EXPECT_EQ(local.sync.averaged, Averaged::kParameters);
}

TEST(PlanSync, StrategyNamesAreThoseReportsPrint) {
  EXPECT_STREQ(StrategyName(Strategy::kData), "data");
  EXPECT_STREQ(StrategyName(Strategy::kParameterServer), "parameter_server");
  EXPECT_STREQ(StrategyName(Strategy::kModel), "model");
  EXPECT_STREQ(StrategyName(Strategy::kHybrid), "hybrid");
  EXPECT_STREQ(StrategyName(Strategy::kChakra), "chakra");
  EXPECT_STREQ(AveragedName(Averaged::kGradients), "gradients");
  EXPECT_STREQ(AveragedName(Averaged::kParameters), "parameters");
}

}  // namespace
}  // namespace dtsim::plan
