// `dtsim exec` and `dtsim validate SCENARIO`: the scenario's plan run for
// real on this machine, one MPI process per rank, and (validate) compared
// with the simulator's prediction.
#pragma once

#include <sys/types.h>

#include <functional>
#include <cstdint>
#include <iosfwd>
#include <string>

#include <memory>

#include "tools/exec_data.h"

namespace CLI {
class App;
}  // namespace CLI
namespace dtsim::exec {
class Communicator;
class Dataset;
}  // namespace dtsim::exec
namespace dtsim::models {
class ModelGraph;
}  // namespace dtsim::models

namespace dtsim::tools {

class CommandEnv;

// Input-pipeline threads per GPU rank by default: PyTorch DataLoader's
// num_workers as its ImageNet example sets it (4 per GPU;
// pytorch/examples imagenet/main.py, --workers default 4).
inline constexpr int kCudaInputThreads = 4;

struct ExecCommandOptions {
  std::string scenario_path;
  // >= 1: run `mpirun -np <ranks> dtsim exec ...` (or validate) instead of
  // running here; 0 = run in this process (under mpirun: as its rank).
  int ranks = 0;
  int iterations = 0;            // 0 = 20 (the first is warm-up, not measured)
  bool mpi_allreduce = false;    // MPI_Allreduce instead of the plan's ring/tree
  // "cpu" (Eigen) or "cuda" (a GPU per rank, NCCL all-reduce; exec only).
  std::string backend = "cpu";
  // Input-pipeline threads per rank that draw the next batches during the
  // current iteration (ExecOptions::input_threads); -1 = the backend's
  // default: 0 on cpu (each rank has one core, which the pipeline would take
  // from compute), kCudaInputThreads on cuda.
  int input_threads = -1;
  // CPU backend: threads each rank's kernels run on (exec::CpuBackend).
  int threads = 1;
  // CPU backend: the portable kernels (baseline x86-64, byte-identical on
  // every machine) instead of the fastest build this CPU runs (cpu_isa.h).
  bool portable = false;
  double learning_rate = 0;      // 0 = the optimizer's default (sgd/momentum 0.01, adam 1e-3)
  // Exponential decay (TensorFlow's exponential_decay): lr x rate^(step /
  // decay_steps), the exponent floored unless lr_smooth. 0 = constant.
  double lr_decay_rate = 0;
  std::int64_t lr_decay_steps = 0;
  bool lr_smooth = false;
  std::int64_t lr_warmup_steps = 0;  // linear warm-up steps (exec/train/lr_schedule.h); 0 = none
  std::string dataset;           // a dtsim binary data set (docs/dataset_format.md); "" = synthetic
  // Held-out evaluation (ExecOptions::eval_every) on the test split of the
  // IDX folder `dataset`: every eval_every iterations (0 = none), its first
  // eval_samples samples (0 = all); stop once the held-out accuracy reaches
  // stop_at_accuracy or the loss falls to stop_at_loss (0 = run on).
  int eval_every = 0;
  std::int64_t eval_samples = 0;
  double stop_at_accuracy = 0;
  double stop_at_loss = 0;
  int checkpoint_every = 0;      // iterations between checkpoints; 0 = none
  bool resume = false;           // continue from the latest checkpoint
  std::string out_dir;           // default: the scenario's outputs.dir
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
