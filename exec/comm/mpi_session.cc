#include "exec/comm/mpi_session.h"

#include <mpi.h>

#include <cstdlib>

#include "exec/comm/mpi_check.h"

namespace dtsim::exec {

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  DTSIM_MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized)
    throw MpiError(MPI_ERR_OTHER,
                   "MpiSession: MPI is already initialised (one session per process)");
  int provided = MPI_THREAD_SINGLE;
  DTSIM_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
  try {
    if (provided < MPI_THREAD_SERIALIZED)
      throw MpiError(MPI_ERR_OTHER, "MpiSession: MPI does not provide MPI_THREAD_SERIALIZED");
    DTSIM_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    DTSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_));
    DTSIM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size_));
  } catch (...) {
    MPI_Finalize();
    throw;
  }
  launched_by_mpirun_ = world_size_ > 1 || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
                        std::getenv("PMI_SIZE") != nullptr;
}

void MpiSession::Abort(int status) { MPI_Abort(MPI_COMM_WORLD, status); }

MpiSession::~MpiSession() {
  int finalized = 0;
  if (MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Finalize();
}

}  // namespace dtsim::exec
