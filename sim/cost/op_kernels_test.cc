#include "sim/cost/op_kernels.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "hw/catalog.h"
#include "sim/cost/cost_model.h"

namespace dtsim::sim {
namespace {

using models::Op;
using models::OpKind;
using plan::TaskKind;

Op Dense(bool bias) {
  Op op;
  op.name = "fc";
  op.kind = OpKind::kDense;
  op.input_shapes = {{128, 1024}};  // 128 tokens of 1024 features per sample
  op.output_shape = {128, 4096};
  op.attrs.bias = bias;
  op.params = 1024 * 4096 + (bias ? 4096 : 0);
  return op;
}

TEST(OpKernels, DenseIsOneGemmForwardAndTwoBackward) {
  // y = x W^T in PyTorch is cuBLAS C = W^T x with m = out features, n = rows
  // (batch x tokens), k = in features; dgrad m = in, k = out; wgrad m = in,
  // n = out, k = rows.
  const Op op = Dense(true);
  const auto fwd = OpKernels(op, TaskKind::kForward, 8, hw::Precision::kFp16);
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0].type, KernelCall::Type::kGemm);
  EXPECT_EQ(fwd[0].gemm.m, 4096);
  EXPECT_EQ(fwd[0].gemm.n, 8 * 128);
  EXPECT_EQ(fwd[0].gemm.k, 1024);
  const auto dgrad = OpKernels(op, TaskKind::kBackwardInput, 8, hw::Precision::kFp16);
  ASSERT_EQ(dgrad.size(), 1u);
  EXPECT_EQ(dgrad[0].gemm.m, 1024);
  EXPECT_EQ(dgrad[0].gemm.k, 4096);
  const auto wgrad = OpKernels(op, TaskKind::kBackwardWeight, 8, hw::Precision::kFp16);
  ASSERT_EQ(wgrad.size(), 2u);  // the weight's GEMM and the bias's reduction
  EXPECT_EQ(wgrad[0].gemm.k, 8 * 128);
  EXPECT_EQ(wgrad[1].type, KernelCall::Type::kStream);
  EXPECT_DOUBLE_EQ(wgrad[1].bytes, 8.0 * 128 * 4096 * 4);  // reads dy once (fp32 storage)
  EXPECT_EQ(OpKernels(Dense(false), TaskKind::kBackwardWeight, 8, hw::Precision::kFp16).size(), 1u);
  // The same flops as the graph counts: 2 m n k per pass.
  EXPECT_DOUBLE_EQ(2.0 * fwd[0].gemm.m * fwd[0].gemm.n * fwd[0].gemm.k,
                   2.0 * 8 * 128 * 1024 * 4096);
}

TEST(OpKernels, ConvolutionIsOneKernelPerPass) {
  Op op;
  op.kind = OpKind::kConv2d;
  op.input_shapes = {{64, 56, 56}};
  op.output_shape = {128, 28, 28};
  op.attrs.kernel_h = op.attrs.kernel_w = 3;
  op.attrs.stride_h = op.attrs.stride_w = 2;
  op.attrs.pad_h = op.attrs.pad_w = 1;
  op.params = 64 * 128 * 9;
  for (TaskKind kind : {TaskKind::kForward, TaskKind::kBackwardInput, TaskKind::kBackwardWeight}) {
    const auto k = OpKernels(op, kind, 32, hw::Precision::kFp32);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].type, KernelCall::Type::kConv);
    EXPECT_EQ(k[0].conv.n, 32);
    EXPECT_EQ(k[0].conv.p(), 28);  // (56 + 2 - 3) / 2 + 1
    EXPECT_EQ(k[0].conv.q(), 28);
  }
  EXPECT_EQ(OpKernels(op, TaskKind::kBackwardWeight, 32, hw::Precision::kFp32)[0].pass,
            ConvPass::kBackwardFilter);
}

