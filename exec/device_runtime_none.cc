// Built when dtsim is configured without CUDA.
#include "common/error.h"
#include "exec/device_runtime.h"

namespace dtsim::exec {

DeviceRuntime MakeCudaRuntime(Communicator&) {
  throw UserError("this dtsim was built without CUDA (no nvcc found, or -DDTSIM_CUDA=OFF)",
                  "use --backend cpu, or rebuild where /usr/local/cuda/bin/nvcc exists");
}

}  // namespace dtsim::exec
