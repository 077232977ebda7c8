// MpiSession: MPI's lifetime in a program. main() creates one before any
// MpiCommunicator and destroys it last.
#pragma once

namespace dtsim::exec {

class MpiSession {
 public:
  // Calls MPI_Init_thread asking for MPI_THREAD_SERIALIZED (any thread may
  // call MPI, one at a time: a rank's comm thread, exec/runtime/comm_thread.h)
  // and sets MPI_ERRORS_RETURN on MPI_COMM_WORLD so that DTSIM_MPI_CHECK sees
  // failures. argc/argv may be
  // null. Throws MpiError if MPI fails or is already initialised, or if it
  // cannot give SERIALIZED.
  MpiSession(int* argc, char*** argv);
  // Calls MPI_Finalize. REQUIRES: every MpiCommunicator is destroyed first.
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  // Ends every process of MPI_COMM_WORLD (MPI_Abort): for a rank that
  // stopped on an error while the others may wait for it in a collective,
  // where MPI_Finalize would wait forever. The launcher (OpenMPI's mpirun)
  // then exits with `status`. Returns only if MPI_Abort does.
  void Abort(int status);

  // Rank and size in MPI_COMM_WORLD.
  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }

  // True when the process was started by mpirun/mpiexec: more than one rank,
  // or a launcher's environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE) is set. A
  // singleton run (plain ./program) gives false.
  bool launched_by_mpirun() const { return launched_by_mpirun_; }

 private:
  int world_rank_ = 0;
  int world_size_ = 1;
  bool launched_by_mpirun_ = false;
};

}  // namespace dtsim::exec
