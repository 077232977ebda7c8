#include "exec/scenario_run.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/units.h"
#include "exec/data/model_datasets.h"
#include "exec/local_devices.h"
#include "exec/runtime/rank_memory.h"

namespace dtsim::exec {

namespace fs = std::filesystem;

OptimizerOptions OptimizerFor(const config::Scenario& s, double lr) {
  OptimizerOptions o;
  switch (s.parallelism.optimizer) {
    case config::OptimizerKind::kSgd: o.algorithm = OptimizerAlgorithm::kSgd; break;
    case config::OptimizerKind::kMomentum: o.algorithm = OptimizerAlgorithm::kMomentum; break;
    case config::OptimizerKind::kAdam: o.algorithm = OptimizerAlgorithm::kAdam; break;
  }
  o.lr.initial_lr = lr > 0 ? lr : (o.algorithm == OptimizerAlgorithm::kAdam ? 1e-3 : 0.01);
  return o;
}

void CheckExecutable(const config::Scenario& s) {
  const std::string where = s.source_path;
  if (s.parallelism.hybrid.tensor_parallel > 1)
    throw UserError(where + ": tensor parallelism is simulated but not executed for real",
                    "set parallelism.hybrid.tensor_parallel: 1");
  if (s.workload.precision != hw::Precision::kFp32)
    throw UserError(where + ": precision " + std::string(hw::PrecisionName(s.workload.precision)) +
                        " is simulated but not executed for real: exec computes and stores fp32",
                    "set workload.precision: fp32");
  if (s.parallelism.hybrid.context_parallel > 1)
    throw UserError(where + ": context parallelism (ring attention, Ulysses) is simulated but not "
                            "executed for real",
                    "set parallelism.context_parallel: 1");
  if (s.parallelism.hybrid.expert_parallel > 1)
    throw UserError(where + ": expert parallelism is simulated but not executed for real",
                    "set parallelism.expert_parallel: 1");
  if (s.parallelism.strategy == config::Strategy::kData && s.parallelism.zero_stage == 3)
    throw UserError(where + ": zero_stage 3 (FSDP's parameter gathers) is simulated but not "
                    "executed for real",
                    "set parallelism.zero_stage: 2 or less");
  if (s.parallelism.strategy == config::Strategy::kLocalSgd && s.parallelism.post_local_steps > 0 &&
      s.parallelism.averaging == config::AveragingTransport::kParameterServer)
    throw UserError(where + ": post-local SGD over parameter servers is simulated but not "
                            "executed for real",
                    "use parallelism.averaging: all_reduce, or post_local_steps: 0");
  if (s.parallelism.strategy == config::Strategy::kLocalSgd &&
      s.parallelism.averaging_compression != config::AveragingCompression::kNone)
    throw UserError(where + ": compressed averaging is simulated but not executed for real",
                    "set parallelism.averaging_compression: none");
  if (s.parallelism.parameter_server.aggregate_in_machine && config::UsesServers(s))
    throw UserError(where + ": parameter servers with local_aggregation are simulated "
                            "but not executed for real",
                    "set parallelism.parameter_server.local_aggregation: none");
  if (s.parallelism.strategy == config::Strategy::kLocalSgd && s.parallelism.streaming_fragments > 1)
    throw UserError(where + ": streaming averages (parallelism.streaming) are simulated but not "
                            "executed for real",
                    "remove parallelism.streaming");
  if (s.parallelism.strategy == config::Strategy::kHybrid &&
      s.parallelism.hybrid.schedule == config::PipelineSchedule::kPipeDream2BW)
    throw UserError(where + ": schedule pipedream_2bw is simulated but not executed for real",
                    "use schedule gpipe or 1f1b");
  if (s.parallelism.strategy == config::Strategy::kHybrid &&
      s.parallelism.hybrid.schedule == config::PipelineSchedule::kPipeDream)
    throw UserError(where + ": schedule pipedream (weight stashing, replicated stages) is "
                            "simulated but not executed for real",
                    "use schedule gpipe or 1f1b");
  if (s.parallelism.hybrid.virtual_stages > 1)
    throw UserError(where + ": interleaved virtual stages are simulated but not executed for real",
                    "use schedule gpipe or 1f1b");
}

config::Scenario PlanScenario(const config::Scenario& s) {
  config::Scenario p = s;
  const bool local_sgd = s.parallelism.strategy == config::Strategy::kLocalSgd;
  p.workload.iterations = local_sgd ? config::AveragingPeriod(s) + 1 : 1;
  return p;
}

int IterationsAsked(const ScenarioRunOptions& o) {
  return o.iterations > 0 ? o.iterations : kDefaultIterations;
}

CpuIsa CpuIsaOf(const ScenarioRunOptions& o) {
  return o.portable ? CpuIsa::kPortable : BestCpuIsa();
}

std::string OutputDirOf(const ScenarioRunOptions& o, const config::Scenario& s) {
  return o.out_dir.empty() ? s.outputs.dir : o.out_dir;
}

ExecOptions MakeExecOptions(const ScenarioRunOptions& o, const config::Scenario& s, int ranks) {
  ExecOptions eo;
  eo.iterations = IterationsAsked(o);
  eo.mpi_allreduce = o.mpi_allreduce;
  eo.input_threads = o.input_threads >= 0 ? o.input_threads
                     : o.backend == "cuda" ? kCudaInputThreads
                                           : 0;
  eo.optimizer = OptimizerFor(s, o.learning_rate);
  if (o.lr_decay_rate > 0) {
    if (o.lr_decay_steps < 1)
      throw UserError("--lr-decay-rate needs --lr-decay-steps (steps per factor)",
                      "e.g. --lr-decay-rate 0.1 --lr-decay-steps 1000");
    eo.optimizer.lr.kind = LrScheduleKind::kExponential;
    eo.optimizer.lr.decay_rate = o.lr_decay_rate;
    eo.optimizer.lr.decay_steps = o.lr_decay_steps;
    eo.optimizer.lr.staircase = !o.lr_smooth;
  }
  if (o.lr_warmup_steps < 0)
    throw UserError("--lr-warmup-steps must be >= 0", "give the steps of linear warm-up");
  eo.optimizer.lr.warmup_steps = o.lr_warmup_steps;
  if (o.eval_every < 0 || o.eval_samples < 0 || o.stop_at_loss < 0 || o.stop_at_accuracy < 0 ||
      o.stop_at_accuracy > 1)
    throw UserError("--eval-every and --eval-samples must be >= 0, --stop-at-loss >= 0 and "
                    "--stop-at-accuracy in [0, 1]",
                    "e.g. --eval-every 20 --eval-samples 2000 --stop-at-accuracy 0.85");
  if ((o.stop_at_accuracy > 0 || o.stop_at_loss > 0 || o.eval_samples > 0) && o.eval_every == 0)
    throw UserError("--stop-at-accuracy, --stop-at-loss and --eval-samples need --eval-every N",
                    "evaluate every N iterations");
  eo.eval_every = o.eval_every;
  eo.stop_at_accuracy = o.stop_at_accuracy;
  eo.stop_at_loss = o.stop_at_loss;
  eo.seed = s.seed;
  eo.slowdown.assign(static_cast<std::size_t>(ranks), 1.0);
  for (const auto& slow : s.stragglers.slow_devices)
    for (int r : slow.ranks)
      if (r >= 0 && r < ranks) eo.slowdown[static_cast<std::size_t>(r)] = slow.factor;
  eo.checkpoint_every = o.checkpoint_every;
  eo.checkpoint_dir = (fs::path(OutputDirOf(o, s)) / "checkpoints").string();
  eo.resume = o.resume;
  eo.record_timeline = true;
  return eo;
}

namespace {

// Bytes of memory this machine can give a new process now: MemAvailable of
// /proc/meminfo (the kernel's estimate of what can be allocated without
// swapping); 0 when unknown.
double AvailableMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

}  // namespace

MachineMemory LocalMachineMemory(const std::string& backend) {
  MachineMemory m;
  m.host_available_bytes = AvailableMemoryBytes();
  if (backend == "cuda") m.gpus = LocalGpus();
  return m;
}

void CheckMemory(const ScenarioRunOptions& o, const config::Scenario& s, const plan::Plan& plan,
                 const models::ModelGraph& graph, const MachineMemory& machine) {
  const ExecOptions eo = MakeExecOptions(o, s, plan.num_ranks());
  std::vector<RankMemory> per_rank;
  for (plan::RankId r = 0; r < plan.num_ranks(); ++r)
    per_rank.push_back(EstimateRankMemory(plan, graph, eo, r));
  auto describe = [&](const std::vector<int>& ranks_in, double need, double have,
                      const std::string& what) {
    RankMemory sum;
    for (int r : ranks_in) {
      const RankMemory& m = per_rank[static_cast<std::size_t>(r)];
      sum.parameters += m.parameters;
      sum.optimizer += m.optimizer;
      sum.activations += m.activations;
      sum.checkpoint += m.checkpoint;
    }
    std::string msg = "the run needs about " + FormatBytes(need) + " of " + what + " (" +
                      std::to_string(ranks_in.size()) + " rank(s): parameters and gradients " +
                      FormatBytes(sum.parameters) + ", optimizer state " +
                      FormatBytes(sum.optimizer) + ", activations " +
                      FormatBytes(sum.activations);
    if (sum.checkpoint > 0) msg += ", checkpoint copies " + FormatBytes(sum.checkpoint);
    msg += ") but has " + FormatBytes(have);
    throw InfeasiblePlan(SourceLocation{s.source_path}, msg,
                         "lower workload.batch_per_device or the micro-batch size, use a "
                         "smaller model, or split it over more ranks");
  };
  if (o.backend == "cuda") {
    const std::vector<hw::DeviceSpec>& gpus = machine.gpus;
    if (gpus.empty()) return;  // the run reports the missing GPU itself
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      std::vector<int> on;
      double need = 0;
      for (int r = 0; r < plan.num_ranks(); ++r)
        if (static_cast<std::size_t>(r) % gpus.size() == g) {
          on.push_back(r);
          need += per_rank[static_cast<std::size_t>(r)].total();
        }
      if (need > gpus[g].memory_bytes)
        describe(on, need, gpus[g].memory_bytes, "memory on GPU " + std::to_string(g) + " (" +
                                                     gpus[g].name + ")");
    }
    return;
  }
  const double available = machine.host_available_bytes;
  double need = 0;
  std::vector<int> all;
  for (int r = 0; r < plan.num_ranks(); ++r) {
    all.push_back(r);
    need += per_rank[static_cast<std::size_t>(r)].total();
  }
  if (available > 0 && need > available)
    describe(all, need, available, "memory on this machine (MemAvailable in /proc/meminfo)");
}

