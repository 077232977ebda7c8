// Expert- and context-parallel plans built with every rank materialized
// (the plans the SimGrid engine and stragglers run): each expert group's
// all-to-alls and each context group's ring sends or Ulysses all-to-alls
// run over the group's real members. On the analytic engine they give the
// figures of the symmetric plan, and on SimGrid, where nothing contends,
// the analytic step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "plan/plan.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

// A small Llama-style decoder on `nodes` x `per_node` H100s (NVSwitch inside
// a node, one 400 Gb/s NDR NIC per GPU), bf16, 2 iterations: `layers`
// layers of hidden 256, 8 heads (4 key/value heads), sequence `sequence`,
// flash attention; `experts` > 0 makes every MLP `experts` routed experts
// of width 512, top-2.
config::Scenario SmallDecoder(int nodes, int per_node, int layers, int sequence, int experts) {
  config::Scenario s;
  s.name = "test";
  s.cluster.nodes = nodes;
  s.cluster.devices_per_node = per_node;
  s.cluster.device = "H100-SXM";
  s.cluster.intra_node_link = "nvswitch-h100";
  s.cluster.network.link = "ib-ndr";
  s.cluster.network.nics_per_node = per_node;
  models::TransformerConfig c;
  c.layers = layers;
  c.hidden = 256;
  c.heads = 8;
  c.kv_heads = 4;
  c.ffn_hidden = 512;
  c.vocab = 1024;
  c.sequence = sequence;
  c.tied_embeddings = false;
  c.mlp = models::MlpKind::kSwiglu;
  c.norm = models::NormKind::kRmsNorm;
  c.positions = models::PositionKind::kRotary;
  c.bias = false;
  c.dropout = false;
  c.attention = models::AttentionKind::kFlash;
  c.experts = experts;
  c.top_k = 2;
  c.expert_ffn_hidden = 512;
  s.workload.model.transformer = c;
  s.workload.precision = hw::Precision::kBf16;
  s.workload.iterations = 2;
  s.parallelism.strategy = config::Strategy::kHybrid;
  s.parallelism.hybrid.even_layers = true;
  return s;
}

// Relative difference, 0 when both are 0.
double Rel(double a, double b) {
  const double scale = std::max(std::abs(a), std::abs(b));
  return scale == 0 ? 0 : std::abs(a - b) / scale;
}

// The symmetric and the every-rank plan of `s` on the analytic engine give
// the same step, breakdown and traffic (1e-9 relative: the rounding of
// summed seconds), and the every-rank plan materializes every device.
void ExpectSameFigures(const config::Scenario& s, const std::string& what) {
  SimulateOptions all;
  all.materialize_all = true;
  const Prediction a = Simulate(s);
  const Prediction b = Simulate(s, all);
  EXPECT_EQ(b.layout.materialized_workers, s.cluster.num_devices()) << what;
  EXPECT_LT(Rel(a.metrics.step_time_s, b.metrics.step_time_s), 1e-9) << what;
  EXPECT_LT(Rel(a.metrics.breakdown.compute_s, b.metrics.breakdown.compute_s), 1e-9) << what;
  EXPECT_LT(Rel(a.metrics.breakdown.exposed_comm_s, b.metrics.breakdown.exposed_comm_s), 1e-9)
      << what;
  EXPECT_LT(Rel(a.comm.network_bytes_per_sample, b.comm.network_bytes_per_sample), 1e-9) << what;
}

// Property (fast path equals slow path): for random small expert-parallel
// layouts (ep, p, d / ep, schedule, micro-batches, on one node or with an
// expert group per node), the symmetric plan (one rank per stage standing
// for its expert group's all-to-alls, copies counted over the groups) and
// the plan with every rank materialized (each all-to-all with a member task
// per rank of its group) give the same figures on the analytic engine: the
// members are identical, so each all-to-all starts when the one
// representative is ready, and the engine prices it over the whole group
// either way.
TEST(EpCpMaterialization, ExpertParallelEveryRankGivesTheSymmetricFigures) {
  std::mt19937 rng(35);  // fixed seed: the same layouts every run
  const auto pick = [&rng](std::initializer_list<int> xs) {
    std::uniform_int_distribution<std::size_t> u(0, xs.size() - 1);
    return *(xs.begin() + u(rng));
  };
  for (int trial = 0; trial < 8; ++trial) {
    const int ep = pick({2, 4}), p = pick({1, 2}), groups = pick({1, 2});
    const int d = ep * groups, devices = d * p;
    // One node, or (p = 1) one expert group per node. Across nodes a stage
    // boundary has the ep ranks of a group send at once over their node's
    // link, which the analytic engine queues first come, first served
    // where the symmetric plan prices one transfer alone (the difference
    // hybrid_materialization_test's PipelineTransfersOfATensorGroupShareTheNic
    // shows for tensor groups; 5e-4 of the step at ep 4, p 2 on two nodes).
    const int per_node = p == 1 && pick({0, 1}) == 1 ? ep : devices;
    config::Scenario s = SmallDecoder(devices / per_node, per_node, 2 * p, 128, 4);
    config::HybridConfig& h = s.parallelism.hybrid;
    h.expert_parallel = ep;
    h.pipeline_parallel = p;
    h.micro_batch_size = 1;
    const int m = p * pick({1, 2});
    h.global_batch = d * m;
    h.schedule = pick({0, 1}) == 0 ? config::PipelineSchedule::kGpipe
                                   : config::PipelineSchedule::kOneFOneB;
    ExpectSameFigures(s, "ep " + std::to_string(ep) + " p " + std::to_string(p) + " d " +
                             std::to_string(d) + " m " + std::to_string(m) + " per node " +
                             std::to_string(per_node));
  }
}

