#include "exec/comm/mpi_world.h"

#include <string>

#include "common/error.h"
#include "common/module_loader.h"

namespace dtsim::exec {

std::unique_ptr<MpiWorld> StartMpiWorld() {
  ModuleSpec spec;
  spec.what = "MPI";
  spec.file_name = "libdtsim-mpi.so";
  spec.env_var = "DTSIM_MPI_MODULE";
  spec.entry = kMpiModuleEntry;
  std::string why;
  using Entry = MpiWorld* (*)();
  const auto start = reinterpret_cast<Entry>(LoadModuleEntry(spec, &why));
  if (start == nullptr) throw UserError(why);
  return std::unique_ptr<MpiWorld>(start());
}

}  // namespace dtsim::exec
