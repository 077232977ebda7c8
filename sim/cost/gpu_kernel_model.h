// Time of one GPU kernel from its structure: GEMMs as tiles in waves over the
// streaming multiprocessors, convolutions by algorithm, and memory-bound
// kernels by the bytes they move. Replaces the roofline's one efficiency per
// op kind for devices whose microarchitecture the catalog knows
// (DeviceSpec::HasMicroarchitecture).
//
// GEMM (C = A x B, A: m x k, B: k x n, `batch` independent products):
//   - math: fp32 runs on the CUDA cores (SIMT); tf32/fp16/bf16/fp8 run on tensor
//     cores when the GPU has them and, before CUDA 11, the leading dimensions
//     are multiples of 8 (fp16/bf16) or 4 (tf32), the cuBLAS 10 "Tensor Core
//     usage" conditions; otherwise fp16/bf16 run as "pseudo-fp16": 2-byte
//     operands, fp32 math (what cublasGemmEx with an fp32 compute type does
//     on Pascal and on misaligned shapes before CUDA 11).
//   - tiles: the library splits C into Mt x Nt tiles, one per thread block.
//     Candidates are CUTLASS's and cuBLAS's kernel shapes (256x128 down to
//     32x32; cuBLAS kernel names such as volta_sgemm_128x64_nn and
//     volta_h884gemm_256x128_ldg8_nn carry them). Up to 4 blocks share an SM
//     (as many as fit in 128x128 worth of tile), so waves =
//     ceil(tiles / (SMs x blocks per SM)) and a wave lasts as long as one
//     SM's share of it.
//   - a block's speed: the SM's peak (device peak / SMs) x the achievable
//     fraction of peak of the math (fitted) x I / (I + c), where
//     I = Mt Nt / (Mt + Nt) is the tile's reuse (multiply-adds per element
//     loaded) and c the reuse at which a tile runs at half speed (fitted): a
//     small tile spends more of its time loading.
//   - the K loop: k rounded up to the tile's k step (8 SIMT, 32 tensor) plus
//     a fixed pipeline fill worth `k_fill` more elements of k (fitted).
//   - split-K (cuBLAS from CUDA 9, cuDNN's filter gradients always): when the
//     tiles do not fill the SMs, k is split over up to that many more blocks
//     and the fp32 partial sums are reduced through memory (cuBLAS's
//     splitKreduce kernels).
//   - memory: A, B and C cross DRAM once when the smaller of A and B fits in
//     half the L2 (else it is read again by every wave): bytes / (bandwidth x
//     achievable fraction). The kernel takes the longer of compute and memory.
//   - the candidate (tile, split) with the least time is the one picked, as a
//     library's heuristic aims to; plus a fixed cost per kernel.
//
// Convolution (NCHW, `groups` groups; dgrad = gradient wrt the input, wgrad =
// wrt the filter), as cuDNN implements it:
//   - implicit GEMM: fwd m = N P Q, n = K, k = C R S; dgrad m = N H W, n = C,
//     k = K ceil(R / stride) ceil(S / stride) (each input pixel receives that
//     many filter taps; a 1x1 stride-2 dgrad does 4x the forward's work, as
//     DeepBench's times show); wgrad m = K, n = C R S, k = N P Q. Each at the
//     implicit-GEMM fraction of GEMM speed (fitted).
//   - Winograd (3x3, stride 1, dilation 1, CUDA-core math only): fused
//     F(2x2, 3x3), 16 instead of 36 multiplications per 2x2 output tile
//     (Lavin & Gray 2016); non-fused F(4x4, 3x3), 36 instead of 144 per 4x4
//     tile, as 36 batched GEMMs between an input and an output transform
//     that go through memory. Both at their own efficiency (fitted).
//   - 1x1 stride-1 convolutions are plain GEMMs (no im2col).
//   - choice: with tensor-core math, implicit GEMM (cuDNN 7's tensor-op
//     convolutions are implicit-precomputed GEMM); otherwise the fastest of
//     the algorithms that apply, which is what cudnnFind* (PyTorch's
//     cudnn.benchmark, TensorFlow's autotuning, DeepBench) returns. FFT is
//     not modelled: cuDNN picks it for few shapes (2 of 94 per DeepBench
//     sheet), where Winograd or GEMM is priced instead.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "hw/catalog.h"
#include "models/op.h"

