// The GPU kernels each model op launches, forward and backward, as a
// framework without fusion launches them (PyTorch eager, cuBLAS/cuDNN):
//   dense     fwd: 1 GEMM; dgrad: 1 GEMM; wgrad: 1 GEMM (+ a bias-gradient
//             reduction when the layer has a bias)
//   conv2d    fwd: 1 convolution (+ a bias add); dgrad: 1; wgrad: 1 (+ bias
//             gradient)
//   matmul    fwd: 1 batched GEMM; backward: 2 batched GEMMs (both inputs)
//   attention fwd: 1 fused kernel; dgrad: 1 fused kernel (FlashAttention)
//   recurrent fwd: the input projection as 1 GEMM over all steps, then per
//             step 1 GEMM of the hidden state and 1 pointwise kernel (cuDNN's
//             non-persistent algorithm); dgrad: per step 1 GEMM and 1
//             pointwise kernel, then 1 GEMM for the input gradient; wgrad: 2
//             GEMMs over all steps (input and hidden weights) and the bias
//             reduction
//   others    one memory-bound kernel per pass, priced by the bytes the op
//             moves (models/op.h: FwdBytes, BwdBytes; an embedding's forward
//             gathers its rows, not the table; its weight gradient is dense,
//             as PyTorch's default, and writes the whole table)
// GEMMs are written in cuBLAS's column-major terms with PyTorch's operand
// order (a row-major y = x W^T is C = op(W) op(x) with m = out features,
// n = rows, k = in features), so the tensor-core alignment test sees the
// leading dimensions PyTorch passes. A tensor-parallel shard's dense and
// matmul ops are this rank's part (OpAttrs::tensor_split). Which kernels a framework fuses is the
// framework profile's choice (next: issue 12); this list is the unfused one.
#pragma once

#include <string>
#include <vector>

#include "models/op.h"
#include "plan/plan.h"
#include "sim/gpu_kernel_model.h"

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
};

// The kernels of `op` for compute task kind `kind` (kForward,
// kBackwardInput or kBackwardWeight) on `batch` samples, math in
// `precision`. Empty for ops that launch nothing (reshapes, inputs).
std::vector<KernelCall> OpKernels(const models::Op& op, plan::TaskKind kind, int batch,
                                  hw::Precision precision);

// The time of one kernel on `model`'s device.
double KernelSeconds(const GpuKernelModel& model, const KernelCall& kernel);
// "gemm m=1024 n=8192 k=4096 tensor 256x128 waves=2", "conv implicit_gemm
// ...", "stream 12.6 MB": what the model makes of it, for dtsim model
// --kernels.
std::string DescribeKernel(const GpuKernelModel& model, const KernelCall& kernel);

}  // namespace dtsim::sim
