// dtsim's heavy optional parts (the CUDA backend, SimGrid, MPI) live in
// modules, shared libraries beside the dtsim executable that a command loads
// (dlopen) only when it uses them: every other command starts without them.
#pragma once

#include <string>

namespace dtsim {

struct ModuleSpec {
  const char* what = "";       // "CUDA", "SimGrid", "MPI": named in messages
  const char* file_name = "";  // e.g. "libdtsim-mpi.so"
  const char* env_var = "";    // when set and not empty, the module's path (or a
                               // library name dlopen searches for)
  const char* entry = "";      // the symbol the module exports
  const char* build_dir = nullptr;  // tried after the executable's folder (tests
                                    // run from other folders); may be null
};

// The address of spec.entry in the module: $env_var when set, else the first
// of file_name in the running executable's folder and in build_dir that
// exists. Loaded RTLD_NOW | RTLD_LOCAL (the module keeps its own copies of
// dtsim's helpers) and never unloaded; loading it again returns the same
// module. Null when it cannot be loaded, `why` then says why and where.
void* LoadModuleEntry(const ModuleSpec& spec, std::string* why);

}  // namespace dtsim
