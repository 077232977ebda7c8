#include "plan/context_parallel.h"

#include <gtest/gtest.h>

#include "models/zoo.h"
#include "plan/hybrid.h"
#include "plan/layers.h"

namespace dtsim::plan {
namespace {

using models::OpId;

// One decoder layer: hidden 256, 8 heads of D = 32, 2 key/value heads,
// sequence 1024, fused causal attention, bf16.
models::ModelGraph TinyDecoder(models::AttentionKind attention = models::AttentionKind::kFlash) {
  models::TransformerConfig c;
  c.layers = 1;
  c.hidden = 256;
  c.heads = 8;
  c.kv_heads = 2;
  c.sequence = 1024;
  c.vocab = 1000;
  c.attention = attention;
  models::ModelGraph g = models::BuildTransformer(c, "tiny");
  g.SetDType(models::DType::kBf16);
  return g;
}

OpId Find(const models::ModelGraph& g, const std::string& name) {
  for (OpId v = 0; v < g.num_ops(); ++v)
    if (g.op(v).name == name) return v;
  ADD_FAILURE() << "no op " << name;
  return 0;
}

TEST(ContextParallelTest, RingShardHoldsOneStepOfAttentionAndSOverCOfTheRest) {
  const models::ModelGraph g = TinyDecoder();
  const ContextParallel cp{4, ContextParallelKind::kRing};
  ASSERT_EQ(ContextParallelProblem(g, cp), "");
  const models::ModelGraph s = ContextParallelShard(g, cp);
  const OpId core = Find(g, "layer0.attn.core"), qkv = Find(g, "layer0.attn.qkv");
  // Shapes: 1024 / 4 = 256 positions; (A, S/c, D) = (8, 256, 32).
  EXPECT_EQ(s.op(0).output_shape, (models::Shape{256}));
  EXPECT_EQ(s.op(qkv).output_shape, (models::Shape{256, 256 + 2 * 2 * 32}));
  EXPECT_EQ(s.op(core).output_shape, (models::Shape{8, 256, 32}));
  EXPECT_EQ(s.op(core).input_shapes[1], (models::Shape{2, 256, 32}));
  // A dense layer's FLOPs and saved activations divide by c, its
  // parameters do not; one ring step is 1/c^2 of attention's FLOPs.
  EXPECT_DOUBLE_EQ(s.op(qkv).fwd_flops, g.op(qkv).fwd_flops / 4);
  EXPECT_DOUBLE_EQ(s.op(qkv).saved_elements_per_sample, g.op(qkv).saved_elements_per_sample / 4);
  EXPECT_EQ(s.op(qkv).params, g.op(qkv).params);
  EXPECT_DOUBLE_EQ(s.op(core).fwd_flops, g.op(core).fwd_flops / 16);
  EXPECT_DOUBLE_EQ(s.op(core).saved_elements_per_sample, g.op(core).saved_elements_per_sample / 4);
  // The loss is one value per sample on every rank.
  EXPECT_EQ(s.op(s.num_ops() - 1).output_shape, (models::Shape{1}));
  // A K/V block: k and v of 2 heads x 256 positions x 32, bf16:
  // 2 x 2 x 256 x 32 x 2 bytes = 65,536 bytes.
  EXPECT_DOUBLE_EQ(RingBlockBytes(s.op(core)), 65536.0);
}

TEST(ContextParallelTest, UlyssesShardSplitsHeadsOverTheWholeSequence) {
  const models::ModelGraph g = TinyDecoder();
  const ContextParallel cp{2, ContextParallelKind::kUlysses};
  ASSERT_EQ(ContextParallelProblem(g, cp), "");
  const models::ModelGraph s = ContextParallelShard(g, cp);
  const OpId core = Find(g, "layer0.attn.core"), q = Find(g, "layer0.attn.q");
  EXPECT_EQ(s.op(core).output_shape, (models::Shape{4, 1024, 32}));
  EXPECT_EQ(s.op(q).output_shape, (models::Shape{8, 512, 32}));
  EXPECT_DOUBLE_EQ(s.op(core).fwd_flops, g.op(core).fwd_flops / 2);
}

TEST(ContextParallelTest, RefusesWhatCannotBeSplit) {
  const models::ModelGraph g = TinyDecoder();
  // Ulysses over 4 ranks: the 2 key/value heads do not divide.
  EXPECT_NE(ContextParallelProblem(g, {4, ContextParallelKind::kUlysses}).find("whole heads"),
            std::string::npos);
  // Causal ring attention over 1024 ranks balances 2048 chunks, and the
  // sequence has 1024 positions.
  EXPECT_NE(ContextParallelProblem(g, {1024, ContextParallelKind::kRing}).find("2 x context_parallel"),
            std::string::npos);
  // Ring attention needs the fused kernel.
  EXPECT_NE(ContextParallelProblem(TinyDecoder(models::AttentionKind::kEager),
                                   {2, ContextParallelKind::kRing})
                .find("unfused"),
            std::string::npos);
  EXPECT_EQ(ContextParallelProblem(TinyDecoder(models::AttentionKind::kEager),
                                   {2, ContextParallelKind::kUlysses}),
            "");
  // A CNN has no sequence.
  EXPECT_NE(ContextParallelProblem(models::BuildZooModel("resnet50"), {2}), "");
}

// The one-chunk plan of `shard` on `devices` devices of one node, c = devices.
Plan OneStagePlan(const models::ModelGraph& shard, const ContextParallel& cp, int devices) {
  HybridOptions o;
  o.context = cp;
  o.chunks = {{0, shard.num_ops()}};
  return BuildHybridPlan(shard, {1, devices}, o);
}

// Ring over c = 4 (one micro-batch of one sample, one layer): forward 3
// block sends, backward 1 + 2 + 2 + 1 block-equivalents in 4 sends plus the
// last dK/dV: (c - 1) + c = 7 blocks; 4 attention steps each way.
TEST(ContextParallelTest, RingPlanSendsBlocksRoundTheGroup) {
  const ContextParallel cp{4, ContextParallelKind::kRing};
  const models::ModelGraph shard = ContextParallelShard(TinyDecoder(), cp);
  const Plan plan = OneStagePlan(shard, cp, 4);
  const OpId core = Find(shard, "layer0.attn.core");
  int fwd_steps = 0, bwd_steps = 0, sends = 0;
  double bytes = 0;
  for (const Task& t : plan.tasks()) {
    if (t.kind == TaskKind::kSend) {
      ++sends;
      bytes += t.bytes;
      EXPECT_EQ(t.peer, 1);  // rank 0's successor stands for every hop
      EXPECT_EQ(t.copies, 4);
    }
    if (t.op == static_cast<std::int32_t>(core) && t.op_count == 1)
      (t.kind == TaskKind::kForward ? fwd_steps : bwd_steps) += 1;
  }
  EXPECT_EQ(fwd_steps, 4);
  EXPECT_EQ(bwd_steps, 4);
  EXPECT_EQ(sends, 3 + 5);
  EXPECT_DOUBLE_EQ(bytes, (3 + 7) * 65536.0);
  // Data parallelism 1, but the gradients are all-reduced over the 4
  // context ranks, which hold the same parameters.
  ASSERT_FALSE(plan.collectives().empty());
  EXPECT_EQ(plan.groups()[static_cast<std::size_t>(plan.collectives().back().group)].size(), 4u);
}

// Ulysses' all-to-all volume over c = 2 (hand calculation, bf16):
//   before attention: q, k, v of S/c = 512 positions, (A + 2 G) D =
//     (8 + 2 x 2) x 32 = 384 values each: 512 x 384 x 2 = 393,216 bytes;
//   after: the output, A D = 256 values: 512 x 256 x 2 = 262,144 bytes.
// Forward and backward each run one of each.
TEST(ContextParallelTest, UlyssesAllToAllVolume) {
  const ContextParallel cp{2, ContextParallelKind::kUlysses};
  const models::ModelGraph shard = ContextParallelShard(TinyDecoder(), cp);
  const OpId core = Find(shard, "layer0.attn.core");
  const UlyssesBytes b = UlyssesAllToAllBytes(shard, core, core + 1);
  EXPECT_DOUBLE_EQ(b.before, 393216.0);
  EXPECT_DOUBLE_EQ(b.after, 262144.0);
  const Plan plan = OneStagePlan(shard, cp, 2);
  std::vector<double> volumes;
  for (const Collective& c : plan.collectives())
    if (c.op == CollectiveOp::kAllToAll) volumes.push_back(c.bytes);
  EXPECT_EQ(volumes, (std::vector<double>{393216.0, 262144.0, 262144.0, 393216.0}));
}

// c = 1 leaves the graph as it is.
TEST(ContextParallelTest, DegreeOneIsTheIdentity) {
  const models::ModelGraph g = TinyDecoder();
  const models::ModelGraph s = ContextParallelShard(g, {});
  for (OpId v = 0; v < g.num_ops(); ++v) {
    EXPECT_EQ(s.op(v).output_shape, g.op(v).output_shape);
    EXPECT_EQ(s.op(v).fwd_flops, g.op(v).fwd_flops);
  }
}

}  // namespace
}  // namespace dtsim::plan
