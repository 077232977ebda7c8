#include "sim/memory.h"

#include <gtest/gtest.h>

#include <numeric>

#include "common/error.h"
#include "models/zoo.h"

namespace dtsim::sim {
namespace {

using config::OptimizerKind;
using config::PipelineSchedule;
using models::ModelGraph;
using models::OpId;

std::vector<OpId> AllOps(const ModelGraph& g) {
  std::vector<OpId> ops(g.num_ops());
  std::iota(ops.begin(), ops.end(), OpId{0});
  return ops;
}

// Ops whose name starts with `prefix`.
std::vector<OpId> OpsNamed(const ModelGraph& g, const std::string& prefix) {
  std::vector<OpId> ops;
  for (OpId id = 0; id < g.num_ops(); ++id) {
    if (g.op(id).name.rfind(prefix, 0) == 0) ops.push_back(id);
  }
  return ops;
}

ModelGraph Gpt2Fp16() {
  ModelGraph g = models::BuildZooModel("gpt2");
  g.SetDType(models::DType::kFp16);
  return g;
}

// GPT-2 124M: L = 12 layers, S = 1024, H = 768, A = 12 heads, V = 50257.
constexpr double kL = 12, kS = 1024, kH = 768, kA = 12, kV = 50257;
constexpr double kGpt2Params = 124439808;
// Saved elements per sample of one block (models/transformer_blocks.cc):
//   attn.ln SH+2S, qkv SH, scores 2SH, softmax AS^2, probs_dropout AS^2,
//   context AS^2+SH, proj SH, attn.dropout SH, mlp.ln SH+2S, fc1 SH,
//   gelu 4SH, fc2 4SH, mlp.dropout SH
//   = 18 SH + 3 AS^2 + 4S = 51,908,608.
constexpr double kBlockElements = 18 * kS * kH + 3 * kA * kS * kS + 4 * kS;

MemoryInputs Gpt2Inputs(const ModelGraph& g) {
  MemoryInputs in;
  in.graph = &g;
  in.ops = AllOps(g);
  in.optimizer = OptimizerKind::kAdam;
  in.mixed_precision = true;
  in.micro_batch_size = 1;
  in.micro_batches_in_flight = 1;
  return in;
}

TEST(DeviceMemory, Gpt2AdamMixedPrecisionIs16BytesPerParameter) {
  const ModelGraph g = Gpt2Fp16();
  ASSERT_EQ(g.Totals().params, 124439808);
  const MemoryBreakdown m = DeviceMemory(Gpt2Inputs(g));
  // ZeRO §3.1: fp16 params 2 + fp16 grads 2 + fp32 master, momentum and
  // variance 4 + 4 + 4 = 16 bytes per parameter:
  //   params     2 x 124,439,808 =   248,879,616 B
  //   grads      2 x 124,439,808 =   248,879,616 B
  //   optimizer 12 x 124,439,808 = 1,493,277,696 B
  //   static    16 x 124,439,808 = 1,991,036,928 B = 1.99 GB (1.85 GiB)
  EXPECT_DOUBLE_EQ(m.params_bytes, 248879616.0);
  EXPECT_DOUBLE_EQ(m.grads_bytes, 248879616.0);
  EXPECT_DOUBLE_EQ(m.optimizer_bytes, 1493277696.0);
  EXPECT_DOUBLE_EQ(m.StaticBytes(), 16 * kGpt2Params);
  EXPECT_DOUBLE_EQ(m.StaticBytes(), 1991036928.0);
  // Activations of one sample, fp16 (2 bytes per element):
  //   L blocks + embed (ids S, dropout SH) + final_ln (SH+2S)
  //   + lm_head (its input SH) + loss (probabilities SV)
  //   = 12 x 51,908,608 + 1,024 + 786,432 + 788,480 + 786,432 + 51,463,168
  //   = 676,728,832 elements = 1,353,457,664 B (1.35 GB),
  // plus 2 bytes more per probability, which the loss keeps in fp32:
  //   51,463,168 x 2 = 102,926,336 B, 1,456,384,000 B in all.
  const double elements =
      kL * kBlockElements + kS + kS * kH + (kS * kH + 2 * kS) + kS * kH + kS * kV;
  EXPECT_DOUBLE_EQ(elements, 676728832.0);
  EXPECT_DOUBLE_EQ(m.activations_bytes, 2 * elements + 2 * kS * kV);
  EXPECT_DOUBLE_EQ(m.activations_bytes, 1456384000.0);
  EXPECT_DOUBLE_EQ(m.workspace_bytes, 0.0);
  EXPECT_DOUBLE_EQ(m.Total(), 1991036928.0 + 1456384000.0);
}

TEST(DeviceMemory, Fp32OptimizersHaveNoMasterCopy) {
  ModelGraph g = models::BuildZooModel("gpt2");  // fp32
  MemoryInputs in = Gpt2Inputs(g);
  in.mixed_precision = false;
  // fp32: 4 + 4 bytes, then 4 per optimizer buffer: Adam 2, momentum 1, SGD 0.
  for (const auto& [optimizer, state] : {std::pair{OptimizerKind::kAdam, 8.0},
                                         {OptimizerKind::kMomentum, 4.0},
                                         {OptimizerKind::kSgd, 0.0}}) {
    in.optimizer = optimizer;
    const MemoryBreakdown m = DeviceMemory(in);
    EXPECT_DOUBLE_EQ(m.params_bytes, 4 * kGpt2Params);
    EXPECT_DOUBLE_EQ(m.grads_bytes, 4 * kGpt2Params);
    EXPECT_DOUBLE_EQ(m.optimizer_bytes, state * kGpt2Params);
  }
  // Mixed-precision SGD still keeps the fp32 master copy: 2 + 2 + 4.
  const ModelGraph half = Gpt2Fp16();
  MemoryInputs mixed = Gpt2Inputs(half);
  mixed.optimizer = OptimizerKind::kSgd;
  EXPECT_DOUBLE_EQ(DeviceMemory(mixed).StaticBytes(), 8 * kGpt2Params);
}

TEST(DeviceMemory, ZeroStagesShardTheirTermsOverDataParallelReplicas) {
  const ModelGraph g = Gpt2Fp16();
  MemoryInputs in = Gpt2Inputs(g);
  in.data_parallel = 8;
  const MemoryBreakdown none = DeviceMemory(in);  // stage 0: d has no effect
  EXPECT_DOUBLE_EQ(none.StaticBytes(), 1991036928.0);

  in.zero_stage = 1;  // optimizer 1,493,277,696 / 8 = 186,659,712
  MemoryBreakdown m = DeviceMemory(in);
  EXPECT_DOUBLE_EQ(m.optimizer_bytes, 186659712.0);
  EXPECT_DOUBLE_EQ(m.grads_bytes, none.grads_bytes);
  EXPECT_DOUBLE_EQ(m.params_bytes, none.params_bytes);

  in.zero_stage = 2;  // + grads 248,879,616 / 8 = 31,109,952
  m = DeviceMemory(in);
  EXPECT_DOUBLE_EQ(m.optimizer_bytes, 186659712.0);
  EXPECT_DOUBLE_EQ(m.grads_bytes, 31109952.0);
  EXPECT_DOUBLE_EQ(m.params_bytes, none.params_bytes);

  in.zero_stage = 3;  // + params / 8: 16 x 124,439,808 / 8 = 248,879,616
  m = DeviceMemory(in);
  EXPECT_DOUBLE_EQ(m.params_bytes, 31109952.0);
  EXPECT_DOUBLE_EQ(m.StaticBytes(), 248879616.0);
  // ZeRO does not touch activations.
  EXPECT_DOUBLE_EQ(m.activations_bytes, none.activations_bytes);
}

// A 2-layer transformer small enough to count by hand:
// H = 8, A = 2, S = 4, V = 16, F = 4H = 32, tied LM head.
ModelGraph TinyTransformer() {
  models::TransformerConfig c;
  c.layers = 2;
  c.hidden = 8;
  c.heads = 2;
  c.sequence = 4;
  c.vocab = 16;
  ModelGraph g = models::BuildTransformer(c, "tiny");
  return g;  // fp32
}

TEST(DeviceMemory, TensorParallelHalvesTheSplitOpsParameters) {
  const ModelGraph g = TinyTransformer();
  // Split (Megatron): embed.tokens V H = 128; per layer qkv H 3H + 3H = 216,
  //   proj H H + H = 72, fc1 H 4H + 4H = 288, fc2 4H H + H = 264 (840).
  // Replicated: embed.positions S H = 32; per layer two LNs 2 x 2H = 32;
  //   final_ln 2H = 16. The tied lm_head has none.
  // Total 128 + 32 + 2 (840 + 32) + 16 = 1,920;
  // t = 2: (128 + 1,680) / 2 + (32 + 64 + 16) = 904 + 112 = 1,016.
  ASSERT_EQ(g.Totals().params, 1920);
  MemoryInputs in;
  in.graph = &g;
  in.ops = AllOps(g);
  in.optimizer = OptimizerKind::kSgd;
  in.mixed_precision = false;
  EXPECT_DOUBLE_EQ(DeviceMemory(in).params_bytes, 4 * 1920.0);
  in.tensor_parallel = 2;
  const MemoryBreakdown m = DeviceMemory(in);
  EXPECT_DOUBLE_EQ(m.params_bytes, 4 * 1016.0);
  EXPECT_DOUBLE_EQ(m.grads_bytes, 4 * 1016.0);
  EXPECT_DOUBLE_EQ(m.optimizer_bytes, 0.0);
}

TEST(DeviceMemory, TensorParallelActivationsFollowKorthikanti) {
  const ModelGraph g = TinyTransformer();
  // Per block (S H = 32, A S^2 = 32, S = 4), Korthikanti et al. 2022 Eq. 2
  // in elements: replicated LN inputs 2 (SH + 2S), dropout masks 2 SH,
  // qkv/fc1 inputs 2 SH = 6 SH + 4S = 208; split 2SH (scores) + 3 AS^2 +
  // SH (context) + SH (proj) + 4SH (gelu) + 4SH (fc2) = 12 SH + 3 AS^2 = 480.
  // Outside the blocks: token ids S = 4 and embed.dropout SH = 32
  // (replicated), final_ln SH + 2S = 40, lm_head input SH = 32 (replicated,
  // column parallel), loss S V = 64 (split).
  //   t = 1: 4 + 32 + 2 (208 + 480) + 40 + 32 + 64 = 1,548 elements
  //   t = 2: 4 + 32 + 2 (208 + 240) + 40 + 32 + 32 = 1,036 elements
  MemoryInputs in;
  in.graph = &g;
  in.ops = AllOps(g);
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 4 * 1548.0);
  in.tensor_parallel = 2;
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 4 * 1036.0);
}

