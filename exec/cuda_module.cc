#include "exec/cuda_module.h"

#include <dlfcn.h>

#include <filesystem>
#include <cstdlib>

namespace dtsim::exec {
namespace {

struct Loaded {
  const CudaModuleApi* api = nullptr;
  std::string why;
};

Loaded Load() {
  Loaded out;
  std::string path;
  if (const char* env = std::getenv("DTSIM_CUDA_MODULE"); env != nullptr && *env != '\0') {
    path = env;
  } else {
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
      out.why = "cannot find the running executable (/proc/self/exe): " + ec.message();
      return out;
    }
    path = (exe.parent_path() / "libdtsim-cuda.so").string();
  }
  // RTLD_LOCAL: the module's copies of dtsim's helpers (and Eigen's, CUDA's
  // symbols) stay its own.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    out.why = "cannot load the CUDA module " + path + ": " + (e ? e : "unknown error");
    return out;
  }
  using Entry = const CudaModuleApi* (*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, "dtsim_cuda_module_api"));
  if (entry == nullptr) {
    out.why = path + " is not dtsim's CUDA module (no dtsim_cuda_module_api)";
    return out;
  }
  const CudaModuleApi* api = entry();
  if (api == nullptr || api->version != kCudaModuleVersion) {
    out.why = path + " is a CUDA module of another dtsim version";
    return out;
  }
  out.api = api;  // the handle stays open for the process's life (no dlclose)
  return out;
}

}  // namespace

const CudaModuleApi* LoadCudaModule(std::string* why) {
  // dlopen of a loaded module returns its handle again: no cache needed.
  const Loaded loaded = Load();
  if (loaded.api == nullptr && why != nullptr) *why = loaded.why;
  return loaded.api;
}

}  // namespace dtsim::exec
