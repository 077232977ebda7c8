#include "sim/cost/gpu_kernel_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "common/error.h"
#include "sim/cost/flash_attention_table.h"

namespace dtsim::sim {
namespace {

struct Tile {
  int m, n;
};
// Thread-block tiles of CUTLASS's default GEMM configurations and of cuBLAS's
// kernel names; the same set for both units (tensor-core kernels of every
// generation come in these sizes too).
// SIMT kernels stop at 128x128 (cuBLAS's sgemm_128x128 is its largest).
constexpr Tile kTiles[] = {{256, 128},
                           {128, 256},
                           {128, 128},
                           {128, 64},
                           {64, 128},
                           {64, 64},
                           {128, 32},
                           {32, 128},
                           {64, 32},
                           {32, 64},
                           {32, 32},
                           {128, 16},
                           {16, 128},
                           {64, 16},
                           {16, 64},
                           // Narrow kernels for a dimension of a few (GEMV-like
                           // cuBLAS kernels, cuDNN's few-channel convolutions).
                           {256, 8},
                           {8, 256},
                           {256, 4},
                           {4, 256}};
constexpr int kSplits[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};

// Reuse of a tile: multiply-adds per element of A and B it loads per k step.
double Reuse(double tm, double tn) { return tm * tn / (tm + tn); }

std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

double SustainedFraction(hw::GpuArch arch) { return arch == hw::GpuArch::kHopper ? 0.7525 : 1.0; }

const char* MathUnitName(MathUnit unit) { return unit == MathUnit::kSimt ? "simt" : "tensor"; }

const char* ConvPassName(ConvPass pass) {
  switch (pass) {
    case ConvPass::kForward:
      return "fwd";
    case ConvPass::kBackwardData:
      return "dgrad";
    case ConvPass::kBackwardFilter:
      return "wgrad";
  }
  return "?";
}

const char* ConvAlgorithmName(ConvAlgorithm algorithm) {
  switch (algorithm) {
    case ConvAlgorithm::kImplicitGemm:
      return "implicit_gemm";
    case ConvAlgorithm::kGemm1x1:
      return "gemm_1x1";
    case ConvAlgorithm::kWinogradFused:
      return "winograd";
    case ConvAlgorithm::kWinogradNonfused:
      return "winograd_nonfused";
  }
  return "?";
}

GpuKernelModel::GpuKernelModel(hw::DeviceSpec device, GpuKernelParams params)
    : device_(std::move(device)), params_(params) {
  DTSIM_CHECK(device_.HasMicroarchitecture(),
              "device '" + device_.name + "' has no SM count or architecture");
}

int GpuKernelModel::ElementBytes(hw::Precision p) const {
  if (p == hw::Precision::kFp8) return 1;
  return p == hw::Precision::kFp16 || p == hw::Precision::kBf16 ? 2 : 4;
}

MathUnit GpuKernelModel::UnitFor(const GemmProblem& g) const {
  // cuBLAS 10 "Tensor Core usage": leading dimensions (column-major) are
  // multiples of 16 bytes.
  const std::int64_t align = g.precision == hw::Precision::kTf32  ? 4
                            : g.precision == hw::Precision::kFp8 ? 16
                                                                 : 8;
  const std::int64_t lda = g.a_t ? g.k : g.m;
  const std::int64_t ldb = g.b_t ? g.n : g.k;
  const std::int64_t ldc = g.m;
  return UnitFor(g.precision, lda % align == 0 && ldb % align == 0 && ldc % align == 0);
}

MathUnit GpuKernelModel::UnitFor(hw::Precision p, bool aligned) const {
  double rate = 0;
  switch (p) {
    case hw::Precision::kFp32: return MathUnit::kSimt;
    case hw::Precision::kTf32: rate = device_.tf32_flop_per_s; break;
    case hw::Precision::kFp16: rate = device_.fp16_flop_per_s; break;
    case hw::Precision::kBf16: rate = device_.bf16_flop_per_s; break;
    case hw::Precision::kFp8: rate = device_.fp8_flop_per_s; break;
  }
  if (!device_.HasTensorCores() || rate <= 0) return MathUnit::kSimt;
  // cuBLAS 11 and later use tensor cores whatever the alignment (cuBLAS
  // documentation, "Tensor Core Usage": the restrictions were lifted, best
  // performance stays with multiples of 16 bytes); priced here as if the
  // dimensions were padded, which the tiles do anyway.
  return params_.cuda_version >= 11 || aligned ? MathUnit::kTensor : MathUnit::kSimt;
}

double GpuKernelModel::ByArch(const std::array<double, 8>& by_arch, double shared) const {
  const double v = by_arch[static_cast<std::size_t>(device_.arch)];
  return v > 0 ? v : shared;
}

double GpuKernelModel::Fraction(MathUnit unit) const {
  const auto it = params_.clock_fraction_by_device.find(device_.name);
  const double clock = it == params_.clock_fraction_by_device.end() ? 1.0 : it->second;
  return clock * (unit == MathUnit::kSimt
                      ? ByArch(params_.simt_fraction_by_arch, params_.simt_fraction)
                      : ByArch(params_.tensor_fraction_by_arch, params_.tensor_fraction));
}

double GpuKernelModel::Fraction(MathUnit unit, hw::Precision p) const {
  if (unit != MathUnit::kTensor || p != hw::Precision::kFp8) return Fraction(unit);
  const auto it = params_.clock_fraction_by_device.find(device_.name);
  const double clock = it == params_.clock_fraction_by_device.end() ? 1.0 : it->second;
  return clock * ByArch(params_.fp8_tensor_fraction_by_arch,
                        ByArch(params_.tensor_fraction_by_arch, params_.tensor_fraction));
}

double GpuKernelModel::MemorySeconds(double bytes) const {
  return bytes / (device_.memory_bw_bytes_per_s * params_.memory_fraction);
}

double GpuKernelModel::StreamSeconds(double bytes) const {
  return MemorySeconds(bytes) + params_.kernel_fixed_s;
}

double GpuKernelModel::AttentionSeconds(const AttentionProblem& a) const {
  DTSIM_CHECK(a.heads > 0 && a.seq > 0 && a.head_dim > 0, "empty attention problem");
  const double s = static_cast<double>(a.seq), d = static_cast<double>(a.head_dim);
  const double heads = static_cast<double>(a.heads);
  // FlashAttention-2 (Dao 2023, section 4.1) counts 4 S^2 D forward FLOPs per
  // head, 2.5 times that backward (5 GEMMs against 2), halved when causal.
  double flops = 4 * s * s * d * heads * (a.backward ? 2.5 : 1.0);
  if (a.causal) flops /= 2;
  // The published kernel's fraction of the tensor-core peak at this head
  // size and length (sim/cost/flash_attention_table.h); the backward's is lower.
  const models::AttentionKernel kernel =
      a.kernel != models::AttentionKernel::kDefault ? a.kernel : params_.default_attention;
  const double fraction =
      AttentionKernelFraction(device_.arch, kernel, a.head_dim, a.causal, a.seq, a.backward);
  const double compute = flops / (device_.PeakFlopRate(a.precision) * fraction);
  // Q, K, V and O (and dO, dQ, dK, dV backward) cross memory once.
  const double bytes = heads * s * d * ElementBytes(a.precision) * (a.backward ? 8 : 4);
  return std::max(compute, MemorySeconds(bytes)) + params_.kernel_fixed_s;
}

GemmEstimate GpuKernelModel::GemmWithTile(const GemmProblem& g, int tile_m, int tile_n,
                                          int split_k) const {
  return GemmCore(g, UnitFor(g), 1.0, -1.0, tile_m, tile_n, split_k);
}

GemmEstimate GpuKernelModel::GemmCore(const GemmProblem& g, MathUnit unit, double fraction_scale,
                                      double bytes, int tile_m, int tile_n, int split_k) const {
  DTSIM_CHECK(
      g.m > 0 && g.n > 0 && g.k > 0 && g.batch > 0 && tile_m > 0 && tile_n > 0 && split_k > 0,
      "GEMM sizes must be positive");
  const bool simt = unit == MathUnit::kSimt;
  const double peak = simt ? device_.fp32_flop_per_s : device_.PeakFlopRate(g.precision);
  const double sm_rate = peak / device_.sm_count;
  const int blocks_per_sm = std::clamp(128 * 128 / (tile_m * tile_n), 1, 4);
  // Counts in double: batch x tiles may exceed 64 bits for absurd shapes.
  const double tiles = static_cast<double>(g.batch) * static_cast<double>(CeilDiv(g.m, tile_m)) *
                       static_cast<double>(CeilDiv(g.n, tile_n)) * split_k;
  const double slots = static_cast<double>(device_.sm_count) * blocks_per_sm;
  const double waves = std::ceil(tiles / slots);
  const int k_step = simt ? 8 : 32;
  const double k_block =
      static_cast<double>(CeilDiv(CeilDiv(g.k, split_k), k_step) * k_step) + params_.k_fill;
  const double half = simt ? ByArch(params_.simt_half_reuse_by_arch, params_.simt_half_reuse)
                           : params_.tensor_half_reuse;
  const double ref = simt ? Reuse(128, 128) : Reuse(256, 128);
  const double reuse = Reuse(tile_m, tile_n);
  const double fraction =
      Fraction(unit, g.precision) * fraction_scale * (reuse / (reuse + half)) / (ref / (ref + half));
  // A block alone on an SM runs at the SM's rate; blocks sharing one split
  // it. Full waves put blocks_per_sm blocks on every SM; the last wave puts
  // ceil(remaining / SMs) on the busiest one.
  const double block_alone = 2.0 * tile_m * tile_n * k_block / (sm_rate * fraction);
  const double full_waves = std::floor(tiles / slots), remaining = tiles - full_waves * slots;
  const double t_compute =
      block_alone * (full_waves * blocks_per_sm + std::ceil(remaining / device_.sm_count));

  // Pseudo-fp16 (2-byte operands on the CUDA cores) runs the fp32 kernels'
  // schedule: DeepBench's P100 fp16-pseudo GEMMs take the fp32 times
  // (median ratio 1.00 over 160 shapes; convolutions 0.85 to 1.03).
  const double elem = simt ? 4 : ElementBytes(g.precision);
  // An FP8 GEMM writes its result in bf16 (Transformer Engine's GEMMs
  // output the activations' dtype).
  const double c_elem = !simt && g.precision == hw::Precision::kFp8 ? 2 : elem;
  const double b = static_cast<double>(g.batch);
  const double m = static_cast<double>(g.m), n = static_cast<double>(g.n),
               k = static_cast<double>(g.k);
  if (bytes < 0) {
    // A and B cross DRAM once when the smaller one stays in L2 while the
    // larger streams past it (half the L2 for it: the other half holds the
    // streaming operand's tiles and C); otherwise the smaller is read again
    // by every wave of tiles.
    const double a_bytes = m * k * elem, b_bytes = k * n * elem;
    const double small = std::min(a_bytes, b_bytes), large = std::max(a_bytes, b_bytes);
    const double rereads = small <= device_.l2_bytes / 2 ? 1.0 : std::max(1.0, waves);
    bytes = b * (large + small * rereads + m * n * c_elem * (g.accumulate ? 2 : 1));
  }
  double t_memory = MemorySeconds(bytes);
  double fixed = params_.kernel_fixed_s;
  if (split_k > 1) {  // fp32 partial sums written, then read by the reduction kernel
    t_memory += MemorySeconds(b * m * n * 4.0 * split_k * 2.0);
    fixed += params_.kernel_fixed_s;
  }
  GemmEstimate e;
  e.unit = unit;
  e.tile_m = tile_m;
  e.tile_n = tile_n;
  e.split_k = split_k;
  e.waves = waves < 9e18 ? static_cast<std::int64_t>(waves) : INT64_MAX;
  e.memory_bound = t_memory > t_compute;
  e.seconds = std::max(t_compute, t_memory) + fixed;
  return e;
}

GemmEstimate GpuKernelModel::BestGemm(const GemmProblem& g, MathUnit unit, double fraction_scale,
                                      double bytes, bool allow_split) const {
  const int k_step = unit == MathUnit::kSimt ? 8 : 32;
  GemmEstimate best;
  best.seconds = std::numeric_limits<double>::infinity();
  for (const Tile& t : kTiles) {
    if (unit == MathUnit::kSimt && t.m * t.n > 128 * 128) continue;
    for (int split : kSplits) {
      // Each split keeps at least 4 k steps; splitting only pays while the
      // tiles leave SMs idle.
      if (split > 1 && (!allow_split || g.k / split < 4 * k_step ||
                        static_cast<double>(g.batch) * static_cast<double>(CeilDiv(g.m, t.m)) *
                                static_cast<double>(CeilDiv(g.n, t.n)) >=
                            device_.sm_count))
        break;
      GemmEstimate e = GemmCore(g, unit, fraction_scale, bytes, t.m, t.n, split);
      if (e.seconds < best.seconds) best = e;
    }
  }
  return best;
}

GemmEstimate GpuKernelModel::Gemm(const GemmProblem& g) const {
  // cuBLAS splits k from CUDA 9 on (DeepBench's CUDA 7.5 and 8 times of
  // skinny GEMMs show no gain from it).
  return BestGemm(g, UnitFor(g), 1.0, -1.0, params_.cuda_version >= 9);
}

GemmEstimate GpuKernelModel::RecurrentStepGemm(const GemmProblem& g, bool backward) const {
  double scale = ByArch(params_.rnn_step_fraction_by_arch, params_.rnn_step_fraction);
  if (backward) scale *= ByArch(params_.rnn_dgrad_fraction_by_arch, params_.rnn_dgrad_fraction);
  GemmEstimate e = BestGemm(g, UnitFor(g), scale, -1.0, params_.cuda_version >= 9);
  e.seconds = std::max(e.seconds, ByArch(params_.rnn_host_step_s_by_arch, params_.rnn_host_step_s));
  return e;
}

double GpuKernelModel::ConvWith(const ConvProblem& c, ConvPass pass, ConvAlgorithm algorithm,
                                GemmEstimate* gemm) const {
  DTSIM_CHECK(c.n > 0 && c.c > 0 && c.h > 0 && c.w > 0 && c.k > 0 && c.r > 0 && c.s > 0 &&
                  c.groups > 0 && c.c % c.groups == 0 && c.k % c.groups == 0 && c.p() > 0 &&
                  c.q() > 0,
              "convolution sizes must be positive and divisible by the groups");
  const std::int64_t g = c.groups, cg = c.c / g, kg = c.k / g;
  const std::int64_t p = c.p(), q = c.q(), rs = static_cast<std::int64_t>(c.r) * c.s;
  // cuDNN 7 tensor-op convolutions need input and output channels that are
  // multiples of 8 (cuDNN developer guide, "Tensor Core operations").
  const MathUnit unit = UnitFor(c.precision, cg % 8 == 0 && kg % 8 == 0);
  const double elem = unit == MathUnit::kSimt ? 4 : ElementBytes(c.precision);  // as in GemmCore
  const double in_bytes = static_cast<double>(c.n * c.c * c.h * c.w) * elem;
  const double out_bytes = static_cast<double>(c.n * c.k * p * q) * elem;
  const double filter_bytes = static_cast<double>(c.k * cg * rs) * elem;
  const double io_bytes = in_bytes + out_bytes + filter_bytes;

  const bool one_by_one =
      c.r == 1 && c.s == 1 && c.stride_h == 1 && c.stride_w == 1 && c.pad_h == 0 && c.pad_w == 0;
  const bool winograd_shape = c.r == 3 && c.s == 3 && c.stride_h == 1 && c.stride_w == 1 &&
                              unit == MathUnit::kSimt && g == 1;
  const double pass_fraction = pass == ConvPass::kForward ? 1.0
                               : pass == ConvPass::kBackwardData
                                   ? ByArch(params_.dgrad_fraction_by_arch, params_.dgrad_fraction)
                                   : ByArch(params_.wgrad_fraction_by_arch, params_.wgrad_fraction);
  const double winograd_fraction =
      ByArch(params_.winograd_fraction_by_arch, params_.winograd_fraction);
  GemmProblem gp;
  gp.precision = c.precision;
  gp.batch = g;
  GemmEstimate e;
  double seconds = -1;
  switch (algorithm) {
    case ConvAlgorithm::kGemm1x1:
    case ConvAlgorithm::kImplicitGemm: {
      if ((algorithm == ConvAlgorithm::kGemm1x1) != one_by_one) return -1;
      switch (pass) {
        case ConvPass::kForward:
          gp.m = c.n * p * q;
          gp.n = kg;
          gp.k = cg * rs;
          break;
        case ConvPass::kBackwardData: {
          // Input pixels no filter tap reaches (a 1x1 stride-2 convolution
          // reaches 1 in 4) get a zero gradient: cuDNN 7 on (CUDA 9 on)
          // skips them, cuDNN 5 and 6 multiply them too.
          const bool skip = params_.cuda_version >= 9;
          const std::int64_t rows_h =
              skip && c.r < c.stride_h ? CeilDiv(c.h * c.r, c.stride_h) : c.h;
          const std::int64_t rows_w =
              skip && c.s < c.stride_w ? CeilDiv(c.w * c.s, c.stride_w) : c.w;
          gp.m = c.n * rows_h * rows_w;
          gp.n = cg;
          gp.k = kg * CeilDiv(c.r, c.stride_h) * CeilDiv(c.s, c.stride_w);
          break;
        }
        case ConvPass::kBackwardFilter:
          gp.m = kg;
          gp.n = cg * rs;
          gp.k = c.n * p * q;
          break;
      }
      const double scale = (one_by_one ? 1.0 : params_.implicit_gemm_fraction) * pass_fraction;
      e = BestGemm(gp, unit, scale, io_bytes, pass == ConvPass::kBackwardFilter);
      seconds = e.seconds;
      break;
    }
    case ConvAlgorithm::kWinogradFused:
    case ConvAlgorithm::kWinogradNonfused: {
      if (!winograd_shape) return -1;
      const bool fused = algorithm == ConvAlgorithm::kWinogradFused;
      const int tile = fused ? 2 : 4;              // outputs per tile side: F(2x2,3x3), F(4x4,3x3)
      const int points = (tile + 2) * (tile + 2);  // 16 or 36 products per tile
      // dgrad is the same convolution from K channels to C over the input's
      // pixels (padding 1 keeps the size).
      const bool data = pass == ConvPass::kBackwardData;
      const std::int64_t oh = data ? c.h : p, ow = data ? c.w : q;
      const std::int64_t from = data ? c.k : c.c, to = data ? c.c : c.k;
      const std::int64_t tiles = c.n * CeilDiv(oh, tile) * CeilDiv(ow, tile);
      gp.batch = points;
      if (pass == ConvPass::kBackwardFilter) {
        gp.m = to;
        gp.n = from;
        gp.k = tiles;
      } else {
        gp.m = tiles;
        gp.n = to;
        gp.k = from;
      }
      if (fused) {
        e = BestGemm(gp, unit, winograd_fraction * pass_fraction, io_bytes,
                     pass == ConvPass::kBackwardFilter);
        seconds = e.seconds;
      } else {
        // Transforms through memory: the input's tiles (36 values per tile
        // and channel) are written and read back, and so are the products.
        const double t_in = static_cast<double>(points * tiles * from) * 4.0;
        const double t_out = static_cast<double>(points * tiles * to) * 4.0;
        e = BestGemm(gp, unit, winograd_fraction * pass_fraction, t_in + t_out + filter_bytes,
                     pass == ConvPass::kBackwardFilter);
        seconds = e.seconds + StreamSeconds((data ? out_bytes : in_bytes) + t_in) +
                  StreamSeconds(t_out + (data ? in_bytes : out_bytes));
      }
      break;
    }
  }
  if (gemm != nullptr) *gemm = e;
  return seconds;
}

ConvEstimate GpuKernelModel::Conv(const ConvProblem& c, ConvPass pass) const {
  ConvEstimate best;
  best.seconds = std::numeric_limits<double>::infinity();
  for (ConvAlgorithm a : {ConvAlgorithm::kGemm1x1, ConvAlgorithm::kImplicitGemm,
                          ConvAlgorithm::kWinogradFused, ConvAlgorithm::kWinogradNonfused}) {
    GemmEstimate gemm;
    const double t = ConvWith(c, pass, a, &gemm);
    if (t >= 0 && t < best.seconds) {
      best.seconds = t;
      best.algorithm = a;
      best.gemm = gemm;
    }
  }
  return best;
}

}  // namespace dtsim::sim