// Issue 13, item 3, on the same tiny GPT as above (elements, fp32).
// Sequence parallelism (Korthikanti et al. 2022, §4.2.2, Table 2: 34/t
// instead of 10 + 24/t) divides by t everything a block keeps, the
// replicated 208 as well as the split 480: 688 / 2 = 344 per block; outside
// the blocks embed.dropout (32) and final_ln (40) are in the region, the LM
// head keeps its input sharded (32), the loss is split (64), only the token
// ids (4) stay whole:
//   t = 2: 4 + 16 + 2 x 344 + 20 + 16 + 32 = 776 elements.
// Selective recomputation (§5) drops attention's s x s tensors, the 3 A S^2
// = 96 of each block (softmax output, dropout mask, the probabilities the
// context matmul keeps), and holds one block's 96 again while it recomputes:
//   t = 1: 4 + 32 + 2 x (688 - 96) + 40 + 32 + 64 + 96 = 1,452 elements;
//   both, t = 2: 4 + 16 + 2 x 296 + 20 + 16 + 32 + 96 / 2 = 728 elements
// (Table 2's 34 sbh / t: the 5as/h term gone).
TEST(DeviceMemory, SequenceParallelismAndSelectiveRecomputationFollowKorthikanti) {
  const ModelGraph g = TinyTransformer();
  MemoryInputs in;
  in.graph = &g;
  in.ops = AllOps(g);
  in.tensor_parallel = 2;
  in.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 4 * 776.0);
  in.tensor_parallel = 1;
  in.sequence_parallel = false;
  in.recompute_selective = true;
  const MemoryBreakdown sel = DeviceMemory(in);
  EXPECT_DOUBLE_EQ(sel.activations_bytes, 4 * 1452.0);
  EXPECT_DOUBLE_EQ(sel.recompute_bytes, 4 * 96.0);
  in.tensor_parallel = 2;
  in.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 4 * 728.0);
}