ScenarioData MakeScenarioData(const ScenarioRunOptions& o, const models::ModelGraph& graph,
                              std::uint64_t seed, ExecOptions* eo) {
  ScenarioData d;
  d.train = MakeDataset(graph, o.dataset, seed);
  if (eo->eval_every > 0) {
    d.eval = MakeEvalDataset(graph, o.dataset);
    eo->eval_data = d.eval.get();
    eo->eval_samples = o.eval_samples > 0 ? std::min(o.eval_samples, d.eval->size())
                                          : d.eval->size();
  }
  return d;
}

std::unique_ptr<RunBackend> MakeRunBackend(const ScenarioRunOptions& o, const config::Scenario& s,
                                           Communicator& world, ExecOptions* eo) {
  std::unique_ptr<RunBackend> b(new RunBackend());
  if (o.backend == "cpu") b->cpu_ = MakeCpuBackend(CpuIsaOf(o), o.threads);
  if (o.backend != "cuda") return b;
  b->device_ = MakeCudaRuntime(world);
  DeviceRuntime& device = b->device_;
  // Ranks time-sharing a GPU wait after each task: with device marks, a
  // task's time took in the other process's time slices (an H100 shared
  // by a 2-stage CIFAR-10 pipeline: 28.5 ms per step against 15.9).
  if (device.shares_device) eo->task_timing = TaskTiming::kWaitEach;
  // NCCL carries all-reduces over every rank; other groups go through MPI,
  // and so does everything with parallelism.aggregation: host (copied to
  // host memory, summed there by MPI, copied back).
  if (!s.parallelism.aggregate_on_host) {
    eo->device_all_reduce = [&device, &world](float* buffer, std::int64_t count,
                                              const std::vector<int>& group) {
      if (!device.all_reduce || static_cast<int>(group.size()) != world.size()) return false;
      device.all_reduce->Sum(buffer, count);
      return true;
    };
  }
  return b;
}

}  // namespace dtsim::exec
