// LocalGpus() for CUDA builds: asks the CUDA module (exec/cuda_module.h).
#include "exec/cuda_module.h"
#include "exec/local_devices.h"

namespace dtsim::exec {

std::vector<hw::DeviceSpec> LocalGpus(std::string* why_empty) {
  std::string why;
  const CudaModuleApi* cuda = LoadCudaModule(&why);
  if (cuda == nullptr) {
    if (why_empty) *why_empty = why;
    return {};
  }
  return cuda->local_gpus(why_empty);
}

}  // namespace dtsim::exec