// PipeDream-2BW double-buffers the weights: a second copy of the
// parameters, nothing more (gradients and optimizer state once), and p - s
// micro-batches in flight whatever m (no flush).
TEST(DeviceMemory, PipeDream2BWHoldsTwoWeightVersions) {
  const ModelGraph g = TinyTransformer();
  MemoryInputs in;
  in.graph = &g;
  in.ops = AllOps(g);
  const MemoryBreakdown one = DeviceMemory(in);
  in.weight_versions = 2;
  const MemoryBreakdown two = DeviceMemory(in);
  EXPECT_DOUBLE_EQ(two.params_bytes, 2 * one.params_bytes);
  EXPECT_DOUBLE_EQ(two.grads_bytes, one.grads_bytes);
  EXPECT_DOUBLE_EQ(two.optimizer_bytes, one.optimizer_bytes);
  EXPECT_EQ(MicroBatchesInFlight(config::PipelineSchedule::kPipeDream2BW, 0, 8, 2, 1), 8);
  EXPECT_EQ(MicroBatchesInFlight(config::PipelineSchedule::kOneFOneB, 0, 8, 2, 1), 2);
}

TEST(DeviceMemory, ActivationsScaleWithMicroBatchesInFlightAndTheirSize) {
  const ModelGraph g = Gpt2Fp16();
  MemoryInputs in = Gpt2Inputs(g);
  const double one = DeviceMemory(in).activations_bytes;
  in.micro_batches_in_flight = 4;
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 4 * one);
  in.micro_batch_size = 2;
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 8 * one);
  in.micro_batches_in_flight = 0;
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 0.0);
  // Neither changes the static part.
  EXPECT_DOUBLE_EQ(DeviceMemory(in).StaticBytes(), 1991036928.0);
}

