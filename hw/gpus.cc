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
  double memory_gib;   // GiB
  double memory_bw_gbps;  // GB/s (1e9 bytes/s)
  const char* source;
};

// clang-format off
constexpr GpuRow kGpus[] = {
  // Kepler. K20m: 2496 cores x 2 x 706 MHz (no GPU Boost) = 3.52 TFLOPS.
  {"K20m", 3.52, 0, 0, 0, 5, 208,
   "NVIDIA Tesla K20/K20X GPU Accelerators datasheet (2012): K20 3.52 TFLOPS fp32, 5 GB GDDR5, "
   "208 GB/s"},
  // K80 per GK210 die: 2496 cores x 2 x 875 MHz boost = 4.37 TFLOPS; the
  // board (two dies) is 8.73 TFLOPS, 24 GB, 480 GB/s.
  {"K80", 4.37, 0, 0, 0, 12, 240,
   "NVIDIA Tesla K80 datasheet (2014), board 8.73 TFLOPS fp32 (boost), 24 GB GDDR5, 480 GB/s; "
   "halved: one GK210 die = one CUDA device"},
  // Pascal.
  {"P40", 12, 0, 0, 0, 24, 346,
   "NVIDIA Tesla P40 datasheet (2016): 12 TFLOPS fp32 (boost), 24 GB GDDR5, 346 GB/s; "
   "fp16 runs at 1/64 rate, treated as none"},
  {"P100-PCIe-16GB", 9.3, 0, 18.7, 0, 16, 732,
   "NVIDIA Tesla P100 datasheet (2016), PCIe 16GB: 9.3 TFLOPS fp32, 18.7 TFLOPS fp16 (half2, "
   "no tensor cores), 16 GB HBM2, 732 GB/s"},
  {"P100-SXM2", 10.6, 0, 21.2, 0, 16, 732,
   "NVIDIA Tesla P100 datasheet (2016), NVLink (SXM2): 10.6 TFLOPS fp32, 21.2 TFLOPS fp16 "
   "(half2, no tensor cores), 16 GB HBM2, 732 GB/s"},
  // Volta. fp16 = tensor cores (fp16 multiply, fp32 accumulate).
  {"V100-PCIe-16GB", 14, 0, 112, 0, 16, 900,
   "NVIDIA V100 Tensor Core GPU datasheet (2020), PCIe: 14 TFLOPS fp32, 112 TFLOPS tensor, "
   "16 GB HBM2, 900 GB/s"},
  {"V100-PCIe-32GB", 14, 0, 112, 0, 32, 900,
   "NVIDIA V100 Tensor Core GPU datasheet (2020), PCIe: 14 TFLOPS fp32, 112 TFLOPS tensor, "
   "32 GB HBM2, 900 GB/s"},
  {"V100-SXM2-16GB", 15.7, 0, 125, 0, 16, 900,
   "NVIDIA V100 Tensor Core GPU datasheet (2020), SXM2: 15.7 TFLOPS fp32, 125 TFLOPS tensor, "
   "16 GB HBM2, 900 GB/s"},
  {"V100-SXM2-32GB", 15.7, 0, 125, 0, 32, 900,
   "NVIDIA V100 Tensor Core GPU datasheet (2020), SXM2: 15.7 TFLOPS fp32, 125 TFLOPS tensor, "
   "32 GB HBM2, 900 GB/s"},
  // Turing.
  {"T4", 8.1, 0, 65, 0, 16, 300,
   "NVIDIA T4 Tensor Core GPU datasheet (2019): 8.1 TFLOPS fp32, 65 TFLOPS mixed fp16/fp32, "
   "16 GB GDDR6, 300 GB/s"},
  // Ampere. Datasheet tensor rates with sparsity: tf32 312, fp16/bf16 624.
  {"A100-PCIe-40GB", 19.5, 156, 312, 312, 40, 1555,
   "NVIDIA A100 Tensor Core GPU datasheet (2021), dense: 19.5 TFLOPS fp32, 156 tf32, 312 "
   "fp16/bf16; 40 GB HBM2, 1555 GB/s"},
  {"A100-PCIe-80GB", 19.5, 156, 312, 312, 80, 1935,
   "NVIDIA A100 Tensor Core GPU datasheet (2021), dense: 19.5 TFLOPS fp32, 156 tf32, 312 "
   "fp16/bf16; 80 GB HBM2e, 1935 GB/s"},
  {"A100-SXM4-40GB", 19.5, 156, 312, 312, 40, 1555,
   "NVIDIA A100 Tensor Core GPU datasheet (2021), dense: 19.5 TFLOPS fp32, 156 tf32, 312 "
   "fp16/bf16; 40 GB HBM2, 1555 GB/s"},
  {"A100-SXM4-80GB", 19.5, 156, 312, 312, 80, 2039,
   "NVIDIA A100 Tensor Core GPU datasheet (2021), dense: 19.5 TFLOPS fp32, 156 tf32, 312 "
   "fp16/bf16; 80 GB HBM2e, 2039 GB/s"},
  // Hopper. Datasheet (sparse) tf32 989 / fp16 1979 (SXM) and 756 / 1513
  // (PCIe); the whitepaper's dense values are half: 132 SMs x 4096 flop/clk
  // x 1830 MHz = 989.4 TFLOPS fp16 (SXM).
  {"H100-PCIe", 51.2, 378, 756, 756, 80, 2000,
   "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), PCIe, dense: 51.2 TFLOPS fp32, "
   "378 tf32, 756 fp16/bf16; H100 datasheet: 80 GB HBM2e, 2 TB/s"},
  {"H100-SXM", 66.9, 494.7, 989.4, 989.4, 80, 3350,
   "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), SXM5, dense: 66.9 TFLOPS fp32, "
   "494.7 tf32, 989.4 fp16/bf16; H100 datasheet: 80 GB HBM3, 3.35 TB/s"},
  // H200: the H100 SXM die and clocks (same datasheet rates) with HBM3e.
  {"H200-SXM", 66.9, 494.7, 989.4, 989.4, 141, 4800,
   "NVIDIA H200 Tensor Core GPU datasheet (2024), SXM: 67 TFLOPS fp32, 989 tf32 / 1979 "
   "fp16/bf16 with sparsity (dense values as H100-SXM); 141 GB HBM3e, 4.8 TB/s"},
  // GeForce / TITAN: fp32 = CUDA cores x 2 x boost clock.
  {"GTX-980", 2048 * 2 * 1.216e9 / kTera, 0, 0, 0, 4, 224,
   "NVIDIA GeForce GTX 980 specifications (geforce.com): 2048 CUDA cores x 2 x 1216 MHz boost "
   "= 4.98 TFLOPS fp32; 4 GB GDDR5, 224 GB/s"},
  {"GTX-1080Ti", 3584 * 2 * 1.582e9 / kTera, 0, 0, 0, 11, 484,
   "NVIDIA GeForce GTX 1080 Ti specifications (geforce.com): 3584 CUDA cores x 2 x 1582 MHz "
   "boost = 11.3 TFLOPS fp32; 11 GB GDDR5X, 484 GB/s; fp16 at 1/64 rate, treated as none"},
  {"TITAN-X-Pascal", 3584 * 2 * 1.531e9 / kTera, 0, 0, 0, 12, 480,
   "NVIDIA TITAN X (Pascal) specifications (geforce.com): 3584 CUDA cores x 2 x 1531 MHz boost "
   "= 11.0 TFLOPS fp32; 12 GB GDDR5X, 480 GB/s; fp16 at 1/64 rate, treated as none"},
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
    spec.memory_bytes = row.memory_gib * kGiB;
    spec.memory_bw_bytes_per_s = row.memory_bw_gbps * kGBps;
    spec.source = row.source;
    catalog->AddDevice(std::move(spec));
  }
  for (const auto& a : kGpuAliases) catalog->AddDeviceAlias(a.alias, a.target);
}

}  // namespace dtsim::hw::internal