namespace dtsim::sim {

// Constants of the kernel model that no datasheet gives. All but
// memory_fraction are fitted to Baidu DeepBench's 4,793 GEMM and
// convolution times (shared/validation/deepbench) by `dtsim validate
// deepbench` (procedure: validation/deepbench_fit.h); results/deepbench/
// reports the error with them and leave-one-GPU-out.
struct GpuKernelParams {
  // The CUDA release whose libraries run the kernels (major version): cuBLAS
  // splits k for skinny GEMMs from 9 on, cuDNN skips a strided dgrad's zeros
  // from 9 on, tensor cores take any alignment from 11 on. Not fitted: a simulation takes a
  // current release; the DeepBench validation sets each sheet's
  // (specs.csv: 7.5, 8.0, 10.1).
  int cuda_version = 12;
  // Fraction of the peak a large tile reaches (128x128 SIMT, 256x128 tensor
  // cores): the library's kernels and the clock the board holds under load.
  // Per generation where DeepBench measured one (index: hw::GpuArch; 0 =
  // none), else the value fitted to every GPU together. Ampere, which
  // DeepBench did not measure, takes Volta's values: the same data-center
  // class of board (Turing's only measured board, the T4, is a 70 W card
  // held far below its boost clock). Hopper's SIMT fraction and half reuse
  // and its Winograd, dgrad and wgrad fractions are fitted on this project's
  // H100 SXM kernel times (scenarios/fit/h100-kernels: ResNet-50's 23
  // distinct convolutions, each pass, and their forward GEMMs; fp32, cuDNN
  // and cuBLAS under PyTorch 2.11, CUDA 13) by `dtsim validate kernels`
  // (FitGenerationParams, every other constant as below); the error with
  // them: results/kernels-h100/, docs/validation.md. Hopper's tensor
  // fraction stays Volta's: no tensor-core rows.
  double simt_fraction = 0.8233;
  double tensor_fraction = 0.7864;
  //                                unknown kepler maxwell pascal volta turing ampere hopper
  std::array<double, 8> simt_fraction_by_arch = {0,      0,      0.6488, 0.9374,
                                                 0.8893, 0.5448, 0.8893, 0.6345};
  std::array<double, 8> tensor_fraction_by_arch = {0, 0, 0, 0, 0.8667, 0.6467, 0.8667, 0.8667};
  // The same for FP8 GEMMs (0 = the generation's tensor fraction). Hopper:
  // not fitted here but taken from DeepGEMM's best published FP8 GEMM on
  // H800 SXM5 (the H100 SXM5 die and clocks), 1550 TFLOPS (DeepGEMM
  // README, April 2025) / 1978.9 dense FP8 peak = 0.783: FP8 tensor cores
  // reach a smaller fraction of their doubled peak than bf16 ones (the board
  // holds its power limit at a lower clock). gpu_kernel_model_test checks
  // the model against DeepGEMM's per-shape figures.
  std::array<double, 8> fp8_tensor_fraction_by_arch = {0, 0, 0, 0, 0, 0, 0, 0.783};
  // Fraction of peak DRAM bandwidth streaming kernels reach. Not fitted:
  // BabelStream's triad reaches about 0.77 (P100) to 0.89 (V100) of the
  // datasheet bandwidth (Deakin et al., "Evaluating attainable memory
  // bandwidth of parallel programming models via BabelStream", 2018).
  double memory_fraction = 0.80;
  double simt_half_reuse = 61.9;  // c of a SIMT tile: I / (I + c)
  std::array<double, 8> simt_half_reuse_by_arch = {0, 0, 482.2, 60.34, 20.09, 14.7, 20.09, 0.9204};
  double tensor_half_reuse = 546.8;      // c of a tensor-core tile
  double k_fill = 12.82;                 // pipeline fill, in elements of k
  double implicit_gemm_fraction = 1.02;  // implicit GEMM speed / GEMM speed
  double winograd_fraction = 0.8105;     // Winograd GEMM speed / GEMM speed
  // cuDNN's backward kernels are other kernels than the forward's: their
  // speed relative to it, for every algorithm (fitted).
  double dgrad_fraction = 0.9115;
  double wgrad_fraction = 0.6248;
  // The Winograd, dgrad and wgrad speeds per generation (each came with its
  // own cuDNN), as the fractions above; 0 = the shared value.
  std::array<double, 8> winograd_fraction_by_arch = {0,      0,      0.655,  0.8186,
                                                     0.9414, 0.8228, 0.9414, 0.7728};
  std::array<double, 8> dgrad_fraction_by_arch = {0,      0,      1.017,  0.8934,
                                                  0.9114, 0.9917, 0.9114, 0.6483};
  std::array<double, 8> wgrad_fraction_by_arch = {0,      0,      0.6356, 0.6045,
                                                  0.8122, 0.6728, 0.8122, 0.6196};
  double kernel_fixed_s = 8.236e-6;  // per kernel: launch to completion of an empty grid
  // Recurrent layers (sim/cost/rnn_kernels.h): cuDNN's per-step GEMMs are its
  // own kernels, launched by the host once per step in a serial loop. Their
  // speed relative to the GEMM model (rnn_step_fraction; backward-data steps
  // also x rnn_dgrad_fraction: other kernels), and the host's time to
  // issue one step (rnn_host_step_s: cuDNN's and cuBLAS's calls for the
  // step's kernels; a step's GEMM takes at least that long, as the GPU
  // waits for the host when its work per step is shorter), fitted on
  // DeepBench's rnn.csv after every other constant
  // (validation/deepbench_fit.h, step 5); per generation (0 = the shared
  // value) as the fractions above: each generation came with its own cuDNN
  // and host. Ampere and Hopper, without recurrent-layer measurements, take
  // Volta's values, as for the fractions above.
  double rnn_step_fraction = 0.7945;
  double rnn_dgrad_fraction = 1.059;
  double rnn_host_step_s = 4.889e-05;
  //                                     unknown kepler maxwell pascal volta turing ampere hopper
  std::array<double, 8> rnn_step_fraction_by_arch = {0, 0, 1.221, 0.5958, 1.033, 0, 1.033, 1.033};
  std::array<double, 8> rnn_dgrad_fraction_by_arch = {0, 0, 1.102, 0.7167, 1.218, 0, 1.218, 1.218};
  std::array<double, 8> rnn_host_step_s_by_arch = {0,         0,        8.817e-05, 4.84e-05,
                                                   4.766e-05, 0,        4.766e-05, 4.766e-05};
  // Per board (catalog name): the clock it holds under load relative to the
  // one its peak is quoted at, which differs between boards of one
  // generation (GPU Boost runs consumer Pascal cards above their rated
  // boost clock; a cooler-limited card runs below). Fitted last, to the
  // DeepBench boards only; any other board takes 1.
  // The fused attention kernel a kAttention op that names none runs (the
  // framework profile's choice); kDefault: the generation's FlashAttention
  // release (sim/cost/flash_attention_table.h).
  models::AttentionKernel default_attention = models::AttentionKernel::kDefault;
  std::map<std::string, double> clock_fraction_by_device = {
      {"GTX-1080Ti", 1.038},      {"M40", 0.97},
      {"P100-PCIe-16GB", 1.038},  {"T4", 1},
      {"TITAN-X-Maxwell", 1.059}, {"TITAN-X-Pascal", 0.9111},
      {"TITAN-Xp", 0.9111},       {"V100-SXM2-16GB", 1},
  };
};

// The share of the kernel model's speed (isolated kernels, as a kernel
// benchmark runs them) that a GPU generation sustains through a training
// run: the clock it holds at its power limit over hours with its node's
// other GPUs at full load against a benchmark's seconds, and the gaps
// between a training step's kernels. Hopper: 0.7525, fitted on the
// llm-h100 development set (14 published H100 pre-training runs) with the
// wait for the slowest GPU in place (slowest_gpu.h), by leave-one-out and
// leave-one-source-out cross-validation (docs/validation.md, "LLM
// pre-training on H100"; results/llm-h100/: held out, median 2.4%, max
// 10.5%), where the kernel model alone predicts every run 22% too fast
// while it predicts this project's cuBLAS GEMMs on an H100
// within 3%. Other generations: 1 (no training runs measured to fit).
// Simulation divides every kernel-model time by it (CostModel); kernel
// listings and kernel validations (`dtsim model --kernels`, `dtsim validate
// kernels`) show the isolated kernels.
double SustainedFraction(hw::GpuArch arch);

// Which units do the multiply-adds.
enum class MathUnit { kSimt, kTensor };
const char* MathUnitName(MathUnit unit);  // "simt", "tensor"

// In cuBLAS's column-major terms: op(A) is m x k, op(B) k x n, C m x n.
struct GemmProblem {
  std::int64_t m = 1, n = 1, k = 1;
  bool a_t = false, b_t = false;  // op(A) = A^T, op(B) = B^T
  std::int64_t batch = 1;         // independent products of this shape
  hw::Precision precision = hw::Precision::kFp32;
  bool accumulate = false;  // C is read too (beta != 0)
};

struct GemmEstimate {
  double seconds = 0;
  MathUnit unit = MathUnit::kSimt;
  int tile_m = 0, tile_n = 0;
  int split_k = 1;
  std::int64_t waves = 0;
  bool memory_bound = false;
};

// A fused attention kernel (FlashAttention): `heads` independent (S x D)
// query, key and value blocks (batch x heads of this rank), causal or not.
struct AttentionProblem {
  std::int64_t heads = 1;     // batch x query heads
  std::int64_t seq = 1;       // S
  std::int64_t head_dim = 1;  // D
  bool causal = false;
  bool backward = false;      // the backward kernel (dQ, dK, dV)
  models::AttentionKernel kernel = models::AttentionKernel::kDefault;  // which fused kernel
  hw::Precision precision = hw::Precision::kFp32;
};

enum class ConvPass { kForward, kBackwardData, kBackwardFilter };
const char* ConvPassName(ConvPass pass);  // "fwd", "dgrad", "wgrad"

enum class ConvAlgorithm { kImplicitGemm, kGemm1x1, kWinogradFused, kWinogradNonfused };
const char* ConvAlgorithmName(ConvAlgorithm algorithm);

struct ConvProblem {
  std::int64_t n = 1;                // batch
  std::int64_t c = 1, h = 1, w = 1;  // input channels, height, width
  std::int64_t k = 1;                // output channels (filters)
  int r = 1, s = 1;                  // filter height, width
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int groups = 1;
  hw::Precision precision = hw::Precision::kFp32;
  std::int64_t p() const { return (h + 2 * pad_h - r) / stride_h + 1; }  // output height
  std::int64_t q() const { return (w + 2 * pad_w - s) / stride_w + 1; }  // output width
};

struct ConvEstimate {
  double seconds = 0;
  ConvAlgorithm algorithm = ConvAlgorithm::kImplicitGemm;
  GemmEstimate gemm;  // of the algorithm's main GEMM
};

class GpuKernelModel {
 public:
  // REQUIRES: device.HasMicroarchitecture() (DTSIM_CHECK).
  GpuKernelModel(hw::DeviceSpec device, GpuKernelParams params);