TEST(DeviceMemory, RecomputeKeepsLayerInputsPlusOneLayer) {
  const ModelGraph g = Gpt2Fp16();
  MemoryInputs in = Gpt2Inputs(g);
  in.recompute = true;
  // Kept per sample: the embed unit its token ids (S), each block its input
  // (SH), final_ln its input (SH), lm_head its input (SH = its saved SH),
  // and the loss its input, the SV logits: it saves the probabilities in
  // fp32, twice the logits' bytes, so it is recomputed too:
  //   S + 12 SH + SH + SH + SV = 1,024 + 11,010,048 + 51,463,168
  //                            = 62,474,240 elements x 2 bytes (fp16),
  // plus the largest unit's full activations while it is recomputed: the
  // loss's SV probabilities in fp32 (4 SV = 205,852,672 B, more than a
  // block's 2 x (18 SH + 3 AS^2 + 4S) = 103,817,216 B):
  //   124,948,480 + 205,852,672 = 330,801,152 B (vs 1,456,384,000 without).
  const double kept = kS + kL * kS * kH + 2 * kS * kH + kS * kV;
  EXPECT_DOUBLE_EQ(kept, 62474240.0);
  EXPECT_GT(4 * kS * kV, 2 * kBlockElements);
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 2 * kept + 4 * kS * kV);
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 330801152.0);
  // Four micro-batches in flight: the checkpoints four times, the
  // recomputed unit once.
  in.micro_batches_in_flight = 4;
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 2 * 4 * kept + 4 * kS * kV);
}