TEST(OpKernels, AttentionMatmulIsBatchedAndHasTwoGradients) {
  Op op;
  op.kind = OpKind::kMatMul;
  op.input_shapes = {{16, 128, 64}, {16, 64, 128}};  // heads x S x D, heads x D x S
  op.output_shape = {16, 128, 128};
  const auto fwd = OpKernels(op, TaskKind::kForward, 4, hw::Precision::kFp16);
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0].gemm.batch, 4 * 16);
  EXPECT_EQ(fwd[0].gemm.m * fwd[0].gemm.n * fwd[0].gemm.k, 128 * 128 * 64);
  const auto bwd = OpKernels(op, TaskKind::kBackwardInput, 4, hw::Precision::kFp16);
  ASSERT_EQ(bwd.size(), 2u);
  for (const KernelCall& k : bwd) EXPECT_EQ(k.gemm.m * k.gemm.n * k.gemm.k, 128 * 128 * 64);
}

TEST(OpKernels, TensorParallelShardsPriceThisRanksPart) {
  // Megatron's column-parallel layer keeps out / t features per rank, the
  // row-parallel one in / t (Shoeybi et al. 2019, section 3): 1 / t of the
  // GEMM, as plan::TensorParallelShard divides the flops.
  Op column = Dense(false);
  column.attrs.tensor_split = 4;
  const auto c = OpKernels(column, TaskKind::kForward, 8, hw::Precision::kFp16);
  EXPECT_EQ(c[0].gemm.m, 4096 / 4);
  EXPECT_EQ(c[0].gemm.k, 1024);
  Op row = column;
  row.attrs.tensor_split_input = true;
  const auto r = OpKernels(row, TaskKind::kBackwardWeight, 8, hw::Precision::kFp16);
  EXPECT_EQ(r[0].gemm.m, 1024 / 4);
  EXPECT_EQ(r[0].gemm.n, 4096);
  Op scores;
  scores.kind = OpKind::kMatMul;
  scores.input_shapes = {{16, 128, 64}, {16, 64, 128}};
  scores.output_shape = {16, 128, 128};
  scores.attrs.tensor_split = 4;
  EXPECT_EQ(OpKernels(scores, TaskKind::kForward, 2, hw::Precision::kFp16)[0].gemm.batch,
            2 * 16 / 4);
}

TEST(OpKernels, RowsBeyondWhatDoublesHoldAreRefused) {
  // 2^40 tokens of 8 features per sample x a batch of 2^20 = 2^60 GEMM rows:
  // above models::kMaxModelCount (2^53), refused as the user's mistake
  // instead of wrapping in 64-bit arithmetic.
  Op op = Dense(false);
  op.input_shapes = {{std::int64_t{1} << 40, 8}};
  op.output_shape = {std::int64_t{1} << 40, 8};
  EXPECT_THROW(OpKernels(op, TaskKind::kForward, 1 << 20, hw::Precision::kFp32), UserError);
  EXPECT_NO_THROW(OpKernels(op, TaskKind::kForward, 1, hw::Precision::kFp32));
}

TEST(OpKernels, OtherOpsMoveTheirBytesAndViewsLaunchNothing) {
  Op norm;
  norm.kind = OpKind::kLayerNorm;
  norm.input_shapes = {{128, 1024}};
  norm.output_shape = {128, 1024};
  norm.read_elements_per_sample = norm.written_elements_per_sample = 128 * 1024;
  norm.params = 2048;
  const auto k = OpKernels(norm, TaskKind::kForward, 8, hw::Precision::kFp16);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].type, KernelCall::Type::kStream);
  EXPECT_DOUBLE_EQ(k[0].bytes, norm.FwdBytes(8));
  // An embedding's forward reads the ids and the rows it gathers and writes
  // them (models/graph_builder.cc's counts), not the 50,257 x 1,024 table.
  Op embed;
  embed.kind = OpKind::kEmbedding;
  embed.params = 50257 * 1024;
  embed.read_elements_per_sample = 128 + 128 * 1024;
  embed.written_elements_per_sample = 128 * 1024;
  const auto e = OpKernels(embed, TaskKind::kForward, 8, hw::Precision::kFp32);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_DOUBLE_EQ(e[0].bytes, 8.0 * (128 + 2 * 128 * 1024) * 4);
  Op view;
  view.kind = OpKind::kReshape;
  EXPECT_TRUE(OpKernels(view, TaskKind::kForward, 8, hw::Precision::kFp16).empty());
}