// The same for context parallelism, ring and Ulysses, with tensor
// parallelism 1 or 2, on one node: every member of a context group runs its
// ring steps on the block its predecessor sent (or joins the group's
// all-to-all), which on identical members is the timing of the one member
// sending to its successor that the symmetric plan emits.
TEST(EpCpMaterialization, ContextParallelEveryRankGivesTheSymmetricFigures) {
  std::mt19937 rng(36);  // fixed seed: the same layouts every run
  const auto pick = [&rng](std::initializer_list<int> xs) {
    std::uniform_int_distribution<std::size_t> u(0, xs.size() - 1);
    return *(xs.begin() + u(rng));
  };
  for (int trial = 0; trial < 8; ++trial) {
    const int cp = pick({2, 4}), t = pick({1, 2}), p = pick({1, 2}), d = pick({1, 2});
    const int devices = cp * t * p * d;
    config::Scenario s = SmallDecoder(1, devices, 2 * p, 512, 0);
    config::HybridConfig& h = s.parallelism.hybrid;
    h.context_parallel = cp;
    h.context_parallel_kind =
        pick({0, 1}) == 0 ? plan::ContextParallelKind::kRing : plan::ContextParallelKind::kUlysses;
    h.tensor_parallel = t;
    h.pipeline_parallel = p;
    h.micro_batch_size = 1;
    h.global_batch = d * p * pick({1, 2});
    ExpectSameFigures(s, "cp " + std::to_string(cp) + " " +
                             plan::ContextParallelKindName(h.context_parallel_kind) + " t " +
                             std::to_string(t) + " p " + std::to_string(p) + " d " +
                             std::to_string(d));
  }
}

// Each expert all-to-all of the every-rank plan has a member task per rank
// of its expert group, in group order: `ep` consecutive ranks.
TEST(EpCpMaterialization, ExpertAllToAllsSpanTheirWholeGroup) {
  config::Scenario s = SmallDecoder(1, 8, 2, 128, 4);
  s.parallelism.hybrid.expert_parallel = 4;
  s.parallelism.hybrid.global_batch = 8;
  SimulateOptions all;
  all.materialize_all = true;
  const Prediction x = Simulate(s, all);
  int all_to_alls = 0;
  for (const plan::Collective& c : x.plan.collectives()) {
    const auto& group = x.plan.groups()[static_cast<std::size_t>(c.group)];
    ASSERT_EQ(c.tasks.size(), group.size());
    for (std::size_t i = 0; i < group.size(); ++i)
      EXPECT_EQ(x.plan.task(c.tasks[i]).rank, group[i]);
    if (c.op != plan::CollectiveOp::kAllToAll) continue;
    ++all_to_alls;
    ASSERT_EQ(group.size(), 4u);
    EXPECT_EQ(group[0] % 4, 0);
    EXPECT_EQ(group[3] - group[0], 3);
    EXPECT_EQ(c.copies, 1);
  }
  // 2 MoE layers x 1 micro-batch (global batch 8 over d = 8 replicas) x 4
  // all-to-alls (dispatch and return, forward and backward) x 2 iterations
  // x 2 expert groups (d / ep).
  EXPECT_EQ(all_to_alls, 2 * 1 * 4 * 2 * 2);
}

// A slow rank of an expert group holds up the group: its all-to-alls wait
// for it (analytic engine; stragglers materialize every rank).
TEST(EpCpMaterialization, AStragglerSlowsItsExpertGroup) {
  config::Scenario s = SmallDecoder(1, 4, 2, 128, 4);
  s.parallelism.hybrid.expert_parallel = 4;
  s.parallelism.hybrid.global_batch = 4;
  const Prediction alone = Simulate(s);
  config::Scenario slow = s;
  slow.stragglers.slow_devices.push_back({{1}, 2.0});
  const Prediction x = Simulate(slow);
  ASSERT_EQ(x.layout.materialized_workers, 4);
  EXPECT_GT(x.metrics.step_time_s, 1.5 * alone.metrics.step_time_s);
}

// Where nothing contends (one node: each GPU its own NVSwitch port), the
// SimGrid engine runs the every-rank expert- and context-parallel plans
// within 5% of the analytic step (the target of docs/architecture.md).
TEST(EpCpMaterialization, SimgridAgreesWithAnalyticWhereNothingContends) {
  config::Scenario ep = SmallDecoder(1, 4, 2, 128, 4);
  ep.parallelism.hybrid.expert_parallel = 4;
  ep.parallelism.hybrid.global_batch = 8;
  config::Scenario ring = SmallDecoder(1, 4, 2, 512, 0);
  ring.parallelism.hybrid.context_parallel = 4;
  ring.parallelism.hybrid.global_batch = 2;
  config::Scenario ulysses = ring;
  ulysses.parallelism.hybrid.context_parallel_kind = plan::ContextParallelKind::kUlysses;
  for (const config::Scenario* s : {&ep, &ring, &ulysses}) {
    config::Scenario sg = *s;
    sg.engine = "simgrid";
    const Prediction x = Simulate(sg);
    EXPECT_EQ(x.layout.materialized_workers, 4);
    EXPECT_NEAR(x.metrics.step_time_s / Simulate(*s).metrics.step_time_s, 1.0, 0.05);
  }
}

}  // namespace
}  // namespace dtsim::sim
