// Op profiling on the CPU backend: one entry per distinct op, every call
// counted, and a table that prices every op of the model it profiled.
#include "exec/calibrate/op_profile.h"

#include <gtest/gtest.h>

#include <set>

#include "exec/kernels/cpu_isa.h"
#include "models/zoo.h"
#include "sim/cost/measured_costs.h"

namespace dtsim::exec {
namespace {

TEST(OpProfile, EveryOpOfTheModelIsTimedAndPriced) {
  const models::ModelGraph graph = models::BuildZooModel("cifar10-cnn");
  const std::unique_ptr<Backend> cpu = MakeCpuBackend(CpuIsa::kPortable);
  OpProfileOptions o;
  o.batch = 4;
  o.warmup_steps = 1;
  o.timed_steps = 2;
  int steps = 0;
  const OpProfile p = ProfileOps(graph, *cpu, o, [&](int step, int total, double s) {
    EXPECT_EQ(step, ++steps);
    EXPECT_EQ(total, 3);
    EXPECT_GT(s, 0);
  });
  EXPECT_EQ(steps, 3);
  std::set<std::string> signatures;
  int ops = 0;
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    if (graph.op(v).kind == models::OpKind::kInput) continue;
    signatures.insert(config::OpSignature(graph.op(v)));
    ++ops;
  }
  ASSERT_EQ(p.entries.size(), signatures.size());
  int occurrences = 0;
  for (const config::OpCostEntry& e : p.entries) {
    occurrences += e.occurrences;
    // Each occurrence is timed once per timed step.
    EXPECT_EQ(e.forward->runs, e.occurrences * o.timed_steps) << e.name;
    EXPECT_EQ(e.backward->runs, e.occurrences * o.timed_steps) << e.name;
    EXPECT_EQ(e.batch, 4);
  }
  EXPECT_EQ(occurrences, ops);
  // conv1 reads the images: its backward computes no input gradient.
  EXPECT_EQ(p.entries.front().name, "conv1");
  EXPECT_FALSE(p.entries.front().backward_input);
  EXPECT_EQ(p.optimizer.params, graph.Totals().params);
  EXPECT_GT(p.step_s, 0);

  config::OpCostTable table;
  table.entries = p.entries;
  table.optimizer = p.optimizer;
  const sim::MeasuredCosts m(config::ParseOpCostTable(config::OpCostTableJson(table), "t.json"));
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    if (graph.op(v).kind == models::OpKind::kInput) continue;
    const auto t = m.Seconds(graph.op(v), sim::MeasuredPass::kForward, 4);
    ASSERT_TRUE(t.has_value()) << graph.op(v).name;
    EXPECT_EQ(t->source, sim::CostSource::kMeasured);
  }
  EXPECT_TRUE(m.OptimizerSecondsPerParam().has_value());
}

}  // namespace
}  // namespace dtsim::exec
