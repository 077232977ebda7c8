// `dtsim exec` and `dtsim validate SCENARIO`: the scenario's plan run for
// real on this machine, one MPI process per rank, and (validate) compared
// with the simulator's prediction.
#pragma once

#include <iosfwd>
#include <string>

namespace dtsim::exec {
class Communicator;
}

namespace dtsim::tools {

struct ExecCommandOptions {
  std::string scenario_path;
  // >= 1: run `mpirun -np <ranks> dtsim exec ...` (or validate) instead of
  // running here; 0 = run in this process (under mpirun: as its rank).
  int ranks = 0;
  int iterations = 0;            // 0 = 20 (the first is warm-up, not measured)
  bool mpi_allreduce = false;    // MPI_Allreduce instead of the plan's ring/tree
  double learning_rate = 0;      // 0 = the optimizer's default (sgd/momentum 0.01, adam 1e-3)
  std::string dataset;           // a dtsim binary data set (docs/dataset_format.md); "" = synthetic
  int checkpoint_every = 0;      // iterations between checkpoints; 0 = none
  bool resume = false;           // continue from the latest checkpoint
  std::string out_dir;           // default: the scenario's outputs.dir
  bool quiet = false;            // no step log
  bool validate = false;         // also predict, compare and write validation.{json,md}
  // validate: the device profile of the prediction; "" = the scenario's
  // cluster.device_profile, else kDefaultProfile, measured first (quick
  // calibration, all ranks) when that file does not exist.
  std::string profile;
};

inline constexpr const char* kDefaultProfile = "results/calibration/device_profile.yaml";

// Every rank calls it (comm non-null when started by an MPI launcher; null
// runs one rank in this process). Rank 0 prints and writes the results.
void ExecCommand(const ExecCommandOptions& options, exec::Communicator* comm, std::ostream& out,
                 std::ostream& err);

}  // namespace dtsim::tools
