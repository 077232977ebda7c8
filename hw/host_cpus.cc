// Built-in host CPUs: where parameter-server tasks keep and update variables
// when they are not on a GPU (TensorFlow's default for ps tasks).
#include <utility>

#include "hw/catalog.h"
#include "hw/catalog_internal.h"

namespace dtsim::hw::internal {

void AddBuiltInHostCpus(HardwareCatalog* catalog) {
  // A two-socket Intel Xeon Gold 6148 server (Skylake-SP), typical of
  // 2017-2019 GPU clusters' host side.
  //   fp32: 2 sockets x 20 cores x 2.4 GHz x 2 AVX-512 FMA units x 16 lanes x 2
  //         = 6.14 TFLOPS (base clock; AVX-512 clocks run lower under load)
  //   memory bandwidth: 2 sockets x 6 channels x DDR4-2666 x 8 bytes = 256 GB/s
  // Source: Intel Xeon Gold 6148 product specification (ark.intel.com):
  // 20 cores, 2.40 GHz base, 2 AVX-512 FMA units, 6 DDR4-2666 channels.
  DeviceSpec spec;
  spec.name = "cpu-host";
  spec.kind = "cpu";
  spec.fp32_flop_per_s = 2 * 20 * 2.4e9 * 2 * 16 * 2;
  spec.memory_bytes = 384.0 * 1024 * 1024 * 1024;  // 12 x 32 GiB DIMMs, a common configuration
  spec.memory_bw_bytes_per_s = 2 * 6 * 2666e6 * 8;
  spec.source =
      "2 x Intel Xeon Gold 6148 (ark.intel.com: 20 cores, 2.4 GHz, 2 AVX-512 FMA units, 6 "
      "DDR4-2666 channels): 6.14 TFLOPS fp32, 256 GB/s; 384 GiB assumed";
  catalog->AddDevice(std::move(spec));
}

}  // namespace dtsim::hw::internal