TEST(CostModel, PricesGpuOpsAsTheSumOfTheirKernels) {
  const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  const hw::DeviceSpec& v100 = *catalog.FindDevice("V100-SXM2-32GB");
  const CostModel cm(v100, hw::Precision::kFp16, CostModelOptions{});
  ASSERT_NE(cm.kernels(), nullptr);
  const Op op = Dense(true);
  double sum = 0;
  for (const KernelCall& k : OpKernels(op, TaskKind::kBackwardWeight, 8, hw::Precision::kFp16))
    sum += KernelSeconds(*cm.kernels(), k);
  EXPECT_DOUBLE_EQ(cm.ComputeSeconds(op, TaskKind::kBackwardWeight, 8), sum);

  CostModelOptions roofline;
  roofline.kernel_model = false;
  EXPECT_EQ(CostModel(v100, hw::Precision::kFp16, roofline).kernels(), nullptr);
  hw::DeviceSpec custom = v100;  // a user's device without an SM count
  custom.sm_count = 0;
  EXPECT_EQ(CostModel(custom, hw::Precision::kFp16, CostModelOptions{}).kernels(), nullptr);
}

// fp8 (Transformer Engine's recipe, op_kernels.h): a dense layer's forward
// casts its input (read 2 bytes, write the FP8 copy and its transpose: 4
// bytes a value) and runs an FP8 GEMM; dgrad casts the output gradient the
// same way; wgrad is one FP8 GEMM. Other ops keep bf16 math; the weight's
// cast is its own once-per-step kernel over this rank's part.
TEST(OpKernels, Fp8CastsLinearLayersInputsAndRunsTheirGemmsInFp8) {
  Op op = Dense(false);
  op.dtype = models::DType::kBf16;
  const auto fwd = OpKernels(op, TaskKind::kForward, 8, hw::Precision::kFp8);
  ASSERT_EQ(fwd.size(), 2u);
  bool cast = false;
  EXPECT_TRUE(IsFp8Kernel(fwd[0], &cast));
  EXPECT_TRUE(cast);
  EXPECT_DOUBLE_EQ(fwd[0].bytes, 4.0 * 8 * 128 * 1024);  // rows x in features
  EXPECT_TRUE(IsFp8Kernel(fwd[1], &cast));
  EXPECT_FALSE(cast);
  EXPECT_EQ(fwd[1].gemm.precision, hw::Precision::kFp8);
  const auto dgrad = OpKernels(op, TaskKind::kBackwardInput, 8, hw::Precision::kFp8);
  ASSERT_EQ(dgrad.size(), 2u);
  EXPECT_DOUBLE_EQ(dgrad[0].bytes, 4.0 * 8 * 128 * 4096);  // rows x out features
  EXPECT_EQ(dgrad[1].gemm.precision, hw::Precision::kFp8);
  const auto wgrad = OpKernels(op, TaskKind::kBackwardWeight, 8, hw::Precision::kFp8);
  ASSERT_EQ(wgrad.size(), 1u);
  EXPECT_EQ(wgrad[0].gemm.precision, hw::Precision::kFp8);

  Op column = Dense(false);
  column.attrs.tensor_split = 4;
  const auto weight = Fp8WeightCastKernels(column, hw::Precision::kFp8);
  ASSERT_EQ(weight.size(), 1u);
  EXPECT_DOUBLE_EQ(weight[0].bytes, 4.0 * 1024 * 4096 / 4);
  EXPECT_TRUE(Fp8WeightCastKernels(column, hw::Precision::kBf16).empty());

  Op matmul;
  matmul.kind = OpKind::kMatMul;
  matmul.input_shapes = {{16, 128, 64}, {16, 64, 128}};
  matmul.output_shape = {16, 128, 128};
  for (const KernelCall& k : OpKernels(matmul, TaskKind::kBackwardInput, 4, hw::Precision::kFp8)) {
    EXPECT_EQ(k.gemm.precision, hw::Precision::kBf16);
    EXPECT_FALSE(IsFp8Kernel(k));
  }
}

}  // namespace
}  // namespace dtsim::sim
