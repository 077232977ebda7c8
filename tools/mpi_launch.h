// Starting dtsim again under the MPI launcher, for commands that take
// --ranks N (exec, validate, calibrate).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace dtsim::tools {

// True when an MPI launcher started this process (OMPI_COMM_WORLD_SIZE or
// PMI_SIZE is set): main() then starts MPI.
bool LaunchedByMpiLauncher();

// Runs `mpirun -np <ranks> [--oversubscribe] <this program> <args...>` and
// waits for it, with OpenMPI's run-as-root permission in the child's
// environment only (containers and CI run as root). The command line is
// echoed to `err`. Throws std::runtime_error when it cannot start or exits
// non-zero (the ranks have printed their own errors).
void RunUnderMpiLauncher(int ranks, const std::vector<std::string>& args, std::ostream& err);

}  // namespace dtsim::tools
