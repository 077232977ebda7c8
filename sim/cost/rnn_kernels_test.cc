#include "sim/cost/rnn_kernels.h"

#include <gtest/gtest.h>

#include "hw/catalog.h"

namespace dtsim::sim {
namespace {

using plan::TaskKind;

RnnProblem Lstm(RnnInput mode) {
  RnnProblem p;
  p.cell = models::RnnCell::kLstm;
  p.steps = 25;
  p.batch = 16;
  p.input = mode == RnnInput::kSkip ? 512 : 256;
  p.hidden = 512;
  p.input_mode = mode;
  p.precision = hw::Precision::kFp32;
  return p;
}

TEST(RnnKernels, LinearInputForwardIsOneInputGemmThenAGemmAndACellPerStep) {
  // LSTM, H = 512, I = 256: G H = 4 x 512 = 2048. Input GEMM m = 2048,
  // n = T N = 25 x 16 = 400, k = I = 256; per step m = 2048, n = N = 16,
  // k = H = 512, 25 times; the cell reads and writes N (2 G H + 3 H) =
  // 16 x (4096 + 1536) = 90,112 fp32 values = 360,448 bytes per step.
  const auto k = RnnKernels(Lstm(RnnInput::kLinear), TaskKind::kForward);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0].gemm.m, 2048);
  EXPECT_EQ(k[0].gemm.n, 400);
  EXPECT_EQ(k[0].gemm.k, 256);
  EXPECT_EQ(k[0].repeat, 1);
  EXPECT_EQ(k[1].gemm.m, 2048);
  EXPECT_EQ(k[1].gemm.n, 16);
  EXPECT_EQ(k[1].gemm.k, 512);
  EXPECT_EQ(k[1].repeat, 25);
  EXPECT_EQ(k[2].type, KernelCall::Type::kStream);
  EXPECT_DOUBLE_EQ(k[2].bytes, 360448.0);
  EXPECT_EQ(k[2].repeat, 25);
}

TEST(RnnKernels, SkipInputHasNoInputGemmInAnyPass) {
  // CUDNN_SKIP_INPUT: x_t enters the gates as it is. Forward: the step GEMM
  // and the cell (which reads x_t too: N (2 G H + 4 H) = 16 x 6144 values);
  // dgrad: the cell's gradient and the step GEMM H x N x G H; wgrad: the
  // recurrent weights' GEMM G H x H over T N = 400 rows (m = H = 512,
  // n = G H = 2048) and the bias reduction of T N x G H values.
  const RnnProblem p = Lstm(RnnInput::kSkip);
  const auto fwd = RnnKernels(p, TaskKind::kForward);
  ASSERT_EQ(fwd.size(), 2u);
  EXPECT_EQ(fwd[0].name, "fwd step gemm");
  EXPECT_DOUBLE_EQ(fwd[1].bytes, 16.0 * 6144 * 4);
  const auto dgrad = RnnKernels(p, TaskKind::kBackwardInput);
  ASSERT_EQ(dgrad.size(), 2u);
  EXPECT_DOUBLE_EQ(dgrad[0].bytes, 2 * 16.0 * 6144 * 4);
  EXPECT_EQ(dgrad[1].gemm.m, 512);
  EXPECT_EQ(dgrad[1].gemm.n, 16);
  EXPECT_EQ(dgrad[1].gemm.k, 2048);
  EXPECT_EQ(dgrad[1].repeat, 25);
  const auto wgrad = RnnKernels(p, TaskKind::kBackwardWeight);
  ASSERT_EQ(wgrad.size(), 2u);
  EXPECT_EQ(wgrad[0].gemm.m, 512);
  EXPECT_EQ(wgrad[0].gemm.n, 2048);
  EXPECT_EQ(wgrad[0].gemm.k, 400);
  EXPECT_EQ(wgrad[0].repeat, 1);
  EXPECT_DOUBLE_EQ(wgrad[1].bytes, 400.0 * 2048 * 4);
}

TEST(RnnKernels, GruSharesOneStepGemmOfThreeGates) {
  // cuDNN's GRU applies the reset gate to R_h h's output: one 3 H x N x H
  // GEMM per step, H = 512 -> m = 1536.
  RnnProblem p = Lstm(RnnInput::kSkip);
  p.cell = models::RnnCell::kGru;
  const auto fwd = RnnKernels(p, TaskKind::kForward);
  EXPECT_EQ(fwd[0].gemm.m, 1536);
  EXPECT_EQ(fwd[0].gemm.k, 512);
}

TEST(RnnKernels, SmallBatchStepsCostTheirLaunchesNotTheirWork) {
  // V100: T = 25 steps of a 2048 x 16 x 512 GEMM (33.6 MFLOP: 2.1 us at
  // the 15.7 TFLOP/s fp32 peak). Each step's GEMM takes at least the host's
  // time to issue the step, and its cell a kernel's fixed cost: the forward
  // is at least T (rnn_host_step_s + kernel_fixed_s), and doubling T
  // doubles it.
  const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  const GpuKernelModel model(*catalog.FindDevice("V100-SXM2-16GB"), GpuKernelParams{});
  RnnProblem p = Lstm(RnnInput::kSkip);
  const double t25 = RnnSeconds(model, p, TaskKind::kForward);
  const auto volta = static_cast<std::size_t>(hw::GpuArch::kVolta);
  EXPECT_GE(t25, 25 * (model.params().rnn_host_step_s_by_arch[volta] +
                       model.params().kernel_fixed_s));
  p.steps = 50;
  EXPECT_NEAR(RnnSeconds(model, p, TaskKind::kForward), 2 * t25, 1e-12);
}

}  // namespace
}  // namespace dtsim::sim
