#include "sim/cost/flash_attention_table.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "common/error.h"

namespace dtsim::sim {
namespace {

using models::AttentionKernel;

// Measured sequence lengths of both papers' benchmarks: 512 ... 16k, the
// batch chosen so that batch x seq = 16k tokens, hidden 2048 (heads =
// 2048 / head size). Each paper counts 4 S^2 D FLOPs per head forward
// (half of it causal) and 2.5 times that backward.
constexpr std::array<double, 6> kSeqs = {512, 1024, 2048, 4096, 8192, 16384};
using Curve = std::array<double, 6>;  // TFLOP/s at kSeqs

struct Measured {
  double peak_tflops;  // dense fp16/bf16 peak of the GPU measured
  Curve d64, d128, d64_causal, d128_causal;
  Curve bwd_d128;      // backward, head dim 128, no mask
};

// FlashAttention-2 forward on A100 SXM4 80GB, fp16 (Dao 2023,
// "FlashAttention-2: Faster Attention with Better Parallelism and Work
// Partitioning", Figure 5, panels (a)-(d): without/with causal mask, head
// dim 64/128; the FlashAttention-2 bars). Peak 312 TFLOP/s (A100
// datasheet, dense fp16). These bar values were written from memory of the
// figure, not re-read from it; the 227 TFLOP/s at head dim 128, 16k is the
// paper's text, "up to 73% of the theoretical maximum FLOPs/s" forward
// (§4.1). Backward: "up to 63%" (§4.1), i.e. the forward curve x 63 / 73.
constexpr Measured kA100Fa2 = {
    312,
    {136, 159, 171, 178, 180, 181},
    {160, 198, 212, 222, 224, 227},
    {76, 104, 132, 152, 165, 172},
    {88, 131, 166, 196, 213, 222},
    {160 * 63.0 / 73, 198 * 63.0 / 73, 212 * 63.0 / 73, 222 * 63.0 / 73, 224 * 63.0 / 73,
     227 * 63.0 / 73},
};

// H100 SXM5 80GB, bf16/fp16, the bars of Shah et al. 2024,
// "FlashAttention-3: Fast and Accurate Attention with Asynchrony and
// Low-precision": Figure 5 (forward; panels without causal mask at head
// dim 64 and 128, with causal mask at head dim 128) and Figure 6 (backward,
// head dim 128), each figure comparing FlashAttention-2, cuDNN and
// FlashAttention-3 (and standard attention, Triton) on one H100. The bar
// labels were read through a transcription of the figures; two
// transcriptions of Figure 5's head-dim-128 panel swap cuDNN's and
// FlashAttention-3's values at 512 (497/467): FlashAttention-3 497 is
// taken. Head dim 64 with causal mask was not transcribed: it is the head
// dim 128 causal curve scaled by the head dim 64 / 128 ratio without mask.
// Peak 989 TFLOP/s (H100 SXM5 datasheet, dense).
constexpr Measured kH100Fa2 = {
    989,
    {282, 306, 318, 321, 322, 324},
    {309, 350, 362, 368, 370, 370},
    {0, 0, 0, 0, 0, 0},
    {191, 260, 298, 319, 333, 335},
    {214, 260, 291, 310, 318, 322},
};
constexpr Measured kH100Cudnn = {
    989,
    {335, 373, 395, 408, 412, 413},
    {467, 574, 617, 609, 600, 595},
    {0, 0, 0, 0, 0, 0},
    {315, 410, 484, 518, 529, 539},
    {305, 408, 465, 499, 518, 516},
};
constexpr Measured kH100Fa3 = {
    989,
    {333, 392, 460, 476, 496, 497},
    {497, 565, 625, 638, 646, 648},
    {0, 0, 0, 0, 0, 0},
    {292, 423, 521, 579, 602, 616},
    {316, 424, 501, 542, 559, 561},
};

// Linear in log2(seq) between the measured lengths, constant outside.
double AtSeq(const Curve& c, double seq) {
  if (seq <= kSeqs.front()) return c.front();
  if (seq >= kSeqs.back()) return c.back();
  std::size_t i = 1;
  while (kSeqs[i] < seq) ++i;
  const double t = std::log2(seq / kSeqs[i - 1]) / std::log2(kSeqs[i] / kSeqs[i - 1]);
  return c[i - 1] + t * (c[i] - c[i - 1]);
}

const Measured& TableFor(hw::GpuArch arch, AttentionKernel kernel) {
  if (arch != hw::GpuArch::kHopper) return kA100Fa2;
  switch (kernel) {
    case AttentionKernel::kFa2:
    case AttentionKernel::kSdpa: return kH100Fa2;
    case AttentionKernel::kCudnn: return kH100Cudnn;
    default: return kH100Fa3;
  }
}

}  // namespace

FlashRelease FlashReleaseFor(hw::GpuArch arch) {
  switch (arch) {
    case hw::GpuArch::kHopper: return FlashRelease::kFa3;
    case hw::GpuArch::kAmpere: return FlashRelease::kFa2;
    case hw::GpuArch::kTuring: return FlashRelease::kFa1;
    default: return FlashRelease::kNone;
  }
}

const char* FlashReleaseName(FlashRelease release) {
  switch (release) {
    case FlashRelease::kFa1: return "fa1";
    case FlashRelease::kFa2: return "fa2";
    case FlashRelease::kFa3: return "fa3";
    case FlashRelease::kNone: break;
  }
  return "none";
}

AttentionKernel ResolveAttentionKernel(hw::GpuArch arch, AttentionKernel kernel) {
  if (kernel != AttentionKernel::kDefault) return kernel;
  return FlashReleaseFor(arch) == FlashRelease::kFa3 ? AttentionKernel::kFa3 : AttentionKernel::kFa2;
}

std::string AttentionKernelProblem(hw::GpuArch arch, AttentionKernel kernel) {
  const FlashRelease release = FlashReleaseFor(arch);
  if (release == FlashRelease::kNone)
    return "no fused attention kernel runs on this GPU generation (FlashAttention needs Turing or later)";
  const AttentionKernel k = ResolveAttentionKernel(arch, kernel);
  if (k == AttentionKernel::kFa3 && arch != hw::GpuArch::kHopper)
    return "FlashAttention-3 runs on Hopper GPUs only (flash-attn README)";
  if (k == AttentionKernel::kCudnn && arch != hw::GpuArch::kHopper)
    return "dtsim has published figures for cuDNN's fused attention on Hopper only "
           "(FlashAttention-3 paper, Figure 5)";
  if (kernel != AttentionKernel::kDefault && release == FlashRelease::kFa1)
    return "Turing runs FlashAttention 1.x only: name it `flash`";
  return "";
}

double AttentionKernelFraction(hw::GpuArch arch, AttentionKernel kernel, std::int64_t head_dim,
                               bool causal, std::int64_t seq, bool backward) {
  DTSIM_CHECK(AttentionKernelProblem(arch, kernel).empty() && head_dim > 0 && seq > 0,
              "no fused attention table for this problem");
  const Measured& m = TableFor(arch, ResolveAttentionKernel(arch, kernel));
  const double s = static_cast<double>(seq);
  const double t = std::clamp((static_cast<double>(head_dim) - 64) / 64, 0.0, 1.0);
  const double nc64 = AtSeq(m.d64, s), nc128 = AtSeq(m.d128, s);
  double at64 = nc64, at128 = nc128;
  if (causal) {
    at128 = AtSeq(m.d128_causal, s);
    at64 = m.d64_causal[0] > 0 ? AtSeq(m.d64_causal, s) : at128 * nc64 / nc128;
  }
  double tflops = at64 + t * (at128 - at64);
  // Backward: the forward's problem at the measured backward / forward ratio
  // (head dim 128, no mask: the one backward panel).
  if (backward) tflops *= AtSeq(m.bwd_d128, s) / nc128;
  const double fraction = tflops / m.peak_tflops;
  return FlashReleaseFor(arch) == FlashRelease::kFa1 ? fraction / 2 : fraction;
}

double FlashForwardFraction(hw::GpuArch arch, std::int64_t head_dim, bool causal,
                            std::int64_t seq) {
  return AttentionKernelFraction(arch, AttentionKernel::kDefault, head_dim, causal, seq, false);
}

}  // namespace dtsim::sim