TEST(DeviceMemory, RecomputeOnAPipelineStageOfTwoBlocks) {
  const ModelGraph g = Gpt2Fp16();
  MemoryInputs in = Gpt2Inputs(g);
  in.ops = OpsNamed(g, "layer3.");
  const std::vector<OpId> layer4 = OpsNamed(g, "layer4.");
  in.ops.insert(in.ops.end(), layer4.begin(), layer4.end());
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 2 * 2 * kBlockElements);
  in.recompute = true;
  // Two block inputs (2 SH) plus one block: 2 (2 x 786,432 + 51,908,608) B.
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes, 2 * (2 * kS * kH + kBlockElements));
}

// Issue 10, item 6: a CNN pipeline stage under GPipe's re-materialization
// keeps only its input per micro-batch (Huang et al. 2019 §2.3). Hand
// calculation for ResNet-50's layer1 (three bottlenecks at 56 x 56) as one
// stage, fp32, m = 8 micro-batches of b = 4 in flight:
//   stage input = maxpool's output, 64 x 56 x 56 = 200,704 elements/sample
//     (read by both layer1.0.conv1 and layer1.0.downsample.0: kept once);
//   per-block checkpoints would keep each block's input instead:
//     64 x 56^2 + 2 x 256 x 56^2 = 200,704 + 1,605,632 = 1,806,336 elements;
//   backward recomputes the whole stage for one micro-batch: its full saved
//   activations (what the stage keeps without recomputation) once, x b.
TEST(DeviceMemory, GpipeRecomputeKeepsTheStageInputOfACnn) {
  ModelGraph g = models::BuildZooModel("resnet50");
  MemoryInputs in;
  in.graph = &g;
  in.ops = OpsNamed(g, "layer1.");
  in.optimizer = OptimizerKind::kSgd;
  in.micro_batch_size = 1;
  in.micro_batches_in_flight = 1;
  const double full_per_sample = DeviceMemory(in).activations_bytes / 4;  // elements
  in.micro_batch_size = 4;
  in.micro_batches_in_flight = 8;
  in.recompute = true;
  in.recompute_per_stage = true;
  EXPECT_DOUBLE_EQ(DeviceMemory(in).activations_bytes,
                   4 * (8 * 4 * 200704.0 + 4 * full_per_sample));
  in.recompute_per_stage = false;  // Megatron-style: one checkpoint per block
  const double per_block = DeviceMemory(in).activations_bytes;
  EXPECT_GT(per_block, 4 * 8 * 4 * 1806336.0);
  EXPECT_LT(per_block, 4 * (8 * 4 * 1806336.0 + 4 * full_per_sample));
}

TEST(DeviceMemory, WorkspaceIsAddedAsGiven) {
  const ModelGraph g = Gpt2Fp16();
  MemoryInputs in = Gpt2Inputs(g);
  in.workspace_bytes = 512.0 * 1024 * 1024;  // 0.5 GiB
  const MemoryBreakdown m = DeviceMemory(in);
  EXPECT_DOUBLE_EQ(m.workspace_bytes, 512.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(m.Total(), 1991036928.0 + 1456384000.0 + 536870912.0);
}

TEST(DeviceMemory, RejectsBadInputs) {
  const ModelGraph g = TinyTransformer();
  MemoryInputs in;
  EXPECT_THROW(DeviceMemory(in), InternalError);  // no graph
  in.graph = &g;
  in.ops = {1, 1};
  EXPECT_THROW(DeviceMemory(in), InternalError);  // op twice
  in.ops = {g.num_ops()};
  EXPECT_THROW(DeviceMemory(in), InternalError);  // out of range
  in.ops = {1};
  in.zero_stage = 4;
  EXPECT_THROW(DeviceMemory(in), InternalError);
  in.zero_stage = 0;
  in.tensor_parallel = 0;
  EXPECT_THROW(DeviceMemory(in), InternalError);
}

TEST(MicroBatchesInFlight, GpipeHoldsAllAndOneFOneBHoldsPMinusStage) {
  // p = 4, m = 8. GPipe: 8 everywhere. 1F1B: stage s holds p - s.
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(MicroBatchesInFlight(PipelineSchedule::kGpipe, s, 4, 8, 1), 8);
    EXPECT_EQ(MicroBatchesInFlight(PipelineSchedule::kOneFOneB, s, 4, 8, 1), 4 - s);
  }
  // Fewer micro-batches than stages: never more than m.
  EXPECT_EQ(MicroBatchesInFlight(PipelineSchedule::kOneFOneB, 0, 4, 2, 1), 2);
  EXPECT_EQ(MicroBatchesInFlight(PipelineSchedule::kOneFOneB, 3, 4, 2, 1), 1);
  EXPECT_EQ(MicroBatchesInFlight(PipelineSchedule::kOneFOneB, 0, 1, 8, 1), 1);
}

