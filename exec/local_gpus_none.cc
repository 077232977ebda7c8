// Built when dtsim is configured without CUDA.
#include "exec/local_devices.h"

namespace dtsim::exec {

std::vector<hw::DeviceSpec> LocalGpus(std::string* why_empty) {
  if (why_empty) *why_empty = "dtsim was built without CUDA (no nvcc found, or -DDTSIM_CUDA=OFF)";
  return {};
}

}  // namespace dtsim::exec
