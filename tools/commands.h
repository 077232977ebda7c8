// The dtsim subcommands. Each returns normally on success and throws
// UserError for bad input; main() maps errors to exit statuses.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "exec/comm/mpi_world.h"
#include "study/sweep.h"
#include "study/tta_options.h"

namespace dtsim::exec {
class Communicator;
}

namespace dtsim::tools {

struct RunOptions {
  std::string scenario_path;
  std::string out_dir;      // overrides outputs.dir when set
  std::string json_path;    // "-" = report to stdout; otherwise also write here
  bool no_trace = false;    // skip trace.json whatever the scenario says
  bool quiet = false;       // no step log
  // > 1: also simulate seeds seed+1 .. seed+repeat-1 and report the mean and
  // 95% confidence interval of throughput and step time ("repeats" in the
  // report). Outputs other than that summary come from the first seed.
  int repeat = 1;
  std::string engine;       // overrides the scenario's engine when set
  // "warn" (default) or "refuse": what a plan within the memory model's
  // margin of the capacity gets (config::Scenario::refuse_tight_memory).
  std::string memory_check = "warn";
};
void RunCommand(const RunOptions& options, std::ostream& out, std::ostream& err);

struct SweepOptions {
  std::string scenario_path;
  std::string out_dir;           // default: the scenario's outputs.dir (results/<name>)
  int jobs = 0;                  // points simulated at once; 0 = one per core
  bool quiet = false;            // no progress bar, no summary
  bool err_is_terminal = false;  // stderr is a terminal: show the progress bar at once
                                 // (otherwise only once the sweep has run for ~1 s)
  // Also write tensorboard/: the sweep as TensorBoard HParams (an
  // experiment, one session folder per point).
  bool tensorboard = false;
};
// Simulates every point of a sweep scenario (study/sweep.h) and writes
// sweep.csv, throughput.svg, scaling_efficiency.svg, breakdown.svg and
// index.html into the output folder, all or nothing. Progress goes to `err`,
// the list of files written to `out`.
// With `mpi` (started by an MPI launcher): the points are split over the
// ranks, and rank 0 writes the same files as one process would.
void SweepCommand(const SweepOptions& options, exec::MpiWorld* mpi, std::ostream& out,
                  std::ostream& err);

// Runs the sweep's points on `jobs` threads (study::RunSweep) with a progress
// bar of `unit` on `err` (none when `quiet`); `*seconds` receives the time
// taken. With `mpi` (a process an MPI launcher started, of 2 or more ranks):
// each rank runs every size-th point, and rank 0 gathers them all; the
// other ranks get an empty vector and must write nothing.
std::vector<study::PointResult> RunSweepWithProgress(const study::Sweep& sweep, int jobs, bool quiet,
                                                   bool err_is_terminal, const char* unit,
                                                   exec::MpiWorld* mpi, std::ostream& err,
                                                   double* seconds);

struct SearchOptions {
  std::string scenario_path;
  std::string out_dir;  // default: <the scenario's outputs.dir>/search
  // The search space (study::SearchSpace); empty lists keep its defaults. A
  // value given twice is searched once.
  std::vector<int> devices;
  std::vector<int> micro_batch_sizes;
  std::vector<int> zero_stages;
  std::vector<int> tensor_parallel;
  int top = 10;                  // plans printed (index.html lists 100)
  int jobs = 0;                  // plans simulated at once; 0 = one per core
  bool quiet = false;            // no progress bar, no tables
  bool err_is_terminal = false;  // stderr is a terminal: show the progress bar at once
};
// Searches the plans of a scenario's model on its cluster at its global
// batch (study/search.h) and writes search.csv, pareto.csv, throughput.svg and
// index.html, all or nothing. Prints the Pareto front and the `top` fastest
// plans to `out`; progress to `err`. Throws InfeasiblePlan (after writing
// the files) when no plan fits.
// With `mpi`: as SweepCommand.
void SearchCommand(const SearchOptions& options, exec::MpiWorld* mpi, std::ostream& out,
                   std::ostream& err);

struct TtaOptions {
  std::string scenario_path;  // a scenario or sweep of data / local SGD / PS points
  std::string out_dir;        // default <the scenario's outputs.dir>/tta
  // Seconds per update as `dtsim exec` runs each point on this machine
  // (tools/local_run.h PredictAsLocalRun: its ranks share the cores, and
  // with `network` talk over the emulated link), instead of on the
  // scenario's cluster.
  bool local = false;
  std::string network;  // --network of exec ("100Mbps"); needs local
  std::string latency;  // --latency of exec; needs network
  study::TtaOptions study;  // the proxy, its data, runs, target and update rule; quiet: no summary
};
// Time to a target loss for every point of a sweep (study/tta.h): statistical
// efficiency measured on a proxy times the simulated seconds per update.
// Writes tta.csv, curves.csv, tta.svg, index.html and a TensorBoard event
// file of the curves.
void TtaCommand(const TtaOptions& options, std::ostream& out, std::ostream& err);

struct ChakraOptions {
  std::string prefix;        // traces PREFIX.0.et, PREFIX.1.et, ...
  std::string cluster_path;  // a scenario: its cluster, network and engine
  std::string engine;        // overrides the scenario's when set
  std::string out_dir;       // default results/chakra-<prefix's file name>
  std::int64_t batch = 0;    // samples per step of the trace, for throughput
  std::string comm_groups;   // ASTRA-sim communicator-group JSON; "" = none
  // Clean-up of converter output (plan/chakra_import.h ChakraCleanup).
  bool drop_dangling_deps = false;
  bool ignore_ctrl_deps = false;
  std::string host_ops = "refuse";  // "refuse", "drop" or "serialize"
};
// Simulates a Chakra trace (plan/chakra_import.h) on a scenario's cluster
// (sim/trace_simulation.h): prints the step time and its breakdown, writes
// summary.json.
void ChakraCommand(const ChakraOptions& options, std::ostream& out);

struct ValidateOptions {
  std::string dataset = "vtrain";                    // "vtrain" or "deepbench"
  std::string data_dir = "../shared/validation/vtrain";  // its CSV files, from the current folder
  std::string out_dir = "results/vtrain";
  int jobs = 0;                  // rows simulated at once; 0 = one per core
  int limit = 0;                 // > 0: only the first N rows of each file
  std::string intra_node_link;   // a catalog link instead of vTrain's stated 150 GB/s
  std::string kernel_launch;     // per-op overhead for every row, e.g. "30us"; "" = default
  std::string cost_model;        // vtrain: "kernels" or "roofline" for every row; "" = default
  std::string framework;         // vtrain: framework profile (name or file) for every row
  std::string protocols;         // vtrain: "ideal" or "nccl" for every row; "" = ideal
  // vtrain: constants to fit (comma-separated, validation/fit_constants.h)
  // on the rows of fold 0 of 2 (FoldOf of the row's file:line), scored on
  // the others; "" = no fit.
  std::string fit;
  bool quiet = false;            // no progress bar, no summary
  bool err_is_terminal = false;  // stderr is a terminal: show the progress bar at once
};
// Predicts every row of the data set with the default efficiencies and
// writes predictions.csv, summary.json, summary.md and scatter.svg (all or
// nothing). A row whose simulation fails is reported as failed and does not
// stop the others. The errors' summary goes to `out`, progress to `err`.
void ValidateCommand(const ValidateOptions& options, std::ostream& out, std::ostream& err);

// `dtsim fit RUNS.csv --fit per_kernel,per_op`: fits constants
// (validation/fit_constants.h) to runs a user measured
// (validation/measured_runs.h), with k-fold cross-validation; writes
// framework.yaml (the profile fitted on every row), fit.json and
// predictions.csv into out_dir.
struct FitOptions {
  std::string csv_path;
  std::string constants;       // comma-separated names
  int folds = 5;
  std::string out_dir = "results/fit";
  int jobs = 0;
  bool quiet = false;
};
void FitCommand(const FitOptions& options, std::ostream& out, std::ostream& err);

struct PlanOptions {
  std::string scenario_path;
  std::string json_path;    // export the task graph ("-" = stdout)
  std::string dot_path;     // Graphviz DOT of the model coloured by device
  int max_ranks = 16;
};
// Prints the plan's placement; writes the JSON and DOT files all or nothing
// (each folder's files committed once both are staged). Throws UserError
// when both name the same file.
void PlanCommand(const PlanOptions& options, std::ostream& out);

void ModelsCommand(std::ostream& out);
// `name` is a zoo name or, if it ends in .yaml/.yml/.onnx, a model file;
// the model's warnings (a folded ONNX export) go to `err`.
void ModelCommand(const std::string& name, std::ostream& out, std::ostream& err);
// `dtsim model NAME --kernels`: every op's GPU kernels (sim/cost/op_kernels.h)
// forward and backward with the kernel model's time on `device` at
// `precision` and `batch` samples, and the totals per pass.
struct ModelKernelsOptions {
  std::string device = "V100-SXM2-32GB";
  std::string precision = "fp32";
  int batch = 32;
};
void ModelKernelsCommand(const std::string& name, const ModelKernelsOptions& options,
                         std::ostream& out);
void DevicesCommand(bool local, std::ostream& out);

struct CalibrateCommandOptions {
  std::string out_path = "results/calibration/device_profile.yaml";  // the profile written
  bool quick = false;  // fewer, smaller measurements (~5 s on one core; for tests)
  // 0: measure in this process (and over MPI when started by mpirun with 2+
  // ranks). >= 2: run `mpirun -np <ranks> dtsim calibrate ...` instead, with
  // OpenMPI's run-as-root permission set in the child's environment.
  int ranks = 0;
  // Measure the portable kernels instead of the fastest build this CPU runs
  // (exec/kernels/cpu_isa.h); exec and validate must then run --portable.
  bool portable = false;
  int threads = 1;  // threads the kernels run on (exec --threads must match)
};
// Measures the CPU backend (exec/calibrate/) on rank 0, prints a progress
// line per measurement to `err`, then, when `comm` has 2+ ranks, the
// ping-pong latency and bandwidth between ranks 0 and 1; rank 0 prints the
// table to `out` and writes the profile (docs/device_profile.md), all or
// nothing. `comm` is null for a run without MPI; when non-null every rank
// calls this. Throws UserError for bad options, std::runtime_error when the
// relaunch under mpirun fails (tools/mpi_launch.h).
void CalibrateCommand(const CalibrateCommandOptions& options, exec::Communicator* comm,
                      std::ostream& out, std::ostream& err);

}  // namespace dtsim::tools
