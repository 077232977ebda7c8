#include "validation/deepbench.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "validation/deepbench_fit.h"

namespace dtsim::validation {
namespace {

const char kGemm[] =
    "gpu,precision,source_app,m,n,k,a_transpose,b_transpose,time_ms,tflops\n"
    "V100,fp32,,1760,16,1760,N,N,0.038,2.6\n"
    "V100,fp16-mixed,,35,8457,1530,N,N,0.1,1\n"
    "V100,fp16-mixed,,35,8457,1760,N,T,0.1,1\n"
    "T4,fp32,,1,1,1,N,N,,\n";  // no time: skipped

TEST(Deepbench, ParsesGemmRowsAndPadsFp16AsTheBenchmarkDid) {
  const auto rows = ParseDeepbenchGemm(kGemm, "dir/gemm.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].Where(), "gemm.csv:2");
  EXPECT_EQ(rows[0].gemm.m, 1760);
  EXPECT_DOUBLE_EQ(rows[0].measured_s, 0.038e-3);
  EXPECT_TRUE(rows[0].gemm.accumulate);  // DeepBench: beta = 1
  // gemm_bench.cu pads m and k to multiples of 8 for NN (35 -> 40, 1530 ->
  // 1536), m and n for NT (8457 -> 8464).
  EXPECT_EQ(rows[1].gemm.m, 40);
  EXPECT_EQ(rows[1].gemm.k, 1536);
  EXPECT_EQ(rows[1].gemm.n, 8457);
  EXPECT_EQ(rows[2].gemm.n, 8464);
  EXPECT_EQ(rows[2].gemm.k, 1760);
  EXPECT_EQ(rows[1].gemm.precision, hw::Precision::kFp16);
}

TEST(Deepbench, ParsesEachTimedConvolutionPass) {
  const char conv[] =
      "gpu,precision,source_app,w,h,c,n,k,s,r,pad_w,pad_h,stride_w,stride_h,p,q,fwd_ms,"
      "bwd_input_ms,bwd_params_ms,fwd_algorithm\n"
      "T4,fp16-mixed,,700,161,1,4,32,20,5,0,0,2,2,79,341,0.1,,0.3,IMPLICIT_PRECOMP_GEMM\n";
  const auto rows = ParseDeepbenchConv(conv, "conv.csv");
  ASSERT_EQ(rows.size(), 2u);  // the empty backward-data cell is skipped
  EXPECT_EQ(rows[0].kind, DeepbenchKernel::kConvForward);
  EXPECT_EQ(rows[1].kind, DeepbenchKernel::kConvBackwardFilter);
  EXPECT_EQ(rows[0].conv.c, 8);     // conv_bench.cu pads channels to 8 for tensor cores
  EXPECT_EQ(rows[0].conv.p(), 79);  // (161 - 5) / 2 + 1
  EXPECT_EQ(rows[0].conv.q(), 341);
  EXPECT_EQ(rows[0].sheet_algorithm, "IMPLICIT_PRECOMP_GEMM");
}

const char kRnn[] =
    "gpu,precision,cell,source_app,hidden,n,timesteps,fwd_ms,bwd_input_ms,bwd_params_ms,bwd_ms\n"
    "V100,fp32,lstm,Machine Translation,512,16,25,1.095,0.937,0.165,\n"
    "P100,fp16-pseudo,gru,,512,32,1,0.147,,,0.219\n";

TEST(Deepbench, ParsesRecurrentLayersAsRnnBenchRanThem) {
  const auto rows = ParseDeepbenchRnn(kRnn, "dir/rnn.csv");
  // V100: three passes; P100 fp16-pseudo: forward and its single backward
  // column, read as the backward-data pass.
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].kind, DeepbenchKernel::kRnnForward);
  EXPECT_EQ(rows[1].kind, DeepbenchKernel::kRnnBackwardData);
  EXPECT_EQ(rows[2].kind, DeepbenchKernel::kRnnBackwardWeights);
  EXPECT_DOUBLE_EQ(rows[2].measured_s, 0.165e-3);
  EXPECT_EQ(rows[4].kind, DeepbenchKernel::kRnnBackwardData);
  EXPECT_DOUBLE_EQ(rows[4].measured_s, 0.219e-3);
  EXPECT_EQ(rows[0].rnn.cell, models::RnnCell::kLstm);
  EXPECT_EQ(rows[0].rnn.input_mode, sim::RnnInput::kSkip);  // CUDNN_SKIP_INPUT
  EXPECT_EQ(rows[0].rnn.input, 512);
  EXPECT_EQ(rows[3].rnn.precision, hw::Precision::kFp16);
  EXPECT_EQ(rows[0].Shape(), "lstm H=512 N=16 T=25");
  EXPECT_EQ(rows[1].Where(), "rnn.csv:2 rnn_bwd_data");
  EXPECT_STREQ(DeepbenchKernelGroup(rows[2].kind), "rnn");
  try {
    ParseDeepbenchRnn(
        "gpu,precision,cell,source_app,hidden,n,timesteps,fwd_ms,bwd_input_ms,bwd_params_ms,"
        "bwd_ms\nV100,fp32,rnn_tanh,,512,16,25,1,1,1,\n",
        "rnn.csv");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("rnn.csv:2"), std::string::npos) << e.what();
  }
}

