// Pricing from op-cost tables: the four rules of sim/cost/measured_costs.h
// against closed forms, the backward split, and the accounting a
// simulation reports.
#include "sim/cost/measured_costs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "config/scenario.h"
#include "models/graph_builder.h"
#include "sim/cost/cost_model.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

using models::OpKind;

// A dense layer 1024 -> `out` with bias.
models::Op DenseOp(std::int64_t out) {
  models::GraphBuilder g("m");
  const models::Tensor y = g.Dense("fc", g.Input("x", {1024}), {.out_features = out});
  return g.graph().op(y.op);
}

config::OpTiming Exactly(double s) { return config::OpTiming{s, s, s, 1}; }

config::OpCostEntry Entry(const models::Op& op, std::int64_t batch, double fwd_s, double bwd_s) {
  config::OpCostEntry e;
  e.signature = config::OpSignature(op);
  e.kind = op.kind;
  e.batch = batch;
  e.name = op.name;
  e.forward_flops = op.fwd_flops * static_cast<double>(batch);
  e.backward_flops = (op.bwd_input_flops + op.bwd_weight_flops) * static_cast<double>(batch);
  e.forward_bytes = op.FwdBytes(static_cast<double>(batch));
  e.backward_bytes = op.BwdBytes(static_cast<double>(batch));
  e.forward = Exactly(fwd_s);
  if (bwd_s > 0) e.backward = Exactly(bwd_s);
  return e;
}

TEST(MeasuredCosts, ExactBatchIsMeasured) {
  const models::Op op = DenseOp(512);
  config::OpCostTable t;
  t.entries = {Entry(op, 32, 1e-3, 2e-3)};
  const MeasuredCosts m(t);
  const auto f = m.Seconds(op, MeasuredPass::kForward, 32);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->source, CostSource::kMeasured);
  EXPECT_DOUBLE_EQ(f->seconds, 1e-3);
  EXPECT_DOUBLE_EQ(m.Seconds(op, MeasuredPass::kBackward, 32)->seconds, 2e-3);
}

TEST(MeasuredCosts, BatchInterpolationReproducesALine) {
  // Closed form: t(b) = a + c b, measured at b = 8 and 32. Interpolation
  // (b = 16) and extrapolation (b = 4, 128) along the line give it back.
  const double a = 2e-4, c = 3e-5;
  auto t = [&](double b) { return a + c * b; };
  const models::Op op = DenseOp(512);
  config::OpCostTable table;
  table.entries = {Entry(op, 8, t(8), 0), Entry(op, 32, t(32), 0)};
  const MeasuredCosts m(table);
  for (std::int64_t b : {4, 16, 20, 128}) {
    const auto x = m.Seconds(op, MeasuredPass::kForward, b);
    ASSERT_TRUE(x.has_value());
    EXPECT_EQ(x->source, CostSource::kInterpolated);
    EXPECT_NEAR(x->seconds, t(static_cast<double>(b)), 1e-15) << b;
  }
}

TEST(MeasuredCosts, OneBatchScalesPerSample) {
  // One measured batch: the same time per sample (1 ms at 32 -> 2 ms at 64).
  const models::Op op = DenseOp(512);
  config::OpCostTable table;
  table.entries = {Entry(op, 32, 1e-3, 0)};
  EXPECT_DOUBLE_EQ(MeasuredCosts(table).Seconds(op, MeasuredPass::kForward, 64)->seconds, 2e-3);
}

TEST(MeasuredCosts, KindInterpolationFollowsTheRateInLogWork) {
  // Closed form: two dense layers of other widths run at rates r1, r2; an
  // unmeasured width whose FLOPs lie between them gets the rate linear in
  // log2(FLOPs), and beyond them the end rates.
  const models::Op small = DenseOp(256), large = DenseOp(4096), mid = DenseOp(1024);
  const double r1 = 10e9, r2 = 40e9;
  const std::int64_t b = 32;
  const double w1 = small.fwd_flops * b, w2 = large.fwd_flops * b, w = mid.fwd_flops * b;
  config::OpCostTable table;
  table.entries = {Entry(small, b, w1 / r1, 0), Entry(large, b, w2 / r2, 0)};
  const MeasuredCosts m(table);
  const double f = (std::log2(w) - std::log2(w1)) / (std::log2(w2) - std::log2(w1));
  const auto x = m.Seconds(mid, MeasuredPass::kForward, b);
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(x->source, CostSource::kInterpolated);
  EXPECT_NEAR(x->seconds, w / (r1 + f * (r2 - r1)), 1e-15);
  // Beyond the largest: its rate.
  const models::Op huge = DenseOp(16384);
  EXPECT_NEAR(m.Seconds(huge, MeasuredPass::kForward, b)->seconds, huge.fwd_flops * b / r2, 1e-12);
  // Another kind: nothing (the caller's model prices it).
  models::Op relu;
  relu.kind = OpKind::kRelu;
  relu.input_shapes = {{1024}};
  relu.output_shape = {1024};
  relu.fwd_flops = 1024;
  EXPECT_FALSE(m.Seconds(relu, MeasuredPass::kForward, b).has_value());
  // The backward was not measured: nothing for it either.
  EXPECT_FALSE(m.Seconds(mid, MeasuredPass::kBackward, b).has_value());
}

