#include "plan/expert_parallel.h"

#include <gtest/gtest.h>

#include <vector>

#include "models/zoo.h"
#include "plan/hybrid.h"

namespace dtsim::plan {
namespace {

// A 2-layer MoE transformer: S = 32, H = 64, F = 128, E = 8 experts, top-2,
// SwiGLU, no biases, fp32 (4 bytes). Routed rows R = k S = 64 a sample.
models::ModelGraph SmallMoe(double skew = 1) {
  models::TransformerConfig c;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.sequence = 32;
  c.vocab = 1000;
  c.ffn_hidden = 128;
  c.mlp = models::MlpKind::kSwiglu;
  c.bias = false;
  c.experts = 8;
  c.top_k = 2;
  c.expert_load_skew = skew;
  return models::BuildTransformer(c, "small-moe");
}

// factor = (skew + (E/ep - 1)(E - skew)/(E - 1)) / (E/ep).
TEST(ExpertParallel, LoadFactorOfTheBusiestRank) {
  EXPECT_DOUBLE_EQ(ExpertLoadFactor(1.0, 8, 4), 1.0);  // balanced
  EXPECT_DOUBLE_EQ(ExpertLoadFactor(3.0, 8, 1), 1.0);  // one rank holds every row
  EXPECT_DOUBLE_EQ(ExpertLoadFactor(3.0, 8, 8), 3.0);  // the busiest expert alone
  // E = 8, ep = 4: 2 experts a rank, the busiest at 2x, the other 7 share
  // 8 - 2 = 6 means: (2 + 6/7) / 2 = 10/7.
  EXPECT_DOUBLE_EQ(ExpertLoadFactor(2.0, 8, 4), 10.0 / 7.0);
}

// ep = 4 keeps 2 of the 8 experts: fc1 8 x 64 x 256 = 131,072 params ->
// 32,768; fc2 65,536 -> 16,384. Skew 2 multiplies the routed ops' FLOPs by
// 10/7 (above), not the router's.
TEST(ExpertParallel, ShardHoldsItsExpertsAndTheBusiestRanksRows) {
  const models::ModelGraph g = SmallMoe(2.0);
  const models::ModelGraph s = ExpertParallelShard(g, 4);
  const auto op = [&](const models::ModelGraph& x, const char* name) { return x.op(x.Find(name)); };
  EXPECT_EQ(op(s, "layer0.experts.fc1").params, 32'768);
  EXPECT_EQ(op(s, "layer0.experts.fc2").params, 16'384);
  EXPECT_EQ(op(s, "layer0.experts.fc1").attrs.expert_split, 4);
  EXPECT_DOUBLE_EQ(op(s, "layer0.experts.fc1").fwd_flops,
                   op(g, "layer0.experts.fc1").fwd_flops * 10 / 7);
  EXPECT_DOUBLE_EQ(op(s, "layer0.experts.silu").saved_elements_per_sample,
                   op(g, "layer0.experts.silu").saved_elements_per_sample * 10 / 7);
  EXPECT_DOUBLE_EQ(op(s, "layer0.mlp.router").fwd_flops, op(g, "layer0.mlp.router").fwd_flops);
  // Active parameters do not depend on the split.
  EXPECT_EQ(s.Totals().active_params, g.Totals().active_params);
}

struct Counted {
  int all_to_alls = 0;
  double all_to_all_bytes = 0;
  std::vector<std::vector<RankId>> all_to_all_groups;
  std::vector<double> all_reduce_bytes;
  std::vector<std::size_t> all_reduce_group_sizes;
};

Counted Count(const Plan& plan) {
  Counted c;
  for (const Collective& x : plan.collectives()) {
    if (x.op == CollectiveOp::kAllToAll) {
      ++c.all_to_alls;
      c.all_to_all_bytes = x.bytes;
      c.all_to_all_groups.push_back(plan.groups()[static_cast<std::size_t>(x.group)]);
    } else if (x.op == CollectiveOp::kAllReduce) {
      c.all_reduce_bytes.push_back(x.bytes);
      c.all_reduce_group_sizes.push_back(plan.groups()[static_cast<std::size_t>(x.group)].size());
    }
  }
  return c;
}

// 8 devices (2 nodes x 4), t = p = 1, d = 8, ep = 4, micro-batch 2, one
// micro-batch. Each MoE layer: 2 all-to-alls forward, 2 backward, each of
// R x H x 4 bytes x 2 samples = 64 x 64 x 4 x 2 = 32,768 bytes per rank,
// over ranks {0, 1, 2, 3} (an expert group: 4 consecutive replicas, one
// node). 2 layers: 8. Gradients: the experts' over the expert-data group
// {0, 4} (d / ep = 2), 2 layers x (32,768 + 16,384) params x 4 bytes =
// 393,216 bytes; the rest over all 8.
TEST(ExpertParallel, AllToAllVolumeAndGradientGroups) {
  const models::ModelGraph g = SmallMoe();
  HybridOptions o;
  o.expert = 4;
  o.micro_batch = 2;
  o.chunks = {{0, g.num_ops()}};
  const models::ModelGraph shard = ExpertParallelShard(g, 4);
  const Plan plan = BuildHybridPlan(shard, {2, 4}, o);
  const Counted c = Count(plan);
  EXPECT_EQ(c.all_to_alls, 8);
  EXPECT_DOUBLE_EQ(c.all_to_all_bytes, 32'768);
  for (const auto& group : c.all_to_all_groups) EXPECT_EQ(group, (std::vector<RankId>{0, 1, 2, 3}));
  ASSERT_EQ(c.all_reduce_bytes.size(), 2u);
  const double all_bytes = 4.0 * static_cast<double>(shard.Totals().params);
  EXPECT_DOUBLE_EQ(c.all_reduce_bytes[0], all_bytes - 393'216);
  EXPECT_EQ(c.all_reduce_group_sizes[0], 8u);
  EXPECT_DOUBLE_EQ(c.all_reduce_bytes[1], 393'216);
  EXPECT_EQ(c.all_reduce_group_sizes[1], 2u);
}

// Without expert parallelism: no all-to-all, one all-reduce of everything.
TEST(ExpertParallel, OneExpertGroupPerRankIsPlainDataParallelism) {
  const models::ModelGraph g = SmallMoe();
  HybridOptions o;
  o.chunks = {{0, g.num_ops()}};
  const Counted c = Count(BuildHybridPlan(g, {2, 4}, o));
  EXPECT_EQ(c.all_to_alls, 0);
  ASSERT_EQ(c.all_reduce_bytes.size(), 1u);
  EXPECT_DOUBLE_EQ(c.all_reduce_bytes[0], 4.0 * static_cast<double>(g.Totals().params));
}

// ep > 1 lays out data before pipeline: with p = 2 on 8 devices (d = 4),
// stage s holds ranks 4s .. 4s + 3.
TEST(ExpertParallel, ExpertGroupsSitOnConsecutiveDevices) {
  HybridOptions o;
  o.pipeline = 2;
  o.expert = 4;
  for (RankId r = 0; r < 8; ++r) EXPECT_EQ(HybridStageOfRank(o, 8, r), r / 4);
  o.expert = 1;  // the layout without experts: tensor, stage, replica
  for (RankId r = 0; r < 8; ++r) EXPECT_EQ(HybridStageOfRank(o, 8, r), r % 2);
}

}  // namespace
}  // namespace dtsim::plan
