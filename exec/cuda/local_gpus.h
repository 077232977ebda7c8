// The GPUs the CUDA runtime sees, as catalog entries (exec/local_devices.h's
// LocalGpus() in CUDA builds, through the CUDA module).
#pragma once

#include <string>
#include <vector>

#include "hw/catalog.h"

namespace dtsim::exec {

// One DeviceSpec per visible GPU, memory and bandwidth from the driver;
// empty with `why_empty` set when there is none.
std::vector<hw::DeviceSpec> CudaRuntimeGpus(std::string* why_empty);

}  // namespace dtsim::exec
