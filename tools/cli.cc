#include "tools/cli.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "common/error.h"
#include "exec/comm/mpi_world.h"
#include "tools/heap_pages.h"
#include "tools/interrupt_watcher.h"
#include "tools/mpi_launch.h"

namespace dtsim::tools {

CommandEnv::CommandEnv(std::ostream& o, std::ostream& e) : out(o), err(e) {}
CommandEnv::~CommandEnv() = default;

exec::MpiWorld* CommandEnv::StartMpiIfLaunched() {
  if (!mpi_ && LaunchedByMpiLauncher()) mpi_ = exec::StartMpiWorld();
  return mpi_.get();
}

exec::Communicator* CommandEnv::world() const { return mpi_ ? &mpi_->communicator() : nullptr; }

const CLI::Validator& FinitePositive() {
  static const CLI::Validator validator(
      [](std::string& text) {
        double v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v <= 0)
          return "expected a finite number > 0, got " + text;
        return std::string();
      },
      "FINITE > 0");
  return validator;
}

void AddJobsOption(CLI::App* cmd, int* jobs, const char* what) {
  cmd->add_option("-j,--jobs", *jobs,
                  std::string(what) + " simulated at once (default: one per core); results do not depend on it")
      ->check(CLI::PositiveNumber);
}

std::vector<Command> AddCommands(CLI::App& app) {
  return {AddRunCommand(app),       AddSearchCommand(app),   AddSweepCommand(app),
          AddFitCommand(app),       AddValidateCommand(app), AddExecCommand(app),
          AddTtaCommand(app),       AddChakraCommand(app),   AddPlanCommand(app),
          AddModelsCommand(app),    AddModelCommand(app),    AddDevicesCommand(app),
          AddCalibrateCommand(app), AddProfileCommand(app)};
}

int RunParsedCommand(const Command& command) {
  CommandEnv env(std::cout, std::cerr);
  // A run in an emulated network removes it when interrupted: the watcher
  // stops mpirun, the command unwinds, and its destructors clean up.
  // Started before any other thread (it blocks the signals for all).
  std::optional<InterruptWatcher> interrupts;
  if (command.wants_interrupts && command.wants_interrupts() && !LaunchedByMpiLauncher()) {
    interrupts.emplace();
    env.interrupts = &*interrupts;
  }
  auto interrupted = [&interrupts]() {
    if (!interrupts || interrupts->signal() == 0) return 0;
    std::cerr << "dtsim: interrupted (signal " << interrupts->signal()
              << "); the emulated network was removed\n";
    return 128 + interrupts->signal();
  };
  // A rank's error ends every rank, and mpirun exits with `status`
  // (RunUnderMpiLauncher passes it on, with the message).
  auto stop_ranks = [&env](int status) {
    exec::Communicator* world = env.world();
    if (world == nullptr || world->size() < 2) return status;
    std::cerr.flush();
    // When every rank fails at once (an error they agreed on), one abort
    // ends the job: rank 0's; simultaneous ones garble OpenMPI's report.
    if (world->rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    env.mpi()->Abort(status);
    return status;
  };
  auto report = [&](const std::exception& e, const UserError* user, bool infeasible, int status) {
    if (const int signal_status = interrupted()) return signal_status;
    std::cerr << ("dtsim: " + std::string(e.what()) + "\n");  // one write: ranks share stderr
    if (user && env.world()) RecordRankError(env.world()->rank(), *user, infeasible);
    return stop_ranks(status);
  };
  // Commands that only simulate build their plans on huge pages; 32 MiB
  // covers a 1,024-GPU run's plan and engine. Not in MPI ranks (a sweep's),
  // whose libraries watch the heap.
  if (command.huge_pages && !LaunchedByMpiLauncher()) BackHeapWithHugePages(std::size_t{32} << 20);
  try {
    command.run(env);
  } catch (const InfeasiblePlan& e) {
    return report(e, &e, true, 3);
  } catch (const UserError& e) {
    return report(e, &e, false, 2);
  } catch (const std::exception& e) {
    return report(e, nullptr, false, 1);
  }
  if (const int status = interrupted()) return status;
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace dtsim::tools
