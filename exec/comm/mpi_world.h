// MpiWorld: MPI in a process that an MPI launcher started. MPI (OpenMPI and
// the libraries under it) lives in a module, libdtsim-mpi.so beside the dtsim
// executable (exec/comm/mpi_module.cc), loaded only by such a process: every
// other command starts without loading MPI (8 shared libraries, about 4 ms of
// each start on a 2-core VM). No MPI type crosses this interface.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/comm/communicator.h"

namespace dtsim::exec {

class MpiWorld {
 public:
  // Destroys the communicator, then finalises MPI.
  virtual ~MpiWorld() = default;

  // The Communicator over MPI_COMM_WORLD (MpiCommunicator).
  virtual Communicator& communicator() = 0;

  // Ends every process of the world (MPI_Abort; see MpiSession::Abort).
  virtual void Abort(int status) = 0;

  // Every rank's `mine`, in rank order, on rank 0 (MPI_Gatherv of bytes);
  // empty on the other ranks. Collective: every rank calls it. Throws
  // MpiError when MPI fails, UserError for more than 2 GiB in all.
  virtual std::vector<std::string> GatherToRoot(const std::string& mine) = 0;
};

// Loads the module ($DTSIM_MPI_MODULE when set, else libdtsim-mpi.so beside
// the running executable) and starts MPI: MpiSession (MPI_THREAD_SERIALIZED)
// and an MpiCommunicator. One per process. Throws UserError when the module
// cannot be loaded (saying why), MpiError when MPI fails.
std::unique_ptr<MpiWorld> StartMpiWorld();

// The symbol the module exports: a new MpiWorld, which the caller deletes.
inline constexpr const char* kMpiModuleEntry = "dtsim_mpi_module_start_v2";

}  // namespace dtsim::exec
