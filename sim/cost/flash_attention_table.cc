#include "sim/cost/flash_attention_table.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "common/error.h"

namespace dtsim::sim {
namespace {

// Measured sequence lengths of both papers' benchmarks: 512 ... 16k, the
// batch chosen so that batch x seq = 16k tokens, hidden 2048 (heads =
// 2048 / head size).
constexpr std::array<double, 6> kSeqs = {512, 1024, 2048, 4096, 8192, 16384};
// TFLOP/s at kSeqs, read from the figures' bar labels (each paper counts
// 4 S^2 D FLOPs per head forward, half of it causal). These were read from
// memory of the figures, not re-checked against the PDFs: confirm a value
// against its figure before quoting it to the unit.
using Curve = std::array<double, 6>;

struct Measured {
  double peak_tflops;  // dense fp16/bf16 peak of the GPU measured
  Curve d64, d128, d64_causal, d128_causal;
};

// FlashAttention-2 forward on A100 SXM4 80GB, fp16 (Dao 2023,
// "FlashAttention-2: Faster Attention with Better Parallelism and Work
// Partitioning", Figure 5, "Attention forward speed on A100 GPU", panels
// (a)-(d): without/with causal mask, head dim 64/128; the FlashAttention-2
// bars). Peak 312 TFLOP/s (A100 datasheet, dense fp16). The 227 TFLOP/s at
// head dim 128, 16k is the paper's "up to 73% of the theoretical maximum
// FLOPs/s" in the forward pass (§4.1).
constexpr Measured kA100Fa2 = {
    312,
    {136, 159, 171, 178, 180, 181},
    {160, 198, 212, 222, 224, 227},
    {76, 104, 132, 152, 165, 172},
    {88, 131, 166, 196, 213, 222},
};

// FlashAttention-3 forward on H100 SXM5, fp16/bf16 (Shah et al. 2024,
// "FlashAttention-3: Fast and Accurate Attention with Asynchrony and
// Low-precision", Figure 5, "Attention forward speed (FP16/BF16) on H100
// SXM5", head dim 64 and 128 panels, without and with causal mask; the
// FlashAttention-3 bars). Peak 989 TFLOP/s (H100 SXM5 datasheet, dense).
constexpr Measured kH100Fa3 = {
    989,
    {333, 387, 441, 472, 489, 497},
    {497, 591, 642, 661, 667, 661},
    {197, 269, 363, 425, 467, 480},
    {274, 392, 499, 583, 615, 640},
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

double FlashForwardFraction(hw::GpuArch arch, std::int64_t head_dim, bool causal,
                            std::int64_t seq) {
  const FlashRelease release = FlashReleaseFor(arch);
  DTSIM_CHECK(release != FlashRelease::kNone && head_dim > 0 && seq > 0,
              "no FlashAttention table for this problem");
  const Measured& m = release == FlashRelease::kFa3 ? kH100Fa3 : kA100Fa2;
  const double s = static_cast<double>(seq);
  const double at64 = AtSeq(causal ? m.d64_causal : m.d64, s);
  const double at128 = AtSeq(causal ? m.d128_causal : m.d128, s);
  const double t = std::clamp((static_cast<double>(head_dim) - 64) / 64, 0.0, 1.0);
  const double fraction = (at64 + t * (at128 - at64)) / m.peak_tflops;
  return release == FlashRelease::kFa1 ? fraction / 2 : fraction;
}

double FlashBackwardRatio(hw::GpuArch arch) {
  // Ampere and Turing: FlashAttention-2 reaches "up to 73% of the theoretical
  // maximum FLOPs/s" forward and "up to 63%" backward (Dao 2023, §4.1):
  // 63 / 73. Hopper: FlashAttention-3's backward at head dim 128, 16k,
  // 561 TFLOP/s (Shah et al. 2024, Figure 6, backward FP16/BF16 on H100
  // SXM5) over its forward's 661 (Figure 5).
  return FlashReleaseFor(arch) == FlashRelease::kFa3 ? 561.0 / 661.0 : 63.0 / 73.0;
}

}  // namespace dtsim::sim
