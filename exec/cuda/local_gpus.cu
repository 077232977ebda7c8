// CudaRuntimeGpus(): asks the CUDA runtime for each visible device (what
// LocalGpus() returns in CUDA builds, through the CUDA module).
#include <cuda_runtime.h>

#include <cstdio>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/local_gpus.h"

namespace dtsim::exec {

std::vector<hw::DeviceSpec> CudaRuntimeGpus(std::string* why_empty) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    if (why_empty)
      *why_empty = status != cudaSuccess ? std::string("no usable GPU: ") + cudaGetErrorString(status)
                                         : "no GPU visible to the CUDA runtime";
    return {};
  }
  std::vector<hw::DeviceSpec> out;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    DTSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
    DTSIM_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, d));
    DTSIM_CUDA_CHECK(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, d));
    DTSIM_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, d));
    hw::DeviceSpec s;
    s.name = prop.name;
    s.kind = "gpu";
    // fp32 peak = SMs x 128 fp32 lanes (Ampere/Hopper consumer and datacenter
    // parts; an estimate for other generations) x 2 (FMA) x clock.
    s.fp32_flop_per_s = 2.0 * 128 * prop.multiProcessorCount * clock_khz * 1e3;
    s.memory_bytes = static_cast<double>(prop.totalGlobalMem);
    // DDR: two transfers per memory clock.
    s.memory_bw_bytes_per_s = 2.0 * mem_clock_khz * 1e3 * bus_bits / 8.0;
    char source[160];
    std::snprintf(source, sizeof source,
                  "CUDA runtime, device %d (sm_%d%d, %d SMs); fp32 peak assumes 128 lanes/SM", d,
                  prop.major, prop.minor, prop.multiProcessorCount);
    s.source = source;
    out.push_back(s);
  }
  return out;
}

}  // namespace dtsim::exec
