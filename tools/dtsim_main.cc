// dtsim: predicts how fast a deep-learning model trains on a GPU cluster.
// main() is the only place that decides the exit status:
//   0 success, 2 bad input (scenario, model file, arguments), 3 valid input
//   but an infeasible plan (does not fit in memory, a split that does not
//   divide; InfeasiblePlan), 1 anything else.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "common/error.h"
#include "exec/comm/mpi_world.h"
#include "sim/plan_size.h"
#include "tools/commands.h"
#include "tools/profile_command.h"
#include "tools/exec_command.h"
#include "tools/heap_pages.h"
#include "tools/interrupt_watcher.h"
#include "tools/mpi_launch.h"

namespace {

// A finite number > 0. CLI::PositiveNumber lets "nan" through (nan <= 0 is
// false), and `--lr nan` then silently trained at the default rate.
const CLI::Validator kFinitePositive(
    [](std::string& text) {
      double v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v <= 0)
        return "expected a finite number > 0, got " + text;
      return std::string();
    },
    "FINITE > 0");

// --network and --latency of exec and validate, and the options the process
// that builds the network passes to the ranks it starts (hidden).
void AddNetworkOptions(CLI::App* cmd, dtsim::tools::ExecCommandOptions* o, const char* prefix) {
  cmd->add_option("--network", o->network,
                  std::string(prefix) +
                      "Run each rank in its own network namespace, linked to a bridge at this "
                      "bandwidth per direction (e.g. 1Gbps, 10Gbps, 100Mbps; tc token bucket), "
                      "like a cluster on one Ethernet switch; needs root. See "
                      "docs/emulated_network.md");
  cmd->add_option("--latency", o->latency,
                  std::string(prefix) +
                      "With --network: one-way latency added to every message (e.g. 50us; "
                      "netem, else added by the ranks)");
  cmd->add_flag("--in-emulated-network", o->in_emulated_network)->group("");
  cmd->add_flag("--latency-in-transport", o->latency_in_transport)->group("");
}

}  // namespace

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

  dtsim::tools::RunOptions run;
  auto* run_cmd = app.add_subcommand(
      "run", "Simulate a scenario: prints a step log and summary, writes report.json, summary.csv "
             "and trace.json (Chrome/Perfetto) under results/<name>/ unless told otherwise");
  run_cmd->add_option("scenario", run.scenario_path, "Scenario YAML file")->required();
  run_cmd->add_option("-o,--out", run.out_dir, "Output folder (default: the scenario's outputs.dir)");
  run_cmd->add_option("--json", run.json_path,
                      "Also write the JSON report to this path; '-' prints it to stdout "
                      "(the step log then goes to stderr)");
  run_cmd->add_flag("--no-trace", run.no_trace, "Do not write trace.json");
  run_cmd->add_flag("-q,--quiet", run.quiet, "No step log");
  run_cmd->add_option("--engine", run.engine,
                      "analytic (default: fast, each collective priced alone) or simgrid (flows "
                      "share links as they come and go; slower)")
      ->check(CLI::IsMember({"analytic", "simgrid"}));
  run_cmd->add_option("--repeat", run.repeat,
                      "Simulate N seeds (seed, seed+1, ...) and report the mean and 95% "
                      "confidence interval of throughput and step time; matters with random "
                      "stragglers")
      ->check(CLI::PositiveNumber);

  dtsim::tools::SweepOptions sweep;
  dtsim::tools::SearchOptions search;
  auto* search_cmd = app.add_subcommand(
      "search", "Find the fastest plans for a scenario's model on its cluster at its global "
                "batch: data/tensor/pipeline degrees, micro-batch size, schedule, ZeRO stage and "
                "recomputation; prints the Pareto front of throughput against devices and the "
                "ranked plans, writes search.csv, pareto.csv, throughput.svg and index.html");
  search_cmd->add_option("scenario", search.scenario_path,
                         "Scenario YAML file: model, cluster and global batch "
                         "(parallelism.global_batch, else batch_per_device x devices)")
      ->required();
  search_cmd->add_option("-o,--out", search.out_dir,
                         "Output folder (default: <the scenario's outputs.dir>/search)");
  search_cmd->add_option("--devices", search.devices,
                         "Device counts to try (default: the cluster's, halved down to one node)")
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, dtsim::sim::kMaxDevices));
  search_cmd->add_option("--micro-batch-sizes", search.micro_batch_sizes,
                         "Micro-batch sizes to try (default: the powers of two dividing a replica's batch, and that batch)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  search_cmd->add_option("--zero-stages", search.zero_stages, "ZeRO stages to try (default 0,1)")
      ->delimiter(',')
      ->check(CLI::Range(0, 3));
  search_cmd->add_option("--tensor-parallel", search.tensor_parallel,
                         "Tensor-parallel degrees to try (default 1,2,4,8; those dividing a "
                         "node's devices)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  search_cmd->add_option("--top", search.top, "Plans printed (default 10)")
      ->check(CLI::PositiveNumber);
  search_cmd->add_option("-j,--jobs", search.jobs,
                         "Plans simulated at once (default: one per core); results do not "
                         "depend on it")
      ->check(CLI::PositiveNumber);
  search_cmd->add_flag("-q,--quiet", search.quiet, "No progress bar and no tables");

  auto* sweep_cmd = app.add_subcommand(
      "sweep", "Simulate every combination of the values a scenario lists (a sweep): writes "
               "sweep.csv, throughput.svg, scaling_efficiency.svg, breakdown.svg and index.html "
               "under results/<name>/ unless told otherwise");
  sweep_cmd->add_option("scenario", sweep.scenario_path, "Scenario YAML file with lists")
      ->required();
  sweep_cmd->add_option("-o,--out", sweep.out_dir,
                        "Output folder (default: the scenario's outputs.dir)");
  sweep_cmd->add_option("-j,--jobs", sweep.jobs,
                        "Points simulated at once (default: one per core); results do not "
                        "depend on it")
      ->check(CLI::PositiveNumber);
  sweep_cmd->add_flag("-q,--quiet", sweep.quiet, "No progress bar and no summary");
  sweep_cmd->add_flag("--tensorboard", sweep.tensorboard,
                      "Also write tensorboard/: the axes as TensorBoard HParams, one session "
                      "folder per point with its figures (tensorboard --logdir OUT/tensorboard)");
  sweep_cmd->footer(
      "A list where the scenario expects a single value makes that key an axis of the sweep,\n"
      "and the sweep simulates every combination of the axes' values (the first axis in the\n"
      "file varies slowest). For example, 8 x 6 = 48 points:\n"
      "\n"
      "  cluster:\n"
      "    nodes: [1, 2, 4, 8, 16, 32, 64, 128]\n"
      "  parallelism:\n"
      "    strategy: local_sgd\n"
      "    averaging_period: [1, 2, 5, 10, 20, 50]\n"
      "\n"
      "Keys whose value is itself a list (the ranks under stragglers) are not axes: give a\n"
      "list of lists to sweep them. Lists of mappings (cluster.devices, cluster.links) are\n"
      "never axes, but a list inside one of their entries is. Errors name the file, line and\n"
      "column of the value at fault. See docs/scenario.md, section Sweeps.");

  dtsim::tools::FitOptions fit;
  auto* fit_cmd = app.add_subcommand(
      "fit", "Fit host-side constants (framework dispatch costs, input cost per sample) to runs "
             "you measured, with a k-fold cross-validated error; writes framework.yaml, "
             "fit.json and predictions.csv");
  fit_cmd->add_option("runs", fit.csv_path,
                      "CSV of measured runs: scenario, overrides (optional), step_time or "
                      "throughput (docs/fit.md)")
      ->required();
  fit_cmd->add_option("--fit", fit.constants,
                      "Constants to fit, comma-separated: per_op, per_kernel, per_collective, "
                      "per_step, graph_launch, cycle_time, input.per_sample")
      ->required();
  fit_cmd->add_option("--folds", fit.folds, "Cross-validation folds (default 5)")
      ->check(CLI::Range(2, 100));
  fit_cmd->add_option("-o,--out", fit.out_dir, "Output folder")->capture_default_str();
  fit_cmd->add_option("-j,--jobs", fit.jobs,
                      "Runs simulated at once (default: one per core); results do not depend "
                      "on it")
      ->check(CLI::PositiveNumber);
  fit_cmd->add_flag("-q,--quiet", fit.quiet, "No summary");

  dtsim::tools::ValidateOptions validate;
  dtsim::tools::ExecCommandOptions validate_exec;
  validate_exec.validate = true;
  std::string validate_target;
  auto* validate_cmd = app.add_subcommand(
      "validate",
      "Compare predictions with measurements. 'vtrain' predicts vTrain's Megatron-DeepSpeed "
      "iteration times on A100 clusters (writes predictions.csv, summary.json, summary.md and "
      "scatter.svg under results/vtrain/). 'deepbench' predicts Baidu DeepBench's GEMM and "
      "convolution kernel times on eight NVIDIA GPUs with the kernel model, refits its "
      "constants leaving each GPU out, and writes the same files under results/deepbench/. "
      "'kernels' fits the kernel model's per-generation constants for a GPU generation "
      "DeepBench did not measure on kernel times in DeepBench's format (default: this "
      "project's H100 rows, scenarios/fit/h100-kernels) and scores them on held-out layers "
      "(results/kernels-h100/). A "
      "scenario file runs the scenario for real on this "
      "machine (one MPI process per device) and predicts it with the local device profile, "
      "then prints predicted against measured step time, throughput, compute and "
      "communication (writes validation.json and validation.md)");
  validate_cmd->add_option("target", validate_target,
                           "vtrain, deepbench, kernels, allreduce, or a scenario YAML file")
      ->required();
  validate_cmd->add_option("--data", validate.data_dir,
                           "vtrain: folder of ground_truth_single.csv and ground_truth_multi.csv; "
                           "deepbench: of gemm.csv and conv.csv (default "
                           "../shared/validation/deepbench)")
      ->capture_default_str();
  validate_cmd->add_option("-o,--out", validate.out_dir,
                           "Output folder (a scenario: default its outputs.dir; deepbench: "
                           "default results/deepbench)")
      ->capture_default_str();
  validate_cmd->add_option("-j,--jobs", validate.jobs,
                           "Rows simulated at once (default: one per core); results do not "
                           "depend on it")
      ->check(CLI::PositiveNumber);
  validate_cmd->add_option("--limit", validate.limit,
                           "Only the first N rows of each file (quick runs)")
      ->check(CLI::PositiveNumber);
  validate_cmd->add_option("--intra-node-link", validate.intra_node_link,
                           "A catalog link between the GPUs of a node instead of vTrain's "
                           "stated 150 GB/s, e.g. nvswitch-a100 (the datasheet's 300 GB/s)");
  validate_cmd->add_option("--kernel-launch", validate.kernel_launch,
                           "Overhead per op for every row (e.g. 30us for PyTorch eager's per-op "
                           "CPU cost); default: the simulator's 5 us CUDA launch latency");
  validate_cmd->add_option("--cost-model", validate.cost_model,
                           "vtrain: kernels or roofline for every row (default: the "
                           "simulator's choice, the kernel model for the A100)");
  validate_cmd->add_option("--framework", validate.framework,
                           "vtrain: framework profile for every row: a built-in name (e.g. "
                           "megatron-lm) or a profile file; default none (the devices alone)");
  validate_cmd->add_option("--protocols", validate.protocols,
                           "vtrain: collective pricing for every row: ideal (default) or nccl "
                           "(NCCL's LL, LL128 and Simple protocols)")
      ->check(CLI::IsMember({"ideal", "nccl"}));
  validate_cmd->add_option("--fit", validate.fit,
                           "vtrain: constants to fit, comma-separated (e.g. "
                           "per_kernel,per_op,per_step), on a fixed half of the rows (by a hash "
                           "of file:line) and scored on the other half; writes fit.json and "
                           "fit.md beside the predictions made with the fitted constants");
  validate_cmd->add_flag("-q,--quiet", validate.quiet, "No progress bar and no summary");
  validate_cmd->add_option("--ranks", validate_exec.ranks,
                           "Scenario: processes to run (default: the plan's ranks, devices plus "
                           "parameter servers)")
      ->check(CLI::PositiveNumber);
  validate_cmd->add_option("--iterations", validate_exec.iterations,
                           "Scenario: iterations to run for real (default 20; the first is "
                           "warm-up)")
      ->check(CLI::PositiveNumber);
  validate_cmd->add_option("--profile", validate_exec.profile,
                           "Scenario: device profile for the prediction (default: the "
                           "scenario's, else results/calibration/device_profile.yaml, measured "
                           "first with a quick calibration when missing)");
  validate_cmd->add_option("--cost-table", validate_exec.cost_table,
                           "Scenario: price compute from this op-cost table (dtsim profile) "
                           "or torch.profiler trace, as workload.cost_model: measured does");
  validate_cmd->add_flag("--mpi-allreduce", validate_exec.mpi_allreduce,
                         "Scenario: MPI's own all-reduce instead of the plan's ring or tree");
  validate_cmd->add_option("--threads", validate_exec.threads,
                           "Scenario: threads each rank's CPU kernels run on (the device "
                           "profile must have measured as many: dtsim calibrate --threads)")
      ->check(CLI::PositiveNumber);
  validate_cmd->add_flag("--portable", validate_exec.portable,
                     "Scenario: CPU backend: the portable kernels (baseline x86-64, byte-identical "
                     "results on every machine) instead of the fastest build this CPU runs "
                     "(AVX2+FMA where present)");
  AddNetworkOptions(validate_cmd, &validate_exec, "Scenario: ");
  validate_cmd->footer(
      "vtrain: every row becomes a hybrid (tensor x pipeline x data) scenario: A100-SXM4-80GB,\n"
      "8 per node, 150 GB/s NVLink, 4 x HDR InfiniBand per node, fp16, 1F1B, recompute on,\n"
      "every constant at its default (the GPU kernel model unless --cost-model roofline or\n"
      "--kernel-launch). A row whose simulation fails is reported as failed (with its\n"
      "message in predictions.csv and summary.md) and the others go on.\n"
      "\n"
      "deepbench: every GEMM and convolution kernel of DeepBench's NVIDIA training sheets\n"
      "(8 GPUs, fp32 and fp16) is predicted by the kernel model (sim/gpu_kernel_model.h) with\n"
      "the shipped constants, with constants refitted without its GPU, and by the roofline;\n"
      "errors per GPU, precision and kernel go to summary.md and summary.json (about 10 s).\n"
      "\n"
      "kernels: the rows' generation gets its own SIMT fraction, half reuse and Winograd,\n"
      "dgrad and wgrad fractions (validation/deepbench_fit.h, step 3; every other constant\n"
      "as shipped), fitted on half of the rows (by a hash of file:line) and scored on the\n"
      "other half, and the reverse; then on every row. Errors against Volta's values (what\n"
      "a generation without data takes) and the shipped ones go to summary.md.\n"
      "\n"
      "A scenario: it runs for real (as dtsim exec does, on the CPU backend) and is predicted\n"
      "with the device profile and overlap off (a CPU rank computes and communicates on one\n"
      "thread). Results go to the scenario's outputs.dir: validation.json, validation.md,\n"
      "validation.svg, exec_trace.json and predicted_trace.json. For example:\n"
      "\n"
      "  dtsim validate scenarios/local/cifar10-dp-2cpu.yaml\n"
      "  dtsim validate scenarios/local/wide-mlp-dp-2cpu-1gbps.yaml --network 1Gbps   # as root");

  dtsim::tools::ExecCommandOptions exec;
  auto* exec_cmd = app.add_subcommand(
      "exec", "Run a scenario's plan for real on this machine: one MPI process per plan rank "
              "(each device, each parameter server), real kernels and real communication "
              "(MPI); prints the seeds' step log and writes exec.json (per-rank, per-iteration "
              "times and losses) and exec_trace.json (the measured timeline, Perfetto)");
  exec_cmd->add_option("scenario", exec.scenario_path, "Scenario YAML file")->required();
  exec_cmd->add_option("--ranks", exec.ranks,
                       "Processes to start under mpirun (default: the plan's ranks, i.e. the "
                       "devices plus any parameter servers); 'mpirun -np N dtsim exec SCENARIO' "
                       "works too")
      ->check(CLI::PositiveNumber);
  exec_cmd->add_option("--iterations", exec.iterations, "Iterations (default 20)")
      ->check(CLI::PositiveNumber);
  exec_cmd->add_option("--lr", exec.learning_rate,
                       "Initial learning rate (default 0.01; 0.001 for adam)")
      ->check(kFinitePositive);
  exec_cmd->add_option("--lr-decay-rate", exec.lr_decay_rate,
                       "Exponential decay: multiply the learning rate by this every "
                       "--lr-decay-steps steps (TensorFlow's exponential_decay; default: none)")
      ->check(kFinitePositive);
  exec_cmd->add_option("--lr-decay-steps", exec.lr_decay_steps, "Steps per decay factor")
      ->check(CLI::PositiveNumber);
  exec_cmd->add_flag("--lr-smooth", exec.lr_smooth,
                     "Decay continuously instead of in steps (staircase is the default)");
  exec_cmd->add_option("--dataset", exec.dataset,
                       "Train on this dtsim binary data set (docs/dataset_format.md), or on the "
                       "training split of an IDX folder (MNIST, Fashion-MNIST: "
                       "train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz]), read in a "
                       "new order every epoch drawn from the scenario's seed, instead of "
                       "a synthetic one shaped like the model's input");
  exec_cmd->add_option("--lr-warmup-steps", exec.lr_warmup_steps,
                       "Linear warm-up over the first N steps (Goyal et al. 2017; default 0)")
      ->check(CLI::NonNegativeNumber);
  exec_cmd->add_option("--eval-every", exec.eval_every,
                       "Evaluate the held-out loss and top-1 accuracy on the --dataset folder's "
                       "test split (t10k-*) before training and every N iterations; writes "
                       "eval.csv, exec.json's eval and TensorBoard's eval/ scalars")
      ->check(CLI::NonNegativeNumber);
  exec_cmd->add_option("--eval-samples", exec.eval_samples,
                       "Test samples per evaluation (the split's first N; default: all)")
      ->check(CLI::NonNegativeNumber);
  exec_cmd->add_option("--stop-at-accuracy", exec.stop_at_accuracy,
                       "Stop after the evaluation whose held-out accuracy reaches this (0-1)")
      ->check(CLI::Range(0.0, 1.0));
  exec_cmd->add_option("--stop-at-loss", exec.stop_at_loss,
                       "Stop after the evaluation whose held-out loss falls to this")
      ->check(CLI::NonNegativeNumber);
  exec_cmd->add_flag("--mpi-allreduce", exec.mpi_allreduce,
                     "MPI's own all-reduce instead of the plan's ring or tree");
  exec_cmd->add_option("--backend", exec.backend,
                       "cpu (Eigen, one core per rank) or cuda (one GPU per rank, cuBLAS and own "
                       "kernels, NCCL for all-reduces over every rank)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  exec_cmd->add_option("--threads", exec.threads,
                       "CPU backend: threads each rank's kernels run on (GEMMs and convolutions "
                       "split over them; default 1, one core per rank); results are "
                       "deterministic for a given count")
      ->check(CLI::PositiveNumber);
  exec_cmd->add_option("--input-threads", exec.input_threads,
                       "Threads per rank that draw the next iteration's batches while this one "
                       "trains (default: 0 with --backend cpu, 4 with cuda); the time a rank "
                       "waits for its batch is reported as input")
      ->check(CLI::NonNegativeNumber);
  exec_cmd->add_option("--checkpoint-every", exec.checkpoint_every,
                       "Save a checkpoint every N iterations (atomic; under <out>/checkpoints)")
      ->check(CLI::PositiveNumber);
  exec_cmd->add_flag("--resume", exec.resume, "Continue from the latest checkpoint");
  exec_cmd->add_option("-o,--out", exec.out_dir, "Output folder (default: the scenario's outputs.dir)");
  exec_cmd->add_flag("-q,--quiet", exec.quiet, "No step log");
  exec_cmd->add_flag("--portable", exec.portable,
                     "CPU backend: the portable kernels (baseline x86-64, byte-identical "
                     "results on every machine) instead of the fastest build this CPU runs "
                     "(AVX2+FMA where present)");
  AddNetworkOptions(exec_cmd, &exec, "");
  exec_cmd->footer(
      "Executed for real: data parallelism (ring or tree all-reduce over MPI point-to-point,\n"
      "or MPI's), local SGD (parameter averaging every H steps, over all-reduce or servers),\n"
      "parameter servers (synchronous k of n, or asynchronous with measured staleness),\n"
      "model and pipeline parallelism (GPipe, 1F1B), fixed straggler slowdowns. Simulated\n"
      "only: tensor parallelism, interleaved stages, straggler noise.");

  dtsim::tools::TtaOptions tta;
  auto* tta_cmd = app.add_subcommand(
      "tta", "Time to accuracy: for every point of a sweep, the time to reach a target loss = "
             "updates to the target, measured for real on a small proxy with the point's "
             "synchronisation (H, staleness, backup workers, workers), x the simulated seconds "
             "per update; writes tta.csv, curves.csv, tta.svg and index.html");
  tta_cmd->add_option("scenario", tta.scenario_path, "Scenario or sweep YAML file")->required();
  tta_cmd->add_option("-o,--out", tta.out_dir, "Output folder (default <outputs.dir>/tta)");
  tta_cmd->add_option("--proxy", tta.proxy,
                      "Model trained for real: a zoo name or model file (default: the scenario's)");
  tta_cmd->add_option("--dataset", tta.dataset,
                      "The proxy's data, shuffled by each seed as dtsim exec shuffles it: an IDX "
                      "folder (MNIST, Fashion-MNIST: trains on train-*, evaluates on the first "
                      "--eval-samples of t10k-*) or a dataset file (docs/dataset_format.md); "
                      "default a synthetic set shaped like the model");
  tta_cmd->add_option("--batch", tta.batch,
                      "Samples per worker per update on the proxy (default: batch_per_device)")
      ->check(CLI::Range(std::int64_t{1}, dtsim::tools::kMaxTtaBatch));
  tta_cmd->add_option("--workers", tta.workers,
                      "Worker counts to measure (default: each point's own); others are fitted "
                      "as a power law of the measured ones")
      ->delimiter(',')
      ->check(CLI::Range(1, dtsim::tools::kMaxTtaWorkers));
  tta_cmd->add_option("--steps", tta.steps, "Updates per run at most")
      ->check(CLI::Range(std::int64_t{1}, dtsim::tools::kMaxTtaSteps))
      ->capture_default_str();
  tta_cmd->add_option("--eval-every", tta.eval_every, "Updates between loss evaluations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  tta_cmd->add_option("--eval-samples", tta.eval_samples, "Held-out samples of each evaluation")
      ->check(CLI::Range(std::int64_t{1}, dtsim::tools::kMaxTtaEvalSamples))
      ->capture_default_str();
  tta_cmd->add_option("--seeds", tta.seeds, "Seeds per setting (the band comes from them)")
      ->check(CLI::Range(1, dtsim::tools::kMaxTtaSeeds))
      ->capture_default_str();
  auto* target = tta_cmd->add_option(
      "--target", tta.target,
      "Target: the held-out loss as a fraction of the initial one, in (0, 1] (the default, "
      "0.6, when no target is given)")->check(kFinitePositive & CLI::Range(0.0, 1.0));
  auto* target_loss = tta_cmd->add_option("--target-loss", tta.target_loss,
                                          "Target: an absolute held-out loss")
      ->check(kFinitePositive)
      ->excludes(target);
  tta_cmd->add_option("--target-accuracy", tta.target_accuracy,
                      "Target: a held-out top-1 accuracy in (0, 1] (a classifier)")
      ->check(kFinitePositive & CLI::Range(0.0, 1.0))
      ->excludes(target)
      ->excludes(target_loss);
  auto* lr = tta_cmd->add_option("--lr", tta.lr, "Initial learning rate for one worker's batch")
      ->check(kFinitePositive)
      ->capture_default_str();
  auto* lr_scaling = tta_cmd->add_option(
      "--lr-scaling", tta.lr_scaling,
      "How the rate grows with the samples per update: linear (Goyal et al. 2017), sqrt "
      "(Krizhevsky 2014) or none")
      ->check(CLI::IsMember({"linear", "sqrt", "none"}))
      ->capture_default_str();
  tta_cmd->add_option("--lr-grid", tta.lr_grid,
                      "Rates to try per setting, e.g. 0.01,0.03,0.1: every seed at each, and "
                      "the rate with the fewest mean updates to the target is kept (tuned per "
                      "setting as Shallue et al. 2019 tuned it per batch size); replaces --lr "
                      "and --lr-scaling")
      ->delimiter(',')
      ->check(kFinitePositive)
      ->excludes(lr)
      ->excludes(lr_scaling);
  tta_cmd->add_option("--optimizer", tta.optimizer,
                      "The update rule, as dtsim exec applies it (default: the scenario's "
                      "parallelism.optimizer)")
      ->check(CLI::IsMember({"sgd", "momentum", "adam"}));
  tta_cmd->add_option("--momentum", tta.momentum, "Momentum's coefficient, in [0, 1)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  tta_cmd->add_option("--lr-warmup-steps", tta.lr_warmup_steps,
                      "Linear warm-up over the first N updates (Goyal et al. 2017; default 0)")
      ->check(CLI::NonNegativeNumber);
  tta_cmd->add_option("--lr-decay-rate", tta.lr_decay_rate,
                      "Exponential decay: multiply the learning rate by this every "
                      "--lr-decay-steps updates (as dtsim exec; default: none)")
      ->check(kFinitePositive);
  tta_cmd->add_option("--lr-decay-steps", tta.lr_decay_steps, "Updates per decay factor")
      ->check(CLI::PositiveNumber);
  tta_cmd->add_flag("--lr-smooth", tta.lr_smooth,
                    "Decay continuously instead of in steps (staircase is the default)");
  tta_cmd->add_option("-j,--jobs", tta.jobs, "Proxy runs at once (default: one per core)")
      ->check(CLI::PositiveNumber);
  tta_cmd->add_flag("-q,--quiet", tta.quiet, "No summary");
  tta_cmd->add_flag("--local", tta.local,
                    "Seconds per update as 'dtsim exec' runs each point on this machine (its "
                    "ranks sharing the cores, the scenario's device_profile), as 'dtsim validate' "
                    "predicts them, instead of on the scenario's cluster");
  tta_cmd->add_option("--network", tta.network,
                      "With --local: the ranks talk over exec's emulated network at this rate "
                      "(e.g. 100Mbps, 1Gbps)");
  tta_cmd->add_option("--latency", tta.latency, "With --network: one-way latency (e.g. 50us)");

  dtsim::tools::ChakraOptions chakra;
  auto* chakra_cmd = app.add_subcommand(
      "chakra", "Simulate an MLCommons Chakra execution trace (one file per rank, as ASTRA-sim "
                "reads them) on a scenario's cluster: prints the step time and its breakdown, "
                "writes summary.json (docs/chakra.md)");
  chakra_cmd->add_option("prefix", chakra.prefix,
                         "The traces' common prefix: PREFIX.0.et, PREFIX.1.et, ... one per rank")
      ->required();
  chakra_cmd->add_option("--cluster", chakra.cluster_path,
                         "Scenario YAML file whose cluster, network and engine are used (its "
                         "workload is not)")
      ->required();
  chakra_cmd->add_option("--engine", chakra.engine, "analytic or simgrid (default: the scenario's)")
      ->check(CLI::IsMember({"analytic", "simgrid"}));
  chakra_cmd->add_option("-o,--out", chakra.out_dir,
                         "Output folder (default results/chakra-<prefix's file name>)");
  chakra_cmd->add_option("--batch", chakra.batch, "Samples per step of the trace, for throughput")
      ->check(CLI::PositiveNumber);
  chakra_cmd->add_option("--comm-groups", chakra.comm_groups,
                         "ASTRA-sim communicator-group file ({\"1\": [0, 1], ...}): the ranks of "
                         "each pg_name the traces' metadata does not list");
  chakra_cmd->add_flag("--drop-dangling-deps", chakra.drop_dangling_deps,
                       "Drop dependencies on nodes a trace does not hold (default: refused)");
  chakra_cmd->add_flag("--ignore-ctrl-deps", chakra.ignore_ctrl_deps,
                       "Order nodes by data_deps only (in PyTorch-converted traces ctrl_deps name "
                       "a node's caller)");
  chakra_cmd->add_option("--host-ops", chakra.host_ops,
                         "Host operators (is_cpu_op): refuse (when they have a duration), drop "
                         "(no time) or serialize (on the GPU's compute stream)")
      ->check(CLI::IsMember({"refuse", "drop", "serialize"}))
      ->capture_default_str();

  dtsim::tools::PlanOptions plan;
  auto* plan_cmd = app.add_subcommand(
      "plan", "Build the scenario's plan and print the placement of ops on devices "
              "(like TensorFlow's log_device_placement); optionally export the task graph");
  plan_cmd->add_option("scenario", plan.scenario_path, "Scenario YAML file")->required();
  plan_cmd->add_option("--json", plan.json_path, "Write the task graph as JSON here ('-' = stdout)");
  plan_cmd->add_option("--dot", plan.dot_path,
                       "Write the model as a Graphviz DOT graph, ops coloured by the devices "
                       "holding them");
  plan_cmd->add_option("--max-ranks", plan.max_ranks, "Ranks listed one by one")->check(CLI::PositiveNumber);

  auto* models_cmd = app.add_subcommand("models", "List the built-in model zoo");
  std::string model_name;
  auto* model_cmd = app.add_subcommand(
      "model", "Print a model's per-layer table (params, FLOPs, activations) and totals");
  model_cmd->add_option("name", model_name, "Zoo model name, or a model YAML file (*.yaml)")
      ->required();
  bool model_kernels = false;
  dtsim::tools::ModelKernelsOptions kernels_options;
  model_cmd->add_flag("--kernels", model_kernels,
                      "List each op's GPU kernels forward and backward with their predicted "
                      "times (sim/op_kernels.h, sim/gpu_kernel_model.h)");
  model_cmd->add_option("--device", kernels_options.device, "--kernels: a catalog GPU")
      ->capture_default_str();
  model_cmd->add_option("--precision", kernels_options.precision,
                        "--kernels: fp32, tf32, fp16 or bf16")
      ->capture_default_str();
  model_cmd->add_option("--batch", kernels_options.batch, "--kernels: samples per step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bool local = false;
  auto* devices_cmd = app.add_subcommand("devices", "List the hardware catalog (GPUs and links)");
  devices_cmd->add_flag("--local", local, "Describe this machine's CPU and GPUs instead");

  dtsim::tools::CalibrateCommandOptions calibrate;
  auto* calibrate_cmd = app.add_subcommand(
      "calibrate", "Measure this machine's CPU backend (GEMM and convolution rates, memory "
                   "bandwidth, per-op-kind efficiency, per-call overhead) and, over MPI, the "
                   "link between ranks; write a device profile that scenarios name under "
                   "cluster.device_profile (docs/device_profile.md)");
  calibrate_cmd->add_option("-o,--out", calibrate.out_path, "Device profile to write")
      ->capture_default_str();
  calibrate_cmd->add_option("--threads", calibrate.threads,
                            "Threads the kernels run on while measured (exec and validate "
                            "--threads; default 1)")
      ->check(CLI::PositiveNumber);
  calibrate_cmd->add_flag("--portable", calibrate.portable,
                          "Measure the portable kernels (baseline x86-64) instead of the fastest "
                          "build this CPU runs (AVX2+FMA where present); exec and validate "
                          "must then run --portable too");
  calibrate_cmd->add_flag("--quick", calibrate.quick,
                          "Fewer and smaller measurements (a few seconds; for tests)");
  calibrate_cmd->add_option("--ranks", calibrate.ranks,
                            "Re-run under 'mpirun -np N' to also measure point-to-point "
                            "latency and bandwidth between ranks (N >= 2)");
  calibrate_cmd->footer(
      "Started by mpirun with 2 or more ranks (mpirun -np 2 dtsim calibrate), rank 0 measures\n"
      "the device while the others wait, then ranks 0 and 1 play ping-pong; rank 0 writes\n"
      "the profile. Without mpirun and without --ranks, MPI is not used at all.");

  dtsim::tools::ProfileCommandOptions profile;
  CLI::App* profile_cmd = dtsim::tools::AddProfileCommand(app, &profile);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  // A run in an emulated network removes it when interrupted: the watcher
  // stops mpirun, the command unwinds, and its destructors clean up.
  // Started before any other thread (it blocks the signals for all).
  const bool scenario_validate =
      *validate_cmd && validate_target != "vtrain" && validate_target != "deepbench" &&
      validate_target != "kernels";
  std::optional<dtsim::tools::InterruptWatcher> interrupts;
  if (((*exec_cmd && !exec.network.empty()) ||
       (scenario_validate && !validate_exec.network.empty())) &&
      !dtsim::tools::LaunchedByMpiLauncher()) {
    interrupts.emplace();
    auto forward = [&interrupts](pid_t pid) { interrupts->ForwardTo(pid); };
    exec.on_launcher = forward;
    validate_exec.on_launcher = forward;
  }
  auto interrupted = [&interrupts]() {
    if (!interrupts || interrupts->signal() == 0) return 0;
    std::cerr << "dtsim: interrupted (signal " << interrupts->signal()
              << "); the emulated network was removed\n";
    return 128 + interrupts->signal();
  };

  // MPI only for the commands that run ranks, and only when a launcher
  // started us: a plain command never needs mpirun, nor loads MPI
  // (exec/comm/mpi_world.h). Declared out here so that a rank that fails can
  // stop the others (MPI_Abort) instead of leaving them waiting for it in a
  // collective.
  std::unique_ptr<dtsim::exec::MpiWorld> mpi;
  dtsim::exec::Communicator* world = nullptr;
  // A rank's error ends every rank, and mpirun exits with `status`
  // (RunUnderMpiLauncher passes it on, with the message).
  auto stop_ranks = [&mpi, &world](int status) {
    if (world == nullptr || world->size() < 2) return status;
    std::cerr.flush();
    // When every rank fails at once (an error they agreed on), one abort
    // ends the job: rank 0's; simultaneous ones garble OpenMPI's report.
    if (world->rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    mpi->Abort(status);
    return status;
  };
  // Commands that only simulate build their plans on huge pages
  // (tools/heap_pages.h); 32 MiB covers a 1,024-GPU run's plan and engine.
  // Not in MPI ranks (a sweep's), whose libraries watch the heap.
  if ((*run_cmd || *sweep_cmd || *search_cmd || *plan_cmd) &&
      !dtsim::tools::LaunchedByMpiLauncher())
    dtsim::tools::BackHeapWithHugePages(std::size_t{32} << 20);
  try {
    if (*run_cmd) dtsim::tools::RunCommand(run, std::cout, std::cerr);
    // Sweeps and searches started by an MPI launcher split their points
    // over the ranks (any host list or scheduler that launches MPI).
    if ((*search_cmd || *sweep_cmd) && dtsim::tools::LaunchedByMpiLauncher()) {
      mpi = dtsim::exec::StartMpiWorld();
      world = &mpi->communicator();
    }
    if (*search_cmd) {
      search.err_is_terminal = ::isatty(STDERR_FILENO) != 0;
      dtsim::tools::SearchCommand(search, mpi.get(), std::cout, std::cerr);
    }
    if (*sweep_cmd) {
      sweep.err_is_terminal = ::isatty(STDERR_FILENO) != 0;
      dtsim::tools::SweepCommand(sweep, mpi.get(), std::cout, std::cerr);
    }
    const bool scenario_validation =
        *validate_cmd && validate_target != "vtrain" && validate_target != "deepbench" &&
        validate_target != "kernels" && validate_target != "allreduce";
    if ((*exec_cmd || scenario_validation || (*calibrate_cmd && calibrate.ranks == 0)) &&
        dtsim::tools::LaunchedByMpiLauncher()) {
      mpi = dtsim::exec::StartMpiWorld();
      world = &mpi->communicator();
    }
    if (*exec_cmd) dtsim::tools::ExecCommand(exec, world, std::cout, std::cerr);
    if (scenario_validation) {
      validate_exec.scenario_path = validate_target;
      validate_exec.quiet = validate.quiet;
      // --out is declared once for both kinds of validation.
      if (validate_cmd->count("--out") > 0) validate_exec.out_dir = validate.out_dir;
      dtsim::tools::ExecCommand(validate_exec, world, std::cout, std::cerr);
    } else if (*validate_cmd) {
      validate.err_is_terminal = ::isatty(STDERR_FILENO) != 0;
      validate.dataset = validate_target;
      if (validate_target == "deepbench") {
        if (validate_cmd->count("--data") == 0) validate.data_dir = "../shared/validation/deepbench";
        if (validate_cmd->count("--out") == 0) validate.out_dir = "results/deepbench";
      }
      if (validate_target == "allreduce") {
        if (validate_cmd->count("--data") == 0) validate.data_dir = "../shared/validation/deepbench";
        if (validate_cmd->count("--out") == 0) validate.out_dir = "results/allreduce";
      }
      if (validate_target == "kernels") {
        if (validate_cmd->count("--data") == 0) validate.data_dir = "scenarios/fit/h100-kernels";
        if (validate_cmd->count("--out") == 0) validate.out_dir = "results/kernels-h100";
      }
      dtsim::tools::ValidateCommand(validate, std::cout, std::cerr);
    }
    if (*fit_cmd) dtsim::tools::FitCommand(fit, std::cout, std::cerr);
    if (*plan_cmd) dtsim::tools::PlanCommand(plan, std::cout);
    if (*chakra_cmd) dtsim::tools::ChakraCommand(chakra, std::cout);
    if (*tta_cmd) dtsim::tools::TtaCommand(tta, std::cout, std::cerr);
    if (*models_cmd) dtsim::tools::ModelsCommand(std::cout);
    if (*model_cmd && model_kernels)
      dtsim::tools::ModelKernelsCommand(model_name, kernels_options, std::cout);
    else if (*model_cmd)
      dtsim::tools::ModelCommand(model_name, std::cout, std::cerr);
    if (*devices_cmd) dtsim::tools::DevicesCommand(local, std::cout);
    if (*calibrate_cmd) dtsim::tools::CalibrateCommand(calibrate, world, std::cout, std::cerr);
    if (*profile_cmd) dtsim::tools::ProfileCommand(profile, std::cout, std::cerr);
  } catch (const dtsim::InfeasiblePlan& e) {
    if (const int status = interrupted()) return status;
    std::cerr << ("dtsim: " + std::string(e.what()) + "\n");  // one write: ranks share stderr
    if (world) dtsim::tools::RecordRankError(world->rank(), e, true);
    return stop_ranks(3);
  } catch (const dtsim::UserError& e) {
    if (const int status = interrupted()) return status;
    std::cerr << ("dtsim: " + std::string(e.what()) + "\n");  // one write: ranks share stderr
    if (world) dtsim::tools::RecordRankError(world->rank(), e, false);
    return stop_ranks(2);
  } catch (const std::exception& e) {
    if (const int status = interrupted()) return status;
    std::cerr << ("dtsim: " + std::string(e.what()) + "\n");
    return stop_ranks(1);
  }
  if (const int status = interrupted()) return status;
  std::cout.flush();
  return std::cout ? 0 : 1;
}