TEST(MeasuredCosts, RandomLinesInterpolateExactly) {
  // Property: for random lines t(b) = a + c b measured at two random
  // batches, every batch between them is priced on the line.
  std::mt19937_64 rng(11);
  const models::Op op = DenseOp(512);
  for (int i = 0; i < 200; ++i) {
    const double a = std::uniform_real_distribution<double>(0, 1e-3)(rng);
    const double c = std::uniform_real_distribution<double>(1e-7, 1e-4)(rng);
    const std::int64_t b0 = std::uniform_int_distribution<std::int64_t>(1, 64)(rng);
    const std::int64_t b1 = b0 + std::uniform_int_distribution<std::int64_t>(1, 64)(rng);
    config::OpCostTable table;
    table.entries = {Entry(op, b0, a + c * b0, 0), Entry(op, b1, a + c * b1, 0)};
    const MeasuredCosts m(table);
    const std::int64_t b = std::uniform_int_distribution<std::int64_t>(b0, b1)(rng);
    EXPECT_NEAR(m.Seconds(op, MeasuredPass::kForward, b)->seconds, a + c * b, 1e-12);
  }
}

hw::DeviceSpec Device() {
  hw::DeviceSpec d;
  d.name = "test";
  d.fp32_flop_per_s = 1e12;
  d.memory_bytes = 16e9;
  d.memory_bw_bytes_per_s = 100e9;
  return d;
}

TEST(MeasuredCosts, CostModelSplitsTheBackwardAsTheFallbackDoes) {
  const models::Op op = DenseOp(512);
  config::OpCostTable table;
  table.entries = {Entry(op, 32, 1e-3, 3e-3)};
  CostModelOptions plain;
  plain.kernel_model = false;
  const CostModel model(Device(), hw::Precision::kFp32, plain);
  CostModelOptions o = plain;
  o.measured = std::make_shared<MeasuredCosts>(table);
  const CostModel cm(Device(), hw::Precision::kFp32, o);
  CostSource src;
  const double in = model.ComputeSeconds(op, plan::TaskKind::kBackwardInput, 32);
  const double w = model.ComputeSeconds(op, plan::TaskKind::kBackwardWeight, 32);
  EXPECT_NEAR(cm.ComputeTime(op, plan::TaskKind::kBackwardInput, 32, &src).Total(),
              3e-3 * in / (in + w), 1e-15);
  EXPECT_EQ(src, CostSource::kMeasured);
  // The two parts add up to the measured backward.
  EXPECT_NEAR(cm.ComputeSeconds(op, plan::TaskKind::kBackwardInput, 32) +
                  cm.ComputeSeconds(op, plan::TaskKind::kBackwardWeight, 32),
              3e-3, 1e-15);
  // Nothing measured for this op's kind: the fallback's own time.
  models::Op relu;
  relu.kind = OpKind::kRelu;
  relu.input_shapes = {{1024}};
  relu.output_shape = {1024};
  relu.read_elements_per_sample = relu.written_elements_per_sample = 1024;
  EXPECT_DOUBLE_EQ(cm.ComputeTime(relu, plan::TaskKind::kForward, 32, &src).Total(),
                   model.ComputeSeconds(relu, plan::TaskKind::kForward, 32));
  EXPECT_EQ(src, CostSource::kModelled);
}

TEST(MeasuredCosts, SimulationReportsWhatWasMeasured) {
  // The CIFAR-10 CNN on the CPU: a table holding only its convolutions
  // prices them; the rest is modelled, and the shares add up to the priced
  // compute.
  config::Scenario s;
  s.workload.model.zoo_name = "cifar10-cnn";
  s.cluster.device = "cpu-host";
  s.cluster.nodes = 1;
  s.cluster.devices_per_node = 1;
  s.workload.batch_per_device = 32;
  s.workload.iterations = 2;
  s.outputs.trace = false;
  const models::ModelGraph graph = config::BuildWorkloadModel(s);
  auto table = std::make_shared<config::OpCostTable>();
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    if (graph.op(v).kind != OpKind::kConv2d) continue;
    table->entries.push_back(Entry(graph.op(v), 32, 0.01, 0.02));
    // As dtsim profile records it: conv1 computes no input gradient.
    table->entries.back().backward_input = !graph.ReadsOnlyGraphInputs(v);
  }
  ASSERT_EQ(table->entries.size(), 2u);  // conv1 and conv2
  s.workload.cost_model = config::CostModelKind::kMeasured;
  s.workload.cost_table = "table.json";
  s.workload.cost_table_data = table;
  const Prediction p = Simulate(s);
  const double measured = p.costs.priced_by_source_s[0], interpolated = p.costs.priced_by_source_s[1],
               modelled = p.costs.priced_by_source_s[2];
  // Each priced iteration holds two convolutions at 10 ms forward + 20 ms
  // backward (the plan may price fewer iterations than it simulates).
  const double per_iteration = 2 * 0.03;
  EXPECT_GE(measured, per_iteration - 1e-9);
  EXPECT_NEAR(std::remainder(measured, per_iteration), 0, 1e-9);
  EXPECT_EQ(interpolated, 0);
  EXPECT_GT(modelled, 0);
  // Every op but the convolutions (and the free input) is listed as modelled.
  for (std::int32_t v : p.costs.modelled_ops) EXPECT_NE(graph.op(v).kind, OpKind::kConv2d);
  EXPECT_FALSE(p.costs.modelled_ops.empty());
}

}  // namespace
}  // namespace dtsim::sim
