#include "exec/cuda_module.h"

#include "common/module_loader.h"

namespace dtsim::exec {

const CudaModuleApi* LoadCudaModule(std::string* why) {
  ModuleSpec spec;
  spec.what = "CUDA";
  spec.file_name = "libdtsim-cuda.so";
  spec.env_var = "DTSIM_CUDA_MODULE";
  spec.entry = "dtsim_cuda_module_api";
  std::string error;
  // dlopen of a loaded module returns its handle again: no cache needed.
  using Entry = const CudaModuleApi* (*)();
  const auto entry = reinterpret_cast<Entry>(LoadModuleEntry(spec, &error));
  const CudaModuleApi* api = entry != nullptr ? entry() : nullptr;
  if (entry != nullptr && (api == nullptr || api->version != kCudaModuleVersion)) {
    error = "the CUDA module is of another dtsim version";
    api = nullptr;
  }
  if (api == nullptr && why != nullptr) *why = error;
  return api;
}

}  // namespace dtsim::exec
