// The devices of the machine dtsim runs on, described in the catalog's
// vocabulary so that real runs can be compared with predictions for them.
#pragma once

#include <string>
#include <vector>

#include "hw/catalog.h"

namespace dtsim::exec {

// GPUs visible to the CUDA runtime, one DeviceSpec each, with memory and
// bandwidth from the driver. Empty when dtsim was built without CUDA or no
// GPU is present; `why_empty` (if given) then says which.
std::vector<hw::DeviceSpec> LocalGpus(std::string* why_empty = nullptr);

// The local CPU (hw::LocalCpuDevice) followed by LocalGpus().
std::vector<hw::DeviceSpec> LocalDevices();

}  // namespace dtsim::exec
