// The built-in GPUs, with the datasheet each number comes from.
//
// Conventions (see also hw/catalog.h):
//  - Rates are peak DENSE flop/s at the boost clock. NVIDIA's Ampere/Hopper
//    datasheets print tensor rates "with sparsity" (2:4 structured sparsity
//    doubles them); the dense value, half of that, is stored, and the exact
//    dense figures of the architecture whitepapers are used where they exist.
//  - tf32 and bf16 exist from A100 on. fp16 is the tensor-core rate from V100
//    on (fp16 multiply, fp32 accumulate); for P100 it is the 2x-fp32 packed
//    half2 rate (no tensor cores). Kepler, Maxwell and consumer/inference
//    Pascal (GP102/GP104 run fp16 at 1/64 rate) have 0, so PeakFlopRate falls
//    back to fp32, which is what mixed-precision training gets on them.
//  - fp8 (E4M3/E5M2 tensor cores) exists from Hopper on (and on Ada, which the
//    catalog does not hold); every earlier GPU has 0 and refuses fp8.
//  - A device is one CUDA device: a K80 board holds two GK210 dies, so "K80"
//    is one die, half of the board's datasheet numbers.
//  - Memory: NVIDIA's "16 GB" of GPU memory is 16 GiB (DRAM chips come in
//    powers of two; nvidia-smi shows an 80GB A100 as 81920 MiB). ECC may
//    reserve a little of it; that is not subtracted. Bandwidth is decimal GB/s.
//  - GeForce pages give cores and clocks, not TFLOPS: there the fp32 rate is
//    cores x 2 flop (FMA) x boost clock, written out in the row.
#include <utility>

#include "hw/catalog.h"
#include "hw/catalog_internal.h"