TEST(MicroBatchesInFlight, InterleavedFollowsMegatronWarmup) {
  // p = 4, v = 2, m = 8. Warm-up chunks w = 2 (p - s - 1) + (v - 1) p:
  //   s = 0: w = 10, 11 chunks = 5.5 micro-batches = p + (p - 1) / v -> 6
  //   s = 3: w = 4,   5 chunks = 2.5 micro-batches = p - (p - 1) / v -> 3
  EXPECT_EQ(MicroBatchesInFlight(PipelineSchedule::kInterleaved, 0, 4, 8, 2), 6);
  EXPECT_EQ(MicroBatchesInFlight(PipelineSchedule::kInterleaved, 1, 4, 8, 2), 5);  // 9 / 2
  EXPECT_EQ(MicroBatchesInFlight(PipelineSchedule::kInterleaved, 3, 4, 8, 2), 3);
  // p = 4, v = 4, s = 0: w = 6 + 12 = 18, 19 chunks / 4 = 4.75 -> 5.
  EXPECT_EQ(MicroBatchesInFlight(PipelineSchedule::kInterleaved, 0, 4, 8, 4), 5);
  // All forwards first when m v <= w + 1: m = 2, v = 2 -> 4 chunks = m.
  EXPECT_EQ(MicroBatchesInFlight(PipelineSchedule::kInterleaved, 0, 4, 2, 2), 2);
  // v = 1 is 1F1B.
  EXPECT_EQ(MicroBatchesInFlight(PipelineSchedule::kInterleaved, 1, 4, 8, 1), 3);
  EXPECT_THROW(MicroBatchesInFlight(PipelineSchedule::kOneFOneB, 4, 4, 8, 1), InternalError);
}

TEST(DoesNotFit, NamesTheDeviceAndPartsLargestFirst) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  MemoryBreakdown m;
  m.params_bytes = 2.2 * kGiB;
  m.grads_bytes = 1.9 * kGiB;
  m.optimizer_bytes = 9.0 * kGiB;
  m.activations_bytes = 28.1 * kGiB;
  EXPECT_EQ(DoesNotFit(3, m, 40 * kGiB),
            "does not fit: device 3 needs 41.2 GiB, has 40 GiB (activations 28.1, "
            "optimizer state 9.0, parameters 2.2, gradients 1.9)");
  EXPECT_EQ(DoesNotFit(3, m, 41.2 * kGiB + 1), "");
  EXPECT_EQ(DoesNotFit(3, m, 80 * kGiB), "");
  // Zero parts are left out; workspace is a part; a capacity that is not a
  // whole number of GiB keeps its decimal.
  MemoryBreakdown w;
  w.params_bytes = 1.0 * kGiB;
  w.workspace_bytes = 0.5 * kGiB;
  EXPECT_EQ(DoesNotFit(0, w, 1.2 * kGiB),
            "does not fit: device 0 needs 1.5 GiB, has 1.2 GiB (parameters 1.0, workspace 0.5)");
  // Just over: one decimal would print "needs 40.0 GiB, has 40 GiB".
  MemoryBreakdown close;
  close.activations_bytes = 40.02 * kGiB;
  EXPECT_EQ(DoesNotFit(1, close, 40 * kGiB),
            "does not fit: device 1 needs 40.02 GiB, has 40 GiB (activations 40.02)");
}

