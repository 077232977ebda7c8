// The GPU kernels each model op launches, forward and backward, as a
// framework without fusion launches them (PyTorch eager, cuBLAS/cuDNN):
//   dense     fwd: 1 GEMM; dgrad: 1 GEMM; wgrad: 1 GEMM (+ a bias-gradient
//             reduction when the layer has a bias)
//   conv2d    fwd: 1 convolution (+ a bias add); dgrad: 1; wgrad: 1 (+ bias
//             gradient)
//   matmul    fwd: 1 batched GEMM; backward: 2 batched GEMMs (both inputs)
//   attention fwd: 1 fused kernel; dgrad: 1 fused kernel (FlashAttention)
//   recurrent cuDNN's standard algorithm (sim/cost/rnn_kernels.h): fwd: the
//             input projection as 1 GEMM over all steps, then per step 1
//             GEMM of the hidden state and 1 pointwise kernel; dgrad: per
//             step 1 pointwise kernel and 1 GEMM, then 1 GEMM for the input
//             gradient; wgrad: 2 GEMMs over all steps (input and hidden
//             weights) and the bias reduction
//   others    one memory-bound kernel per pass, priced by the bytes the op
//             moves (models/op.h: FwdBytes, BwdBytes; an embedding's forward
//             gathers its rows, not the table; its weight gradient is dense,
//             as PyTorch's default, and writes the whole table)
// In fp8 (hw::Precision::kFp8), as NVIDIA Transformer Engine trains with
// fp8_autocast ("Using FP8 with Transformer Engine", TE documentation;
// Micikevicius et al. 2022, "FP8 Formats for Deep Learning"): only the
// GEMMs of linear (dense) layers run on FP8 tensor cores, with the "hybrid"
// recipe's E4M3 inputs and weights and E5M2 gradients and delayed scaling
// from an amax history. Attention's matmuls and fused kernels, norms,
// softmax, element-wise ops, convolutions, recurrent layers and the
// optimizer stay bf16/fp32 (te.Linear, LayerNormLinear and LayerNormMLP are
// what fp8_autocast changes). A dense layer's kernels become
//   fwd       cast of the input to FP8 (+ its transpose, kept for wgrad),
//             FP8 GEMM
//   dgrad     cast of the output gradient to FP8 (+ its transpose, for
//             wgrad), FP8 GEMM
//   wgrad     FP8 GEMM of the two transposed copies (+ bias gradient)
// The weight's cast (Fp8WeightCastKernels) runs once per step and layer:
// Megatron-LM's TE layers pass is_first_microbatch, so TE casts and
// transposes a weight on a step's first micro-batch and reuses the FP8 copy
// on the others (TE alone, without the flag, casts at every forward). The
// amax and scale update (Fp8ScaleUpdateKernel) is one fused kernel over all
// FP8 tensors per forward and per backward of a micro-batch on a device.
// The simulator prices both per step (sim/cost/plan_costs.h).
// GEMMs are written in cuBLAS's column-major terms with PyTorch's operand
// order (a row-major y = x W^T is C = op(W) op(x) with m = out features,
// n = rows, k = in features), so the tensor-core alignment test sees the
// leading dimensions PyTorch passes. A tensor-parallel shard's dense and
// matmul ops are this rank's part (OpAttrs::tensor_split). Which kernels a framework fuses is the
// framework profile's choice; this list is the unfused one.
#pragma once

#include <string>
#include <vector>

#include "models/op.h"
#include "plan/plan.h"
#include "sim/cost/gpu_kernel_model.h"

namespace dtsim::sim {

struct KernelCall {
  enum class Type { kGemm, kConv, kStream, kAttention };
  Type type = Type::kStream;
  std::string name;  // e.g. "fwd gemm", "dgrad conv", "bias grad"
  GemmProblem gemm;  // kGemm
  ConvProblem conv;  // kConv
  ConvPass pass = ConvPass::kForward;
  double bytes = 0;  // kStream
  AttentionProblem attention;  // kAttention
  // Launched this many times one after another (a recurrent layer's steps).
  std::int64_t repeat = 1;
  // A recurrent layer's per-step GEMM (sim/cost/rnn_kernels.h), priced by
  // GpuKernelModel::RecurrentStepGemm.
  enum class Step { kNone, kForward, kBackward };
  Step step = Step::kNone;
};

// The kernels of `op` for compute task kind `kind` (kForward,
// kBackwardInput or kBackwardWeight) on `batch` samples, math in
// `precision`. Empty for ops that launch nothing (reshapes, inputs).
// One GEMM (`batch` independent products) or one streaming kernel, launched
// once: the building blocks of the kernel lists.
KernelCall GemmCall(std::string name, std::int64_t m, std::int64_t n, std::int64_t k, bool a_t,
                    bool b_t, std::int64_t batch, hw::Precision precision);
KernelCall StreamCall(std::string name, double bytes);

std::vector<KernelCall> OpKernels(const models::Op& op, plan::TaskKind kind, int batch,
                                  hw::Precision precision);

// Names of fp8's cast and scale-update kernels start with this.
inline constexpr const char* kFp8CastPrefix = "fp8 cast ";
// Amax history length of the delayed-scaling recipe: Transformer Engine's
// DelayedScaling default amax_history_len = 1024.
inline constexpr int kFp8AmaxHistory = 1024;

// In fp8: the cast of a dense layer's weight (this rank's part) to FP8 and
// its FP8 transpose, once per step (see above). Empty for other ops and
// precisions.
std::vector<KernelCall> Fp8WeightCastKernels(const models::Op& op, hw::Precision precision);
// The amax and scale update of `fp8_tensors` FP8 tensors, one kernel.
KernelCall Fp8ScaleUpdateKernel(int fp8_tensors);
// True for fp8's FP8 GEMMs and its casts and scale updates; `*cast`
// (optional) tells which of the two.
bool IsFp8Kernel(const KernelCall& kernel, bool* cast = nullptr);

// The time of one kernel on `model`'s device.
double KernelSeconds(const GpuKernelModel& model, const KernelCall& kernel);
// "gemm m=1024 n=8192 k=4096 tensor 256x128 waves=2", "conv implicit_gemm
// ...", "stream 12.6 MB": what the model makes of it, for dtsim model
// --kernels.
std::string DescribeKernel(const GpuKernelModel& model, const KernelCall& kernel);

}  // namespace dtsim::sim
