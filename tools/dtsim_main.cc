// dtsim: predicts how fast a deep-learning model trains on a GPU cluster.
// main() is the only place that decides the exit status:
//   0 success, 2 bad input (scenario, model file, arguments), 3 valid input
//   but an infeasible plan (does not fit in memory, a split that does not
//   divide; InfeasiblePlan), 1 anything else (tools/cli.h).
#include <CLI/CLI.hpp>
#include <iostream>
#include <vector>

#include "tools/cli.h"
#include "tools/mpi_launch.h"

int main(int argc, char** argv) {
  // A rank started by mpirun dies with it (mpirun killed with SIGKILL
  // cannot stop its ranks itself).
  if (dtsim::tools::LaunchedByMpiLauncher() && !dtsim::tools::DieWithLauncher()) {
    std::cerr << "dtsim: the MPI launcher that started this rank is gone\n";
    return 1;
  }
  CLI::App app{
      "dtsim: discrete-event simulator of deep-learning training clusters.\n"
      "Describe a cluster, a model and a parallelization in a scenario file (see\n"
      "docs/scenario.md and scenarios/), then predict its throughput, step-time\n"
      "breakdown and timeline.",
      "dtsim"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dtsim 0.1.0");
  const std::vector<dtsim::tools::Command> commands = dtsim::tools::AddCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  for (const dtsim::tools::Command& command : commands)
    if (command.cli->parsed()) return dtsim::tools::RunParsedCommand(command);
  return 2;  // unreachable: require_subcommand(1) refuses a command line without one
}
