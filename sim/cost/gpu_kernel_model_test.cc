#include "sim/cost/gpu_kernel_model.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "hw/catalog.h"

namespace dtsim::sim {
namespace {

hw::DeviceSpec Gpu(const char* name) {
  const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  const hw::DeviceSpec* d = catalog.FindDevice(name);
  EXPECT_NE(d, nullptr) << name;
  return *d;
}

GemmProblem Gemm(std::int64_t m, std::int64_t n, std::int64_t k, hw::Precision p) {
  GemmProblem g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.precision = p;
  return g;
}

TEST(GpuKernelModel, OneTileMoreThanAWaveTakesAboutTwiceAsLong) {
  // Wave quantization (NVIDIA, "Matrix Multiplication Background User's
  // Guide", section "Wave Quantization"): a 128x128 tile holds a V100 SM
  // alone, so 80 tiles are one wave and 81 are two; the second wave runs one
  // tile on one SM but lasts as long as the first. k = 8192 keeps both
  // compute-bound; the fixed cost per kernel (a few us) is < 2% of 2 ms.
  const GpuKernelModel model(Gpu("V100-SXM2-32GB"), GpuKernelParams{});
  const GemmProblem full = Gemm(128 * 80, 128, 8192, hw::Precision::kFp32);
  const GemmProblem plus_one = Gemm(128 * 80 + 1, 128, 8192, hw::Precision::kFp32);
  const GemmEstimate a = model.GemmWithTile(full, 128, 128, 1);
  const GemmEstimate b = model.GemmWithTile(plus_one, 128, 128, 1);
  EXPECT_EQ(a.waves, 1);
  EXPECT_EQ(b.waves, 2);
  EXPECT_FALSE(a.memory_bound);
  EXPECT_NEAR(b.seconds / a.seconds, 2.0, 0.05);
}

TEST(GpuKernelModel, FullTilesAtTheLargeTileFractionOfPeak) {
  // One wave of 128x128 fp32 tiles, compute-bound: time = flops / (peak x
  // fraction of the generation x the board's clock), the definition of
  // simt_fraction, plus the fixed cost and the pipeline fill (k_fill of k).
  GpuKernelParams p;
  const hw::DeviceSpec v100 = Gpu("V100-SXM2-32GB");  // no clock fraction: not a DeepBench board
  const GpuKernelModel model(v100, p);
  const GemmProblem g = Gemm(128 * 80, 128, 8192, hw::Precision::kFp32);
  const double fraction = p.simt_fraction_by_arch[static_cast<int>(hw::GpuArch::kVolta)];
  const double flops = 2.0 * 128 * 128 * (8192 + p.k_fill) * 80;
  EXPECT_NEAR(model.GemmWithTile(g, 128, 128, 1).seconds,
              flops / (v100.fp32_flop_per_s * fraction) + p.kernel_fixed_s, 1e-9);
}

TEST(GpuKernelModel, TensorCoresNeedLeadingDimensionsInMultiplesOf8) {
  // cuBLAS 10 "Tensor Core usage": fp16 operands with leading dimensions
  // that are multiples of 8 elements (16 bytes). k = 4095 breaks it for an
  // NN GEMM (ldb = k), which then runs on the CUDA cores at the fp32 rate,
  // 8x below V100's 125 TFLOPS tensor-core rate. cuBLAS 11 lifted the
  // condition.
  GpuKernelParams cuda10;
  cuda10.cuda_version = 10;
  const GpuKernelModel model(Gpu("V100-SXM2-32GB"), cuda10);
  EXPECT_EQ(GpuKernelModel(Gpu("V100-SXM2-32GB"), GpuKernelParams{})
                .UnitFor(Gemm(4096, 4096, 4095, hw::Precision::kFp16)),
            MathUnit::kTensor);
  const GemmProblem aligned = Gemm(4096, 4096, 4096, hw::Precision::kFp16);
  const GemmProblem misaligned = Gemm(4096, 4096, 4095, hw::Precision::kFp16);
  EXPECT_EQ(model.UnitFor(aligned), MathUnit::kTensor);
  EXPECT_EQ(model.UnitFor(misaligned), MathUnit::kSimt);
  EXPECT_GT(model.Gemm(misaligned).seconds, 4 * model.Gemm(aligned).seconds);
  // tf32 needs multiples of 4 and exists from Ampere on.
  const GpuKernelModel a100(Gpu("A100-SXM4-80GB"), cuda10);
  EXPECT_EQ(a100.UnitFor(Gemm(4096, 4096, 4092, hw::Precision::kTf32)), MathUnit::kTensor);
  EXPECT_EQ(model.UnitFor(Gemm(4096, 4096, 4096, hw::Precision::kTf32)), MathUnit::kSimt);
}

TEST(GpuKernelModel, PseudoFp16WithoutTensorCoresRunsAsFp32) {
  // P100 has no tensor cores: fp16 GEMMs run fp32 math (DeepBench's
  // "16 bit inputs, 32 bit multiplication") and take the fp32 time
  // (DeepBench P100: median fp16-pseudo / fp32 time ratio 1.00).
  const GpuKernelModel model(Gpu("P100-SXM2"), GpuKernelParams{});
  const GemmProblem half = Gemm(2048, 2048, 2048, hw::Precision::kFp16);
  const GemmProblem single = Gemm(2048, 2048, 2048, hw::Precision::kFp32);
  EXPECT_EQ(model.UnitFor(half), MathUnit::kSimt);
  EXPECT_DOUBLE_EQ(model.Gemm(half).seconds, model.Gemm(single).seconds);
}

TEST(GpuKernelModel, SkinnyGemmIsBoundByStreamingItsMatrix) {
  // m = k = 8192, n = 1: 268 MB of A in fp32 and 16.8 MFLOP per MB is far
  // below any GPU's flop/byte balance: the time is at least the bytes over
  // the achievable bandwidth (memory_fraction of 900 GB/s).
  GpuKernelParams p;
  const hw::DeviceSpec v100 = Gpu("V100-SXM2-32GB");
  const GpuKernelModel model(v100, p);
  const GemmEstimate e = model.Gemm(Gemm(8192, 1, 8192, hw::Precision::kFp32));
  const double bytes = (8192.0 * 8192 + 8192 + 8192) * 4;
  EXPECT_TRUE(e.memory_bound);
  EXPECT_GE(e.seconds, bytes / (v100.memory_bw_bytes_per_s * p.memory_fraction));
  EXPECT_LE(e.seconds, 1.5 * bytes / (v100.memory_bw_bytes_per_s * p.memory_fraction));
}

TEST(GpuKernelModel, SplitKOnlyWhereTheLibraryHasIt) {
  // 64 x 64 outputs over k = 1M: one tile; split-K spreads k over the SMs
  // (cuBLAS from CUDA 9). With CUDA 8's cuBLAS one SM does it all.
  GpuKernelParams modern, old;
  old.cuda_version = 8;
  const GemmProblem g = Gemm(64, 64, 1 << 20, hw::Precision::kFp32);
  const GemmEstimate split = GpuKernelModel(Gpu("V100-SXM2-32GB"), modern).Gemm(g);
  const GemmEstimate whole = GpuKernelModel(Gpu("V100-SXM2-32GB"), old).Gemm(g);
  EXPECT_GT(split.split_k, 1);
  EXPECT_EQ(whole.split_k, 1);
  EXPECT_LT(split.seconds * 4, whole.seconds);
}

ConvProblem Conv(int c, int hw, int k, int r, int stride, hw::Precision p) {
  ConvProblem x;
  x.n = 32;
  x.c = c;
  x.h = x.w = hw;
  x.k = k;
  x.r = x.s = r;
  x.stride_h = x.stride_w = stride;
  x.pad_h = x.pad_w = r / 2;
  x.precision = p;
  return x;
}

bool IsWinograd(ConvAlgorithm a) {
  return a == ConvAlgorithm::kWinogradFused || a == ConvAlgorithm::kWinogradNonfused;
}

TEST(GpuKernelModel, WinogradFor3x3Stride1Fp32Only) {
  // Lavin & Gray 2016: F(2x2,3x3) does 16 instead of 36 multiplications per
  // 2x2 outputs, F(4x4,3x3) 36 instead of 144; only for 3x3 stride-1
  // filters. ResNet's 3x3 layers in fp32 on V100 pick it (cuDNN does: the
  // DeepBench V100 fp32 sheet runs these shapes with WINOGRAD or
  // WINOGRAD_NONFUSED).
  const GpuKernelModel model(Gpu("V100-SXM2-32GB"), GpuKernelParams{});
  for (ConvPass pass : {ConvPass::kForward, ConvPass::kBackwardData, ConvPass::kBackwardFilter}) {
    SCOPED_TRACE(ConvPassName(pass));
    EXPECT_TRUE(
        IsWinograd(model.Conv(Conv(256, 14, 256, 3, 1, hw::Precision::kFp32), pass).algorithm));
    EXPECT_FALSE(
        IsWinograd(model.Conv(Conv(256, 14, 256, 1, 1, hw::Precision::kFp32), pass).algorithm));
    EXPECT_FALSE(
        IsWinograd(model.Conv(Conv(256, 28, 256, 3, 2, hw::Precision::kFp32), pass).algorithm));
    // Tensor-core math: cuDNN 7's tensor-op convolutions are implicit GEMMs.
    EXPECT_EQ(model.Conv(Conv(256, 14, 256, 3, 1, hw::Precision::kFp16), pass).algorithm,
              ConvAlgorithm::kImplicitGemm);
  }
  EXPECT_EQ(
      model.Conv(Conv(256, 14, 256, 1, 1, hw::Precision::kFp32), ConvPass::kForward).algorithm,
      ConvAlgorithm::kGemm1x1);
  EXPECT_LT(model.ConvWith(Conv(256, 14, 256, 1, 1, hw::Precision::kFp32), ConvPass::kForward,
                           ConvAlgorithm::kWinogradFused),
            0);  // does not apply
}

TEST(GpuKernelModel, StridedDgradWorkDependsOnTheLibrary) {
  // A 1x1 stride-2 convolution's input gradient: cuDNN 5/6 multiply the
  // zeros the stride inserts over all 4x as many input pixels (DeepBench
  // 1080Ti, 56x56x256 -> 128: forward 0.062 ms, dgrad 0.244 ms); cuDNN 7
  // skips the pixels no tap reaches, the forward's work.
  GpuKernelParams old;
  old.cuda_version = 8;
  const ConvProblem c = Conv(1024, 28, 2048, 1, 2, hw::Precision::kFp32);
  const double old_s = GpuKernelModel(Gpu("V100-SXM2-32GB"), old)
                           .ConvWith(c, ConvPass::kBackwardData, ConvAlgorithm::kImplicitGemm);
  const double new_s = GpuKernelModel(Gpu("V100-SXM2-32GB"), GpuKernelParams{})
                           .ConvWith(c, ConvPass::kBackwardData, ConvAlgorithm::kImplicitGemm);
  EXPECT_GT(old_s, 3 * new_s);
}

TEST(GpuKernelModel, NeedsAKnownMicroarchitecture) {
  hw::DeviceSpec cpu = hw::HardwareCatalog::BuiltIn().devices().front();
  cpu.arch = hw::GpuArch::kUnknown;
  EXPECT_THROW(GpuKernelModel(cpu, GpuKernelParams{}), InternalError);
}

// FP8 GEMMs on H100 SXM against published FP8 GEMM speeds. DeepGEMM's README
// (deepseek-ai/DeepGEMM, February 2025; H800 SXM5, the H100 SXM5 die and
// clocks with slower NVLink; NVCC 12.8) reports for its dense FP8 GEMMs
// M x N x K = 4096 x 7168 x 16384: 1358 TFLOPS, and 4096 x 4096 x 7168:
// 1304 TFLOPS. The model's FP8 fraction is taken from DeepGEMM's later best
// figure (1550 TFLOPS, gpu_kernel_model.h), not from these shapes; each must
// come within 15%. FP8 runs on the tensor cores with 1-byte operands.
TEST(GpuKernelModel, Fp8GemmRateOnH100MatchesDeepGemmWithin15Percent) {
  const GpuKernelModel model(Gpu("H100-SXM"), GpuKernelParams{});
  struct Published {
    std::int64_t m, n, k;
    double flop_per_s;
  };
  for (const Published& p : {Published{4096, 7168, 16384, 1358e12},
                             Published{4096, 4096, 7168, 1304e12}}) {
    // cuBLAS terms: m = N (weights' rows), n = M (tokens), TN layout.
    GemmProblem g = Gemm(p.n, p.m, p.k, hw::Precision::kFp8);
    g.a_t = true;
    const GemmEstimate e = model.Gemm(g);
    EXPECT_EQ(e.unit, MathUnit::kTensor);
    const double rate = 2.0 * p.m * p.n * p.k / e.seconds;
    EXPECT_NEAR(rate / p.flop_per_s, 1.0, 0.15)
        << p.m << "x" << p.n << "x" << p.k << ": model " << rate / 1e12 << " TFLOP/s";
  }
}

// The same large GEMM in fp8 and bf16: FP8 is faster, by less than the 2x of
// the peaks (its tensor fraction is lower), and moves half the operand bytes.
TEST(GpuKernelModel, Fp8GemmIsFasterThanBf16ByLessThanThePeakRatio) {
  const GpuKernelModel model(Gpu("H100-SXM"), GpuKernelParams{});
  const double fp8 = model.Gemm(Gemm(12288, 8192, 12288, hw::Precision::kFp8)).seconds;
  const double bf16 = model.Gemm(Gemm(12288, 8192, 12288, hw::Precision::kBf16)).seconds;
  EXPECT_GT(bf16 / fp8, 1.5);
  EXPECT_LT(bf16 / fp8, 2.0);
  EXPECT_EQ(model.ElementBytes(hw::Precision::kFp8), 1);
  // Without FP8 tensor cores (A100) an FP8 GEMM has no tensor unit.
  const GpuKernelModel a100(Gpu("A100-SXM4-80GB"), GpuKernelParams{});
  EXPECT_EQ(a100.UnitFor(Gemm(1024, 1024, 1024, hw::Precision::kFp8)), MathUnit::kSimt);
}

}  // namespace
}  // namespace dtsim::sim
