#include "common/module_loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <cstdlib>
#include <vector>

namespace dtsim {

void* LoadModuleEntry(const ModuleSpec& spec, std::string* why) {
  std::string path;
  if (const char* env = std::getenv(spec.env_var); env != nullptr && *env != '\0') {
    path = env;
  } else {
    std::vector<std::filesystem::path> folders;
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) folders.push_back(exe.parent_path());
    if (spec.build_dir != nullptr) folders.emplace_back(spec.build_dir);
    for (const std::filesystem::path& folder : folders) {
      if (std::filesystem::exists(folder / spec.file_name, ec)) {
        path = (folder / spec.file_name).string();
        break;
      }
    }
    if (path.empty()) {
      *why = std::string(spec.what) + " needs " + spec.file_name +
             " beside the dtsim executable (or $" + spec.env_var + "); none was found";
      return nullptr;
    }
  }
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    *why = "cannot load the " + std::string(spec.what) + " module " + path + ": " +
           (e != nullptr ? e : "unknown error");
    return nullptr;
  }
  void* entry = ::dlsym(handle, spec.entry);
  if (entry == nullptr) {
    *why = path + " is not dtsim's " + spec.what + " module (no " + spec.entry + ")";
    return nullptr;
  }
  return entry;  // the handle stays open for the process's life (no dlclose)
}

}  // namespace dtsim