TEST(Deepbench, PredictsARecurrentLayerWithTheSimulatorsKernels) {
  // The prediction is the sum of sim::RnnKernels' kernel times: a forward of
  // T = 25 steps costs 25 x (step GEMM + cell), so it is 25 times a
  // one-step layer's; and the weight gradient, one GEMM over T N rows and a
  // bias reduction, costs no per-step launches.
  const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  const sim::GpuKernelModel model = DeepbenchModel(catalog, "V100", sim::GpuKernelParams{});
  auto rows = ParseDeepbenchRnn(kRnn, "rnn.csv");
  const double t25 = PredictDeepbench(model, rows[0]).predicted_s;
  double sum = 0;
  for (const sim::KernelCall& k : sim::RnnKernels(rows[0].rnn, plan::TaskKind::kForward))
    sum += sim::KernelSeconds(model, k);
  EXPECT_DOUBLE_EQ(t25, sum);
  rows[0].rnn.steps = 1;
  EXPECT_NEAR(PredictDeepbench(model, rows[0]).predicted_s * 25, t25, 1e-12);
  EXPECT_EQ(PredictDeepbench(model, rows[0]).algorithm, "standard");
  EXPECT_LT(PredictDeepbench(model, rows[2]).predicted_s, t25);
}

TEST(Deepbench, RefusesBadFieldsAtTheirLine) {
  try {
    ParseDeepbenchGemm(
        "gpu,precision,source_app,m,n,k,a_transpose,b_transpose,time_ms\n"
        "V100,fp32,,12x,16,16,N,N,1\n",
        "gemm.csv");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("gemm.csv:2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ParseDeepbenchGemm("gpu,m\nV100,1\n", "gemm.csv"), UserError);  // columns missing
  EXPECT_THROW(DeepbenchDevice("A100"), UserError);  // DeepBench measured none
}

TEST(DeepbenchFit, RecoversConstantsThatGeneratedTheTimes) {
  // Times generated by the model itself with known constants: the fit's
  // objective must reach ~0 (an independent check of the descent, not of
  // the model).
  const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  sim::GpuKernelParams truth = FitStart();
  truth.simt_fraction = 0.7;
  truth.simt_half_reuse = 6;
  truth.kernel_fixed_s = 6e-6;
  std::vector<DeepbenchMeasurement> rows;
  int line = 2;
  for (std::int64_t m : {64, 512, 4096})
    for (std::int64_t n : {16, 128, 2048})
      for (std::int64_t k : {256, 4096}) {
        DeepbenchMeasurement d;
        d.gpu = "M40";
        d.precision = "fp32";
        d.file = "gemm.csv";
        d.line = line++;
        d.gemm.m = m;
        d.gemm.n = n;
        d.gemm.k = k;
        rows.push_back(d);
      }
  const sim::GpuKernelModel model = DeepbenchModel(catalog, "M40", truth);
  for (DeepbenchMeasurement& d : rows) d.measured_s = PredictDeepbench(model, d).predicted_s;
  EXPECT_GT(DeepbenchObjective(rows, catalog, FitStart()), 0.05);
  const sim::GpuKernelParams fitted = FitKernelParams(rows, catalog);
  EXPECT_LT(DeepbenchObjective(rows, catalog, fitted), 0.01);
}

TEST(DeepbenchFit, RecurrentStepConstantsAreFittedOnTheRnnRowsAlone) {
  // Recurrent-layer times generated by the model with slower step GEMMs and
  // a 30 us host time per step: step 5 brings the objective to ~0, and
  // steps 2 to 4, which see no GEMM or convolution row, move nothing.
  const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  sim::GpuKernelParams truth = FitStart();
  truth.rnn_step_fraction = 0.6;
  truth.rnn_dgrad_fraction = 0.8;
  truth.rnn_host_step_s = 30e-6;
  std::vector<DeepbenchMeasurement> rows;
  for (std::int64_t h : {256, 1024, 2560})
    for (std::int64_t n : {16, 128})
      for (auto kind : {DeepbenchKernel::kRnnForward, DeepbenchKernel::kRnnBackwardData}) {
        DeepbenchMeasurement d;
        d.gpu = "TitanXp";
        d.precision = "fp32";
        d.file = "rnn.csv";
        d.kind = kind;
        d.rnn.cell = models::RnnCell::kLstm;
        d.rnn.hidden = d.rnn.input = h;
        d.rnn.batch = n;
        d.rnn.steps = 25;
        d.rnn.input_mode = sim::RnnInput::kSkip;
        rows.push_back(d);
      }
  const sim::GpuKernelModel model = DeepbenchModel(catalog, "TitanXp", truth);
  for (DeepbenchMeasurement& d : rows) d.measured_s = PredictDeepbench(model, d).predicted_s;
  EXPECT_GT(DeepbenchObjective(rows, catalog, FitStart()), 0.1);
  const sim::GpuKernelParams fitted = FitKernelParams(rows, catalog);
  EXPECT_LT(DeepbenchObjective(rows, catalog, fitted), 0.01);
  EXPECT_EQ(fitted.simt_fraction, FitStart().simt_fraction);
}

TEST(DeepbenchFit, GenerationFitRecoversItsConstantsAndKeepsTheRest) {
  // H100 GEMM and convolution times generated by the model with Hopper's
  // SIMT fraction and dgrad fraction changed: fitting the generation alone
  // brings the objective to ~0 from well above, and no shared constant or
  // other generation moves (FitGenerationParams' contract).
  const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  const sim::GpuKernelParams shipped;
  const auto hopper = static_cast<std::size_t>(hw::GpuArch::kHopper);
  sim::GpuKernelParams truth = shipped;
  truth.simt_fraction_by_arch[hopper] *= 0.7;
  truth.dgrad_fraction_by_arch[hopper] *= 0.8;
  std::vector<DeepbenchMeasurement> rows;
  int line = 2;
  for (std::int64_t m : {4096, 200704})
    for (std::int64_t n : {64, 512}) {
      DeepbenchMeasurement d;
      d.gpu = "H100";
      d.precision = "fp32";
      d.file = "gemm.csv";
      d.line = line++;
      d.gemm.m = m, d.gemm.n = n, d.gemm.k = 576;
      rows.push_back(d);
    }
  for (std::int64_t c : {64, 256})
    for (auto kind : {DeepbenchKernel::kConvForward, DeepbenchKernel::kConvBackwardData}) {
      DeepbenchMeasurement d;
      d.gpu = "H100";
      d.precision = "fp32";
      d.file = "conv.csv";
      d.line = line++;
      d.kind = kind;
      d.conv.n = 32, d.conv.c = c, d.conv.k = c, d.conv.h = d.conv.w = 28;
      d.conv.r = d.conv.s = 3, d.conv.pad_h = d.conv.pad_w = 1;
      rows.push_back(d);
    }
  const sim::GpuKernelModel model = DeepbenchModel(catalog, "H100", truth);
  for (DeepbenchMeasurement& d : rows) d.measured_s = PredictDeepbench(model, d).predicted_s;
  EXPECT_GT(DeepbenchObjective(rows, catalog, shipped), 0.1);
  const sim::GpuKernelParams fitted = FitGenerationParams(rows, catalog, shipped);
  EXPECT_LT(DeepbenchObjective(rows, catalog, fitted), 0.01);
  EXPECT_EQ(fitted.simt_fraction, shipped.simt_fraction);
  EXPECT_EQ(fitted.k_fill, shipped.k_fill);
  const auto volta = static_cast<std::size_t>(hw::GpuArch::kVolta);
  EXPECT_EQ(fitted.simt_fraction_by_arch[volta], shipped.simt_fraction_by_arch[volta]);
  EXPECT_EQ(fitted.clock_fraction_by_device, shipped.clock_fraction_by_device);
}

}  // namespace
}  // namespace dtsim::validation