namespace dtsim::hw::internal {
namespace {

constexpr double kTera = 1e12;                    // flop/s per TFLOPS
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;  // bytes per GiB
constexpr double kGBps = 1e9;                     // bytes/s per GB/s

struct GpuRow {
  const char* name;
  double fp32_tflops;  // dense, TFLOPS
  double tf32_tflops;  // dense, TFLOPS; 0 = none
  double fp16_tflops;  // dense, TFLOPS; 0 = none (falls back to fp32)
  double bf16_tflops;  // dense, TFLOPS; 0 = none
  double fp8_tflops;   // dense FP8 (E4M3/E5M2) tensor rate, TFLOPS; 0 = none
  double memory_gib;   // GiB
  double memory_bw_gbps;  // GB/s (1e9 bytes/s)
  GpuArch arch;
  int sm_count;      // streaming multiprocessors
  double l2_mib;     // L2 cache, MiB
  const char* source;
};

// clang-format off
constexpr GpuRow kGpus[] = {
  // Kepler. K20m: 2496 cores x 2 x 706 MHz (no GPU Boost) = 3.52 TFLOPS.
  {"K20m", 3.52, 0, 0, 0, 0, 5, 208, GpuArch::kKepler, 13, 1.25,
   "NVIDIA Tesla K20/K20X GPU Accelerators datasheet (2012): K20 3.52 TFLOPS fp32, 5 GB GDDR5, "
   "208 GB/s; GK110 whitepaper (2012): 13 SMX on K20 (192 cores each), 1.25 MB L2 with 5 of 6 "
   "memory controllers"},
  // K80 per GK210 die: 2496 cores x 2 x 875 MHz boost = 4.37 TFLOPS; the
  // board (two dies) is 8.73 TFLOPS, 24 GB, 480 GB/s.
  {"K80", 4.37, 0, 0, 0, 0, 12, 240, GpuArch::kKepler, 13, 1.5,
   "NVIDIA Tesla K80 datasheet (2014), board 8.73 TFLOPS fp32 (boost), 24 GB GDDR5, 480 GB/s; "
   "halved: one GK210 die = one CUDA device; GK210: 13 SMX per die enabled on K80 (2496 cores / "
   "192), 1.5 MB L2 (GK110 whitepaper)"},
  // Maxwell. M40: 3072 cores x 2 x 1114 MHz boost = 6.84 TFLOPS (the
  // datasheet rounds to "7 TFLOPS").
  {"M40", 3072 * 2 * 1.114e9 / kTera, 0, 0, 0, 0, 24, 288, GpuArch::kMaxwell, 24, 3,
   "NVIDIA Tesla M40 24GB datasheet (2015): 3072 CUDA cores, 1114 MHz boost, 24 GB GDDR5, "
   "288 GB/s; GM200: 24 SMs (3072 / 128), 3 MB L2"},
  // Pascal.
  {"P40", 12, 0, 0, 0, 0, 24, 346, GpuArch::kPascal, 30, 3,
   "NVIDIA Tesla P40 datasheet (2016): 12 TFLOPS fp32 (boost), 24 GB GDDR5, 346 GB/s; "
   "fp16 runs at 1/64 rate, treated as none; GP102: 30 SMs (3840 cores / 128), 3 MB L2 (Pascal "
   "GP102 specifications)"},
  {"P100-PCIe-16GB", 9.3, 0, 18.7, 0, 0, 16, 732, GpuArch::kPascal, 56, 4,
   "NVIDIA Tesla P100 datasheet (2016), PCIe 16GB: 9.3 TFLOPS fp32, 18.7 TFLOPS fp16 (half2, "
   "no tensor cores), 16 GB HBM2, 732 GB/s; Pascal P100 whitepaper (2016): 56 SMs, 4096 KB L2"},
  {"P100-SXM2", 10.6, 0, 21.2, 0, 0, 16, 732, GpuArch::kPascal, 56, 4,
   "NVIDIA Tesla P100 datasheet (2016), NVLink (SXM2): 10.6 TFLOPS fp32, 21.2 TFLOPS fp16 "
   "(half2, no tensor cores), 16 GB HBM2, 732 GB/s; Pascal P100 whitepaper (2016): 56 SMs, 4096 "
   "KB L2"},
  // Volta. fp16 = tensor cores (fp16 multiply, fp32 accumulate).
  {"V100-PCIe-16GB", 14, 0, 112, 0, 0, 16, 900, GpuArch::kVolta, 80, 6,
   "NVIDIA V100 Tensor Core GPU datasheet (2020), PCIe: 14 TFLOPS fp32, 112 TFLOPS tensor, "
   "16 GB HBM2, 900 GB/s; Volta V100 whitepaper (2017): 80 SMs, 6144 KB L2"},
  {"V100-PCIe-32GB", 14, 0, 112, 0, 0, 32, 900, GpuArch::kVolta, 80, 6,
   "NVIDIA V100 Tensor Core GPU datasheet (2020), PCIe: 14 TFLOPS fp32, 112 TFLOPS tensor, "
   "32 GB HBM2, 900 GB/s; Volta V100 whitepaper (2017): 80 SMs, 6144 KB L2"},
  {"V100-SXM2-16GB", 15.7, 0, 125, 0, 0, 16, 900, GpuArch::kVolta, 80, 6,
   "NVIDIA V100 Tensor Core GPU datasheet (2020), SXM2: 15.7 TFLOPS fp32, 125 TFLOPS tensor, "
   "16 GB HBM2, 900 GB/s; Volta V100 whitepaper (2017): 80 SMs, 6144 KB L2"},
  {"V100-SXM2-32GB", 15.7, 0, 125, 0, 0, 32, 900, GpuArch::kVolta, 80, 6,
   "NVIDIA V100 Tensor Core GPU datasheet (2020), SXM2: 15.7 TFLOPS fp32, 125 TFLOPS tensor, "
   "32 GB HBM2, 900 GB/s; Volta V100 whitepaper (2017): 80 SMs, 6144 KB L2"},
  // Turing.
  {"T4", 8.1, 0, 65, 0, 0, 16, 300, GpuArch::kTuring, 40, 4,
   "NVIDIA T4 Tensor Core GPU datasheet (2019): 8.1 TFLOPS fp32, 65 TFLOPS mixed fp16/fp32, "
   "16 GB GDDR6, 300 GB/s; Turing architecture whitepaper (2018), T4: 40 SMs, 4096 KB L2"},
  // Ampere. Datasheet tensor rates with sparsity: tf32 312, fp16/bf16 624.
  {"A100-PCIe-40GB", 19.5, 156, 312, 312, 0, 40, 1555, GpuArch::kAmpere, 108, 40,
   "NVIDIA A100 Tensor Core GPU datasheet (2021), dense: 19.5 TFLOPS fp32, 156 tf32, 312 "
   "fp16/bf16; 40 GB HBM2, 1555 GB/s; A100 whitepaper (2020): 108 SMs, 40 MB L2"},
  {"A100-PCIe-80GB", 19.5, 156, 312, 312, 0, 80, 1935, GpuArch::kAmpere, 108, 40,
   "NVIDIA A100 Tensor Core GPU datasheet (2021), dense: 19.5 TFLOPS fp32, 156 tf32, 312 "
   "fp16/bf16; 80 GB HBM2e, 1935 GB/s; A100 whitepaper (2020): 108 SMs, 40 MB L2"},
  {"A100-SXM4-40GB", 19.5, 156, 312, 312, 0, 40, 1555, GpuArch::kAmpere, 108, 40,
   "NVIDIA A100 Tensor Core GPU datasheet (2021), dense: 19.5 TFLOPS fp32, 156 tf32, 312 "
   "fp16/bf16; 40 GB HBM2, 1555 GB/s; A100 whitepaper (2020): 108 SMs, 40 MB L2"},
  {"A100-SXM4-80GB", 19.5, 156, 312, 312, 0, 80, 2039, GpuArch::kAmpere, 108, 40,
   "NVIDIA A100 Tensor Core GPU datasheet (2021), dense: 19.5 TFLOPS fp32, 156 tf32, 312 "
   "fp16/bf16; 80 GB HBM2e, 2039 GB/s; A100 whitepaper (2020): 108 SMs, 40 MB L2"},
  // Hopper. Datasheet (sparse) tf32 989 / fp16 1979 / fp8 3958 (SXM) and
  // 756 / 1513 / 3026 (PCIe); the whitepaper's dense values are half: 132 SMs
  // x 4096 flop/clk x 1830 MHz = 989.4 TFLOPS fp16 (SXM), twice that in fp8
  // (8192 flop/clk per SM).
  {"H100-PCIe", 51.2, 378, 756, 756, 1513, 80, 2000, GpuArch::kHopper, 114, 50,
   "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), PCIe, dense: 51.2 TFLOPS fp32, "
   "378 tf32, 756 fp16/bf16, 1513 fp8; H100 datasheet: 80 GB HBM2e, 2 TB/s; H100 whitepaper (2022): 114 SMs "
   "(PCIe), 50 MB L2"},
  {"H100-SXM", 66.9, 494.7, 989.4, 989.4, 1978.9, 80, 3350, GpuArch::kHopper, 132, 50,
   "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), SXM5, dense: 66.9 TFLOPS fp32, "
   "494.7 tf32, 989.4 fp16/bf16, 1978.9 fp8; H100 datasheet: 80 GB HBM3, 3.35 TB/s; H100 whitepaper (2022): "
   "132 SMs (SXM5), 50 MB L2"},
  // H200: the H100 SXM die and clocks (same datasheet rates) with HBM3e.
  {"H200-SXM", 66.9, 494.7, 989.4, 989.4, 1978.9, 141, 4800, GpuArch::kHopper, 132, 50,
   "NVIDIA H200 Tensor Core GPU datasheet (2024), SXM: 67 TFLOPS fp32, 989 tf32 / 1979 "
   "fp16/bf16 / 3958 fp8 with sparsity (dense values as H100-SXM); 141 GB HBM3e, 4.8 TB/s; H100 whitepaper "
   "(2022): 132 SMs, 50 MB L2 (same die)"},
  // GeForce / TITAN: fp32 = CUDA cores x 2 x boost clock.
  {"GTX-980", 2048 * 2 * 1.216e9 / kTera, 0, 0, 0, 0, 4, 224, GpuArch::kMaxwell, 16, 2,
   "NVIDIA GeForce GTX 980 specifications (geforce.com): 2048 CUDA cores x 2 x 1216 MHz boost "
   "= 4.98 TFLOPS fp32; 4 GB GDDR5, 224 GB/s; GM204: 16 SMs (2048 cores / 128), 2 MB L2 (GeForce "
   "GTX 980 whitepaper, 2014)"},
  {"TITAN-X-Maxwell", 3072 * 2 * 1.075e9 / kTera, 0, 0, 0, 0, 12, 336.5, GpuArch::kMaxwell, 24, 3,
   "NVIDIA GeForce GTX TITAN X specifications (geforce.com, 2015): 3072 CUDA cores x 2 x 1075 MHz "
   "boost = 6.60 TFLOPS fp32; 12 GB GDDR5, 336.5 GB/s; GM200: 24 SMs, 3 MB L2"},
  {"GTX-1080Ti", 3584 * 2 * 1.582e9 / kTera, 0, 0, 0, 0, 11, 484, GpuArch::kPascal, 28, 2.75,
   "NVIDIA GeForce GTX 1080 Ti specifications (geforce.com): 3584 CUDA cores x 2 x 1582 MHz "
   "boost = 11.3 TFLOPS fp32; 11 GB GDDR5X, 484 GB/s; fp16 at 1/64 rate, treated as none; GP102 "
   "as GTX 1080 Ti: 28 SMs (3584 cores / 128), 2816 KB L2 (11 of 12 memory partitions)"},
  {"TITAN-X-Pascal", 3584 * 2 * 1.531e9 / kTera, 0, 0, 0, 0, 12, 480, GpuArch::kPascal, 28, 3,
   "NVIDIA TITAN X (Pascal) specifications (geforce.com): 3584 CUDA cores x 2 x 1531 MHz boost "
   "= 11.0 TFLOPS fp32; 12 GB GDDR5X, 480 GB/s; fp16 at 1/64 rate, treated as none; GP102 as "
   "TITAN X (Pascal): 28 SMs (3584 cores / 128), 3 MB L2"},
  {"TITAN-Xp", 3840 * 2 * 1.582e9 / kTera, 0, 0, 0, 0, 12, 547.7, GpuArch::kPascal, 30, 3,
   "NVIDIA TITAN Xp specifications (nvidia.com, 2017): 3840 CUDA cores x 2 x 1582 MHz boost = "
   "12.1 TFLOPS fp32; 12 GB GDDR5X, 547.7 GB/s; fp16 at 1/64 rate, treated as none; GP102: 30 SMs "
   "(3840 / 128), 3 MB L2"},
};

// Short names for the variant most people mean. A family name picks the
// SXM form with the largest memory; a form name (e.g. "v100-pcie") picks the
// largest memory of that form.
constexpr struct {
  const char* alias;
  const char* target;
} kGpuAliases[] = {
  {"k20", "K20m"},
  {"p100", "P100-SXM2"},              {"p100-pcie", "P100-PCIe-16GB"},
  {"v100", "V100-SXM2-32GB"},         {"v100-sxm2", "V100-SXM2-32GB"},
  {"v100-pcie", "V100-PCIe-32GB"},
  {"a100", "A100-SXM4-80GB"},         {"a100-sxm4", "A100-SXM4-80GB"},
  {"a100-pcie", "A100-PCIe-80GB"},    {"a100-40gb", "A100-SXM4-40GB"},
  {"a100-80gb", "A100-SXM4-80GB"},
  {"h100", "H100-SXM"},               {"h100-sxm5", "H100-SXM"},
  {"h200", "H200-SXM"},
  {"gtx980", "GTX-980"},              {"gtx1080ti", "GTX-1080Ti"},
  {"titan-x", "TITAN-X-Maxwell"},     {"titanxp", "TITAN-Xp"},
};
// clang-format on

}  // namespace

void AddBuiltInGpus(HardwareCatalog* catalog) {
  for (const GpuRow& row : kGpus) {
    DeviceSpec spec;
    spec.name = row.name;
    spec.kind = "gpu";
    spec.fp32_flop_per_s = row.fp32_tflops * kTera;
    spec.tf32_flop_per_s = row.tf32_tflops * kTera;
    spec.fp16_flop_per_s = row.fp16_tflops * kTera;
    spec.bf16_flop_per_s = row.bf16_tflops * kTera;
    spec.fp8_flop_per_s = row.fp8_tflops * kTera;
    spec.memory_bytes = row.memory_gib * kGiB;
    spec.memory_bw_bytes_per_s = row.memory_bw_gbps * kGBps;
    spec.arch = row.arch;
    spec.sm_count = row.sm_count;
    spec.l2_bytes = row.l2_mib * 1024.0 * 1024.0;
    spec.source = row.source;
    catalog->AddDevice(std::move(spec));
  }
  for (const auto& a : kGpuAliases) catalog->AddDeviceAlias(a.alias, a.target);
}

}  // namespace dtsim::hw::internal