  GemmEstimate Gemm(const GemmProblem& g) const;
  // One step's GEMM of a recurrent layer's serial loop (sim/cost/rnn_kernels.h):
  // Gemm at the recurrent-step speed (GpuKernelParams::rnn_step_fraction,
  // x rnn_dgrad_fraction for a backward-data step), or the host's time to
  // issue a step (rnn_host_step_s) when that is longer.
  GemmEstimate RecurrentStepGemm(const GemmProblem& g, bool backward) const;
  // One tile shape and split, no choice: the building block of Gemm.
  GemmEstimate GemmWithTile(const GemmProblem& g, int tile_m, int tile_n, int split_k) const;
  ConvEstimate Conv(const ConvProblem& c, ConvPass pass) const;
  // The time of `algorithm`, or a negative value when it does not apply.
  double ConvWith(const ConvProblem& c, ConvPass pass, ConvAlgorithm algorithm,
                  GemmEstimate* gemm = nullptr) const;
  // A kernel that streams `bytes` through DRAM.
  double StreamSeconds(double bytes) const;
  // A fused attention kernel: the FLOPs it executes (forward 4 S^2 D per
  // head, backward 2.5 times that with its recomputation of Q K^T; half of
  // each when causal) at the fraction of the tensor-core peak the published
  // FlashAttention kernels reach on this generation at this head size and
  // length (sim/cost/flash_attention_table.h), or its bytes' time when that is
  // longer. REQUIRES: a generation FlashAttention runs on
  // (FlashReleaseFor(arch) != kNone; the simulator refuses the others).
  double AttentionSeconds(const AttentionProblem& a) const;

