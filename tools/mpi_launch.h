// Starting dtsim again under the MPI launcher, for commands that take
// --ranks N (exec, validate, calibrate).
#pragma once

#include <sys/types.h>

#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace dtsim::tools {

// True when an MPI launcher started this process (OMPI_COMM_WORLD_SIZE or
// PMI_SIZE is set): main() then starts MPI.
bool LaunchedByMpiLauncher();

// In a process an MPI launcher started: asks the kernel to SIGKILL it when
// its parent (mpirun, which forks the ranks of its node) dies, so that a
// launcher killed with SIGKILL leaves no rank behind (prctl's
// PR_SET_PDEATHSIG). Returns false when the parent died before the request
// took effect (the caller then stops).
bool DieWithLauncher();

// A rank that stops on `error` (UserError; `infeasible`: InfeasiblePlan)
// leaves it for the process that launched the ranks through
// RunUnderMpiLauncher, which then fails with the same message, place and
// hint (and exit status) instead of "mpirun failed". Does nothing when no
// such process is waiting (the ranks were started by hand). Best effort.
void RecordRankError(int rank, const UserError& error, bool infeasible);

struct LaunchOptions {
  int ranks = 1;  // processes (-np), >= 1
  // Arguments for mpirun itself, before the program (e.g. {"--mca", "btl",
  // "tcp,self"}). Default: none.
  std::vector<std::string> launcher_args;
  // Variables set in mpirun's environment (and so in every rank's), as
  // name, value. Default: none besides OpenMPI's run-as-root permission.
  std::vector<std::pair<std::string, std::string>> environment;
  // Words each rank runs the program under: mpirun starts
  // `<rank_wrapper...> <program> <args...>` (e.g. a shell that enters the
  // rank's network namespace). Default: none, the program itself.
  std::vector<std::string> rank_wrapper;
  // Called with mpirun's pid once it runs (on the calling thread), and with
  // 0 once it has exited: e.g. to pass on an interrupt. Default: none.
  std::function<void(pid_t)> on_launcher;
};

// Runs `mpirun -np <ranks> [--oversubscribe] <launcher args> <wrapper>
// <this program> <args...>` and waits for it, with OpenMPI's run-as-root
// permission in the child's environment only (containers and CI run as
// root). The command line is echoed to `err`. mpirun starts with no signal
// blocked, whatever this thread blocks, and gets SIGTERM when this process
// dies (however: SIGKILL included), on which it stops its ranks.
// A rank that stops on an error calls MPI_Abort with main()'s exit status,
// which mpirun returns. Throws, for mpirun's status:
//   2: UserError (3: InfeasiblePlan) with the rank's message, place and
//      hint (RecordRankError), else a generic one;
//   other non-zero, or not started: std::runtime_error.
void RunUnderMpiLauncher(const LaunchOptions& options, const std::vector<std::string>& args,
                         std::ostream& err);
// The same with only `ranks` set.
void RunUnderMpiLauncher(int ranks, const std::vector<std::string>& args, std::ostream& err);

}  // namespace dtsim::tools
