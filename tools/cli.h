// The dtsim command line. Each command declares its own options on the CLI
// in the file that runs it (AddRunCommand in commands.cc, AddExecCommand in
// exec_cli.cc, ...), as SimGrid declares each flag beside the model it
// configures; main() only parses and runs the one that was asked for.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
class Validator;
}  // namespace CLI
namespace dtsim::exec {
class Communicator;
class MpiWorld;
}  // namespace dtsim::exec

namespace dtsim::tools {

class InterruptWatcher;

// What main() lends a command while it runs.
class CommandEnv {
 public:
  CommandEnv(std::ostream& out, std::ostream& err);
  ~CommandEnv();
  CommandEnv(const CommandEnv&) = delete;
  CommandEnv& operator=(const CommandEnv&) = delete;

  std::ostream& out;
  std::ostream& err;
  // Non-null when the command wants interrupts watched (Command::
  // wants_interrupts) and this process is not a rank an MPI launcher
  // started: forward the launcher's pid to it so that an interrupt stops
  // the ranks and the command unwinds.
  InterruptWatcher* interrupts = nullptr;

  // Starts MPI when an MPI launcher started this process (tools/
  // mpi_launch.h) and returns the world, else nullptr. Once started, a
  // failing command's error ends every rank (main() calls MPI_Abort).
  exec::MpiWorld* StartMpiIfLaunched();
  exec::MpiWorld* mpi() const { return mpi_.get(); }
  // The started world's communicator; nullptr when MPI was not started.
  exec::Communicator* world() const;

 private:
  std::unique_ptr<exec::MpiWorld> mpi_;
};

// A subcommand declared on the CLI. Its options live in `run`'s closure.
struct Command {
  Command(CLI::App* cli_, std::function<void(CommandEnv&)> run_,
          std::function<bool()> wants_interrupts_ = {}, bool huge_pages_ = false)
      : cli(cli_),
        run(std::move(run_)),
        wants_interrupts(std::move(wants_interrupts_)),
        huge_pages(huge_pages_) {}

  CLI::App* cli;
  std::function<void(CommandEnv&)> run;
  // Asked after parsing, before any thread starts: whether the run builds
  // something an interrupt must remove (an emulated network). Empty = no.
  std::function<bool()> wants_interrupts;
  // Only simulates: its plans are built on huge pages (tools/heap_pages.h).
  bool huge_pages;
};

// A finite number > 0. CLI::PositiveNumber lets "nan" through (nan <= 0 is
// false), and `--lr nan` then silently trained at the default rate.
const CLI::Validator& FinitePositive();

// -j,--jobs of the commands that simulate many `what` ("Points", "Plans",
// "Rows", "Runs") at once: > 0, default one per core; results do not depend on it.
void AddJobsOption(CLI::App* cmd, int* jobs, const char* what);

// One per command, each in the file that runs it.
Command AddRunCommand(CLI::App& app);
Command AddSearchCommand(CLI::App& app);
Command AddSweepCommand(CLI::App& app);
Command AddFitCommand(CLI::App& app);
Command AddValidateCommand(CLI::App& app);
Command AddExecCommand(CLI::App& app);
Command AddTtaCommand(CLI::App& app);
Command AddChakraCommand(CLI::App& app);
Command AddPlanCommand(CLI::App& app);
Command AddModelsCommand(CLI::App& app);
Command AddModelCommand(CLI::App& app);
Command AddDevicesCommand(CLI::App& app);
Command AddCalibrateCommand(CLI::App& app);
Command AddProfileCommand(CLI::App& app);

// Every command, in the order `dtsim --help` lists them.
std::vector<Command> AddCommands(CLI::App& app);

// Runs the parsed command and returns the exit status: 0 success, 2 bad
// input (UserError), 3 an infeasible plan (InfeasiblePlan), 1 anything else,
// 128 + signal when interrupted. In an MPI job a failing rank ends the
// others with the same status.
int RunParsedCommand(const Command& command);

}  // namespace dtsim::tools
