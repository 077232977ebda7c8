// Published throughput of fused attention kernels, by GPU generation,
// kernel, head size and sequence length: what GpuKernelModel::
// AttentionSeconds prices a fused attention (models::OpKind::kAttention)
// from.
#pragma once

#include <cstdint>

#include "hw/catalog.h"
#include "models/op.h"

namespace dtsim::sim {

// The FlashAttention release that runs on a generation, as the flash-attn
// repository's README states (Dao-AILab/flash-attention):
//   FlashAttention-3 (Shah et al. 2024): Hopper;
//   FlashAttention-2 (Dao 2023): "Ampere, Ada, or Hopper GPUs";
//   FlashAttention 1.x (Dao et al. 2022): Turing and Ampere ("please use
//     FlashAttention 1.x for Turing GPUs");
//   Volta and earlier: none (kNone): a scenario with attention: flash on
//     them is refused (sim/simulator.cc).
enum class FlashRelease { kNone, kFa1, kFa2, kFa3 };
FlashRelease FlashReleaseFor(hw::GpuArch arch);
const char* FlashReleaseName(FlashRelease release);  // "none", "fa1", "fa2", "fa3"

// The kernel `kernel` stands for on `arch`: kDefault is the generation's
// FlashAttention release (FlashReleaseFor), kSdpa PyTorch's flash backend,
// FlashAttention-2 (PyTorch 2.2 release notes: "FlashAttention-2 in
// scaled_dot_product_attention"). Empty message when the generation has
// published figures for it; else why not (FlashAttention-3 runs on Hopper
// only; cuDNN's and FlashAttention-2's figures here are Hopper's and, for
// FlashAttention-2, Ampere's).
models::AttentionKernel ResolveAttentionKernel(hw::GpuArch arch, models::AttentionKernel kernel);
std::string AttentionKernelProblem(hw::GpuArch arch, models::AttentionKernel kernel);

// Fraction of the dense fp16/bf16 tensor-core peak that the kernel reaches
// for (batch x heads) blocks of `seq` x `head_dim`, causal or not, forward
// or backward (the backward executes 2.5 times the forward's FLOPs): the
// papers' measured TFLOP/s over the measuring GPU's peak, interpolated
// linearly in log2(seq) between the measured lengths 512 ... 16384 (held
// constant outside them) and linearly in head_dim between 64 and 128 (held
// outside). Turing (FlashAttention 1.x) takes half of Ampere's: Dao 2023's
// abstract, "around 2x speedup compared to FlashAttention".
// REQUIRES: AttentionKernelProblem(arch, kernel) empty, head_dim > 0, seq > 0.
double AttentionKernelFraction(hw::GpuArch arch, models::AttentionKernel kernel,
                               std::int64_t head_dim, bool causal, std::int64_t seq,
                               bool backward);

// The generation's default kernel's forward fraction (kDefault, forward).
double FlashForwardFraction(hw::GpuArch arch, std::int64_t head_dim, bool causal,
                            std::int64_t seq);

}  // namespace dtsim::sim