  // The unit a GEMM of this shape and precision runs on.
  MathUnit UnitFor(const GemmProblem& g) const;
  int ElementBytes(hw::Precision p) const;  // 4 for fp32/tf32, 2 for fp16/bf16, 1 for fp8

  const hw::DeviceSpec& device() const { return device_; }
  const GpuKernelParams& params() const { return params_; }
  // The fraction of peak a large tile reaches on this device: its
  // generation's, times its board's clock fraction.
  double Fraction(MathUnit unit) const;
  // The same for a GEMM in precision `p`: FP8 tensor-core GEMMs take
  // fp8_tensor_fraction_by_arch.
  double Fraction(MathUnit unit, hw::Precision p) const;

 private:
  double MemorySeconds(double bytes) const;
  // The same for precision `p`, with `aligned` telling whether the operands
  // meet cuBLAS 10's (and cuDNN 7's channel) alignment for tensor cores.
  MathUnit UnitFor(hw::Precision p, bool aligned) const;
  // by_arch[this device's generation], or `shared` where that is 0.
  double ByArch(const std::array<double, 8>& by_arch, double shared) const;
  // A GEMM on `unit` at `fraction_scale` x the unit's fraction of peak;
  // `bytes` < 0: the GEMM's own operands cross memory.
  GemmEstimate GemmCore(const GemmProblem& g, MathUnit unit, double fraction_scale, double bytes,
                        int tile_m, int tile_n, int split_k) const;
  GemmEstimate BestGemm(const GemmProblem& g, MathUnit unit, double fraction_scale, double bytes,
                        bool allow_split) const;

  hw::DeviceSpec device_;
  GpuKernelParams params_;
};

}  // namespace dtsim::sim