// Two ops after the input: a keeps 100 fp32 elements per sample, b 50.
ModelGraph TwoOpGraph() {
  ModelGraph g("two");
  models::Op x;
  x.name = "x";
  x.output_shape = {10};
  const OpId in = g.AddOp(x, {});
  models::Op a;
  a.name = "a";
  a.kind = models::OpKind::kRelu;
  a.input_shapes = {{10}};
  a.output_shape = {10};
  a.saved_elements_per_sample = 100;
  models::Op b = a;
  b.name = "b";
  b.saved_elements_per_sample = 50;
  g.AddOp(b, {g.AddOp(a, {in})});
  return g;
}

TEST(MemoryTimeline, AllocatesAtForwardEndFreesAtLastBackwardEnd) {
  const ModelGraph g = TwoOpGraph();
  plan::Plan p;
  p.ranks = {{0, 0}, {0, 1}};
  plan::Task t;
  t.batch = 2;
  // Rank 0, one compute stream, 10 ns per task:
  //   [0,10)  F mb0 ops a,b   +(100 + 50) x 4 B x 2 = +1,200
  //   [10,20) F mb1 ops a,b   +1,200
  //   [20,30) B mb0 ops a,b (fused)           -1,200
  //   [30,40) Bi mb1 op b                      -400 (b: 50 x 4 x 2)
  //   [40,50) Bi mb1 op a   (a still needed by its weight gradient)
  //   [50,60) Bw mb1 op a                      -800
  // Rank 1 runs a forward that must not show up in rank 0's timeline.
  const auto add = [&](plan::TaskKind kind, int mb, int op, int count, plan::RankId rank = 0) {
    t.kind = kind;
    t.micro_batch = mb;
    t.op = op;
    t.op_count = count;
    t.rank = rank;
    p.AddTask(t);
  };
  add(plan::TaskKind::kForward, 0, 1, 2);
  add(plan::TaskKind::kForward, 1, 1, 2);
  add(plan::TaskKind::kBackward, 0, 1, 2);
  add(plan::TaskKind::kBackwardInput, 1, 2, 1);
  add(plan::TaskKind::kBackwardInput, 1, 1, 1);
  add(plan::TaskKind::kBackwardWeight, 1, 1, 1);
  add(plan::TaskKind::kForward, 0, 1, 2, /*rank=*/1);
  TaskCosts costs;
  costs.task_ns.assign(p.num_tasks(), 10);
  const EngineResult r = RunEngine(p, costs);

  const std::vector<std::pair<SimTime, double>> want = {{0, 1000},  {10, 2200}, {20, 3400},
                                                        {30, 2200}, {40, 1800}, {60, 1000}};
  EXPECT_EQ(MemoryTimeline(p, g, r, 0, 1000), want);
  // Rank 1 never runs a backward: nothing is kept.
  const std::vector<std::pair<SimTime, double>> idle = {{0, 7}};
  EXPECT_EQ(MemoryTimeline(p, g, r, 1, 7), idle);
}

