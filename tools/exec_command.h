// `dtsim exec` and `dtsim validate SCENARIO`: the scenario's plan run for
// real on this machine, one MPI process per rank, and (validate) compared
// with the simulator's prediction.
#pragma once

#include <sys/types.h>

#include <functional>
#include <iosfwd>
#include <string>

#include "exec/scenario_run.h"

namespace CLI {
class App;
}  // namespace CLI

namespace dtsim::tools {

class CommandEnv;

// What `dtsim exec` and `validate SCENARIO` run: the scenario at
// scenario_path, run as exec::ScenarioRunOptions say, plus how the command
// starts its ranks and what validate predicts with.
struct ExecCommandOptions : exec::ScenarioRunOptions {
  std::string scenario_path;
  // >= 1: run `mpirun -np <ranks> dtsim exec ...` (or validate) instead of
  // running here; 0 = run in this process (under mpirun: as its rank).
  int ranks = 0;
  bool quiet = false;            // no step log
  bool validate = false;         // also predict, compare and write validation.{json,md}
  // validate: the device profile of the prediction; "" = the scenario's
  // cluster.device_profile, else kDefaultProfile, measured first (quick
  // calibration, all ranks) when that file does not exist.
  std::string profile;
  // validate: an op-cost table (dtsim profile) or torch.profiler trace the
  // prediction prices compute from (workload.cost_model: measured); "" = the
  // scenario's cost model.
  std::string cost_table;
  // Emulated cluster network (exec/netem/emulated_network.h; needs root):
  // each rank in its own network namespace on a bridge, its link shaped to
  // this bandwidth per direction ("1Gbps", "100Mbps", ...); "" = none, the
  // ranks talk through shared memory. validate then predicts with this
  // link between the ranks instead of the profile's.
  std::string network;
  // With `network`: one-way latency added to every message ("50us"; "" =
  // 0), by netem where the kernel has it, else by the ranks' transport.
  std::string latency;
  // Set by the process that built the network on the ranks it starts (not
  // for users): the ranks are inside it, and (latency_in_transport) add
  // the latency to their sends themselves.
  bool in_emulated_network = false;
  bool latency_in_transport = false;
  // Called with mpirun's pid when this process starts it, and with 0 when
  // it has exited (tools/mpi_launch.h), e.g. to pass on an interrupt.
  std::function<void(pid_t)> on_launcher;
};

inline constexpr const char* kDefaultProfile = "results/calibration/device_profile.yaml";

// Every rank calls it (comm non-null when started by an MPI launcher; null
// runs one rank in this process). Rank 0 prints and writes the results.
void ExecCommand(const ExecCommandOptions& options, exec::Communicator* comm, std::ostream& out,
                 std::ostream& err);

// The options exec and `validate SCENARIO` share (how the ranks run:
// --ranks, --iterations, --mpi-allreduce, --threads, --portable, --network,
// --latency), declared on `cmd` with `prefix` before each description.
void AddRankOptions(CLI::App* cmd, ExecCommandOptions* o, const char* prefix);
// Runs exec (or validate, with o.validate) as main() lends it `env`: MPI
// when a launcher started this process, interrupts forwarded to mpirun.
void RunExec(ExecCommandOptions& o, CommandEnv& env);

}  // namespace dtsim::tools
