#include "exec/local_devices.h"

namespace dtsim::exec {

std::vector<hw::DeviceSpec> LocalDevices() {
  std::vector<hw::DeviceSpec> out{hw::LocalCpuDevice()};
  for (auto& g : LocalGpus()) out.push_back(std::move(g));
  return out;
}

}  // namespace dtsim::exec