// Llama 2 7B (zoo: flash attention) against the same model with eager
// attention, bf16, one sample of S = 4096 on one device.
TEST(DeviceMemory, FlashAttentionDropsTheSquareTermsOfLlamaTwoSevenB) {
  ModelGraph flash = models::BuildZooModel("llama2-7b");
  models::TransformerConfig c;
  c.layers = 32;
  c.hidden = 4096;
  c.heads = 32;
  c.ffn_hidden = 11008;
  c.vocab = 32000;
  c.sequence = 4096;
  c.tied_embeddings = false;
  c.mlp = models::MlpKind::kSwiglu;
  c.norm = models::NormKind::kRmsNorm;
  c.positions = models::PositionKind::kRotary;
  c.bias = false;
  c.dropout = false;
  c.attention = models::AttentionKind::kEager;
  ModelGraph eager = models::BuildTransformer(c);
  flash.SetDType(models::DType::kBf16);
  eager.SetDType(models::DType::kBf16);
  ASSERT_EQ(flash.Totals().params, eager.Totals().params);
  // Per layer, with A = 32 heads, S = 4096, no dropout (Llama has none):
  //   eager keeps softmax's output, A S^2 = 536,870,912 elements (context
  //   reads the same probabilities; q, k, v and the context are kept
  //   either way);
  //   flash keeps instead one log-sum-exp per query row, A S = 131,072.
  // 32 layers x (536,870,912 - 131,072) elements x 2 bytes
  //   = 34,351,349,760 bytes (32.0 GiB) less with flash.
  const double a = 32, s = 4096, layers = 32;
  const double dropped = layers * (a * s * s - a * s) * 2;
  EXPECT_DOUBLE_EQ(dropped, 34351349760.0);
  const MemoryBreakdown m_flash = DeviceMemory(Gpt2Inputs(flash));
  const MemoryBreakdown m_eager = DeviceMemory(Gpt2Inputs(eager));
  EXPECT_DOUBLE_EQ(m_eager.activations_bytes - m_flash.activations_bytes, dropped);
  EXPECT_DOUBLE_EQ(m_eager.StaticBytes(), m_flash.StaticBytes());
  // Selective recomputation re-runs attention's core: with eager it frees
  // the A S^2 probabilities per layer (plus one core's worth held while it
  // is recomputed); with flash only the A S log-sum-exp rows
  // (32 x 131,072 x 2 = 8,388,608 bytes), one layer's held back.
  MemoryInputs selective = Gpt2Inputs(flash);
  selective.recompute_selective = true;
  const MemoryBreakdown m_flash_sel = DeviceMemory(selective);
  EXPECT_DOUBLE_EQ(m_flash.activations_bytes - m_flash_sel.activations_bytes,
                   (layers - 1) * a * s * 2);
  selective = Gpt2Inputs(eager);
  selective.recompute_selective = true;
  EXPECT_DOUBLE_EQ(m_eager.activations_bytes - DeviceMemory(selective).activations_bytes,
                   (layers - 1) * a * s * s * 2);
}

}  // namespace
}  // namespace dtsim::sim

namespace dtsim::sim {
namespace {

// fp8 (MemoryInputs::fp8): each dense layer adds its FP8 weight and FP8
// transpose, 2 bytes per parameter, and keeps its saved input (what the
// graph saves for a dense op) in 1 byte instead of bf16's 2; nothing else
// changes.
TEST(DeviceMemory, Fp8AddsTwoBytesPerLinearWeightAndHalvesLinearInputs) {
  ModelGraph g = models::BuildZooModel("gpt2");
  g.SetDType(models::DType::kBf16);
  MemoryInputs in = Gpt2Inputs(g);
  const MemoryBreakdown bf16 = DeviceMemory(in);
  in.fp8 = true;
  const MemoryBreakdown fp8 = DeviceMemory(in);
  double dense_params = 0, dense_saved = 0;
  for (OpId id = 0; id < g.num_ops(); ++id) {
    if (g.op(id).kind != models::OpKind::kDense) continue;
    dense_params += static_cast<double>(g.op(id).params);
    dense_saved += g.op(id).saved_elements_per_sample;
  }
  ASSERT_GT(dense_params, 0.5 * kGpt2Params);  // the blocks' 12 H^2 per layer at least
  EXPECT_DOUBLE_EQ(fp8.params_bytes - bf16.params_bytes, 2 * dense_params);
  EXPECT_DOUBLE_EQ(bf16.activations_bytes - fp8.activations_bytes, dense_saved);  // 2 -> 1 byte
  EXPECT_DOUBLE_EQ(fp8.optimizer_bytes, bf16.optimizer_bytes);
  EXPECT_DOUBLE_EQ(fp8.grads_bytes, bf16.grads_bytes);
}

}  // namespace
}  // namespace dtsim::sim
