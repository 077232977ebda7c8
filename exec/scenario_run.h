// A scenario run for real on this machine: what `dtsim exec`, `validate
// SCENARIO`, `profile` and `tta` need from the scenario besides its plan.
// The scenario's options become ExecOptions, its optimizer an
// OptimizerOptions, its data a Dataset; a run that does not fit this
// machine's memory is refused before any rank starts.
//
// exec never builds a plan (that is sim::MakePlan's): the caller builds it
// from PlanScenario(s) and passes it in.
//
//   config::Scenario s = config::LoadScenario(path);
//   CheckExecutable(s);
//   plan::Plan plan = sim::MakePlan(PlanScenario(s), graph, 0);    // caller
//   CheckMemory(o, s, plan, graph, LocalMachineMemory(o.backend));
//   ExecOptions eo = MakeExecOptions(o, s, plan.num_ranks());
//   ScenarioData data = MakeScenarioData(o, graph, s.seed, &eo);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "exec/backend.h"
#include "exec/comm/communicator.h"
#include "exec/data/dataset.h"
#include "exec/device_runtime.h"
#include "exec/kernels/cpu_isa.h"
#include "exec/runtime/optimizer.h"
#include "exec/runtime/plan_executor.h"
#include "hw/catalog.h"
#include "models/graph.h"
#include "plan/plan.h"

namespace dtsim::exec {

// Input-pipeline threads per GPU rank by default: PyTorch DataLoader's
// num_workers as its ImageNet example sets it (4 per GPU;
// pytorch/examples imagenet/main.py, --workers default 4).
inline constexpr int kCudaInputThreads = 4;
// Real iterations a run makes when ScenarioRunOptions::iterations is 0 (the
// first is warm-up, not measured).
inline constexpr int kDefaultIterations = 20;

// How a scenario runs here, beyond what the scenario file says (the
// command line of `dtsim exec` and `validate SCENARIO`).
struct ScenarioRunOptions {
  int iterations = 0;            // 0 = kDefaultIterations
  bool mpi_allreduce = false;    // MPI_Allreduce instead of the plan's ring/tree
  // "cpu" (Eigen) or "cuda" (a GPU per rank, NCCL all-reduce; exec only).
  std::string backend = "cpu";
  // Input-pipeline threads per rank that draw the next batches during the
  // current iteration (ExecOptions::input_threads); -1 = the backend's
  // default: 0 on cpu (each rank has one core, which the pipeline would take
  // from compute), kCudaInputThreads on cuda.
  int input_threads = -1;
  // CPU backend: threads each rank's kernels run on (CpuBackend).
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
};

// The optimizer exec runs for the scenario's parallelism.optimizer, at
// learning rate `lr` (<= 0: 0.01, Adam 1e-3).
OptimizerOptions OptimizerFor(const config::Scenario& s, double lr);
// Throws UserError for what real execution does not do (tensor
// parallelism, ...), before any work.
void CheckExecutable(const config::Scenario& s);

// The scenario whose plan a real run replays: `s` with the plan iterations
// one real iteration walks through (PlanExecutor replays plan iteration
// i % H): H + 1 with local SGD (H = config::AveragingPeriod: a whole
// averaging round and the iteration after it), else 1.
config::Scenario PlanScenario(const config::Scenario& s);

// The real iterations `o` asks for (its iterations, or kDefaultIterations).
int IterationsAsked(const ScenarioRunOptions& o);
// The CPU kernels a run uses: the portable build with `portable`, else the
// fastest one this CPU runs.
CpuIsa CpuIsaOf(const ScenarioRunOptions& o);
// The folder a run writes to: o.out_dir, else the scenario's outputs.dir.
std::string OutputDirOf(const ScenarioRunOptions& o, const config::Scenario& s);

// What ExecutePlan runs with, for `ranks` processes: `o` and the scenario's
// optimizer, seed and straggler slowdowns (ranks outside [0, ranks) are
// ignored); checkpoints under OutputDirOf/checkpoints; the timeline
// recorded. No log or warn callbacks, no evaluation data (MakeScenarioData).
// Throws UserError for inconsistent learning-rate or evaluation options.
ExecOptions MakeExecOptions(const ScenarioRunOptions& o, const config::Scenario& s, int ranks);

// The memory a run on this machine may take.
struct MachineMemory {
  // Bytes a new process can allocate now (MemAvailable of /proc/meminfo);
  // 0 = unknown, not checked.
  double host_available_bytes = 0;
  // The local GPUs (exec::LocalGpus), each with its memory in bytes; only
  // read for the cuda backend, where none means nothing is checked (the run
  // reports the missing GPU itself).
  std::vector<hw::DeviceSpec> gpus;
};
// This machine's memory, as a run on `backend` ("cpu" or "cuda") needs it:
// GPUs are listed for cuda only.
MachineMemory LocalMachineMemory(const std::string& backend);

// Throws InfeasiblePlan (naming the scenario, the bytes per purpose and a
// hint) when every rank of `plan`, all on this machine, needs more memory
// than `machine` has: host memory for the CPU backend, each GPU's for CUDA
// (rank r on GPU r mod GPUs). Call before any rank starts.
void CheckMemory(const ScenarioRunOptions& o, const config::Scenario& s, const plan::Plan& plan,
                 const models::ModelGraph& graph, const MachineMemory& machine);

// The data a run trains on and evaluates with (exec/data/model_datasets.h).
struct ScenarioData {
  std::unique_ptr<Dataset> train;
  std::unique_ptr<Dataset> eval;  // null unless eval_every > 0
};
// o.dataset (or a synthetic set drawn from `seed`) and, with
// eo->eval_every > 0, its test split, whose size caps eo->eval_samples
// (o.eval_samples, 0 = all); sets eo->eval_data, which points into the
// returned ScenarioData (keep it alive while eo is used).
ScenarioData MakeScenarioData(const ScenarioRunOptions& o, const models::ModelGraph& graph,
                              std::uint64_t seed, ExecOptions* eo);

// The backend a rank computes on: the CPU kernels, or (cuda) this rank's
// GPU with NCCL all-reduces. Not movable: eo->device_all_reduce points
// into it.
class RunBackend {
 public:
  RunBackend(const RunBackend&) = delete;
  RunBackend& operator=(const RunBackend&) = delete;
  Backend& get() { return device_.backend ? *device_.backend : *cpu_; }

 private:
  friend std::unique_ptr<RunBackend> MakeRunBackend(const ScenarioRunOptions&,
                                                    const config::Scenario&, Communicator&,
                                                    ExecOptions*);
  RunBackend() = default;
  std::unique_ptr<Backend> cpu_;
  DeviceRuntime device_;
};
// o.backend for this rank of `world` (every rank calls it: MakeCudaRuntime
// is collective). On cuda, sets eo's task timing when ranks share a GPU and
// (unless parallelism.aggregation: host) routes all-reduces over every rank
// through NCCL; `world` must outlive the result.
std::unique_ptr<RunBackend> MakeRunBackend(const ScenarioRunOptions& o, const config::Scenario& s,
                                           Communicator& world, ExecOptions* eo);

}  // namespace dtsim::exec
