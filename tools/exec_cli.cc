// `dtsim exec`'s options, and the option group exec and `dtsim validate
// SCENARIO` share: how the ranks run.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "tools/cli.h"
#include "tools/exec_command.h"
#include "tools/interrupt_watcher.h"

namespace dtsim::tools {

void AddRankOptions(CLI::App* cmd, ExecCommandOptions* o, const char* prefix) {
  const std::string p = prefix;
  cmd->add_option("--ranks", o->ranks,
                  p +
                      "Processes to start under mpirun (default: the plan's ranks, i.e. the "
                      "devices plus any parameter servers); 'mpirun -np N dtsim " +
                      (o->validate ? "validate" : "exec") + " SCENARIO' works too")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--iterations", o->iterations,
                  p + "Iterations to run for real (default 20; the first is warm-up)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--mpi-allreduce", o->mpi_allreduce,
                p + "MPI's own all-reduce instead of the plan's ring or tree");
  cmd->add_option("--threads", o->threads,
                  p + "CPU backend: threads each rank's kernels run on (GEMMs and convolutions "
                      "split over them; default 1, one core per rank); results are "
                      "deterministic for a given count (validate: the device profile must "
                      "have measured as many: dtsim calibrate --threads)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--portable", o->portable,
                p + "CPU backend: the portable kernels (baseline x86-64, byte-identical "
                    "results on every machine) instead of the fastest build this CPU runs "
                    "(AVX2+FMA where present)");
  cmd->add_option("--network", o->network,
                  p + "Run each rank in its own network namespace, linked to a bridge at this "
                      "bandwidth per direction (e.g. 1Gbps, 10Gbps, 100Mbps; tc token bucket), "
                      "like a cluster on one Ethernet switch; needs root. See "
                      "docs/emulated_network.md");
  cmd->add_option("--latency", o->latency,
                  p + "With --network: one-way latency added to every message (e.g. 50us; "
                      "netem, else added by the ranks)");
  // What the process that builds the network passes to the ranks it starts.
  cmd->add_flag("--in-emulated-network", o->in_emulated_network)->group("");
  cmd->add_flag("--latency-in-transport", o->latency_in_transport)->group("");
}

void RunExec(ExecCommandOptions& o, CommandEnv& env) {
  if (env.interrupts) {
    InterruptWatcher* watcher = env.interrupts;
    o.on_launcher = [watcher](pid_t pid) { watcher->ForwardTo(pid); };
  }
  env.StartMpiIfLaunched();
  ExecCommand(o, env.world(), env.out, env.err);
}

Command AddExecCommand(CLI::App& app) {
  auto o = std::make_shared<ExecCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "exec",
      "Run a scenario's plan for real on this machine: one MPI process per plan rank "
      "(each device, each parameter server), real kernels and real communication "
      "(MPI); prints the seeds' step log and writes exec.json (per-rank, per-iteration "
      "times and losses) and exec_trace.json (the measured timeline, Perfetto)");
  cmd->add_option("scenario", o->scenario_path, "Scenario YAML file")->required();
  cmd->add_option("--lr", o->learning_rate, "Initial learning rate (default 0.01; 0.001 for adam)")
      ->check(FinitePositive());
  cmd->add_option("--lr-decay-rate", o->lr_decay_rate,
                  "Exponential decay: multiply the learning rate by this every "
                  "--lr-decay-steps steps (TensorFlow's exponential_decay; default: none)")
      ->check(FinitePositive());
  cmd->add_option("--lr-decay-steps", o->lr_decay_steps, "Steps per decay factor")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--lr-smooth", o->lr_smooth,
                "Decay continuously instead of in steps (staircase is the default)");
  cmd->add_option("--dataset", o->dataset,
                  "Train on this dtsim binary data set (docs/dataset_format.md), or on the "
                  "training split of an IDX folder (MNIST, Fashion-MNIST: "
                  "train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz]), read in a "
                  "new order every epoch drawn from the scenario's seed, instead of "
                  "a synthetic one shaped like the model's input");
  cmd->add_option("--lr-warmup-steps", o->lr_warmup_steps,
                  "Linear warm-up over the first N steps (Goyal et al. 2017; default 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--eval-every", o->eval_every,
                  "Evaluate the held-out loss and top-1 accuracy on the --dataset folder's "
                  "test split (t10k-*) before training and every N iterations; writes "
                  "eval.csv, exec.json's eval and TensorBoard's eval/ scalars")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--eval-samples", o->eval_samples,
                  "Test samples per evaluation (the split's first N; default: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--stop-at-accuracy", o->stop_at_accuracy,
                  "Stop after the evaluation whose held-out accuracy reaches this (0-1)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--stop-at-loss", o->stop_at_loss,
                  "Stop after the evaluation whose held-out loss falls to this")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--backend", o->backend,
                  "cpu (Eigen, one core per rank) or cuda (one GPU per rank, cuBLAS and own "
                  "kernels, NCCL for all-reduces over every rank)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--input-threads", o->input_threads,
                  "Threads per rank that draw the next iteration's batches while this one "
                  "trains (default: 0 with --backend cpu, 4 with cuda); the time a rank "
                  "waits for its batch is reported as input")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "Save a checkpoint every N iterations (atomic; under <out>/checkpoints)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--resume", o->resume, "Continue from the latest checkpoint");
  cmd->add_option("-o,--out", o->out_dir, "Output folder (default: the scenario's outputs.dir)");
  cmd->add_flag("-q,--quiet", o->quiet, "No step log");
  AddRankOptions(cmd, o.get(), "");
  cmd->footer(
      "Executed for real: data parallelism (ring or tree all-reduce over MPI point-to-point,\n"
      "or MPI's), local SGD (parameter averaging every H steps, over all-reduce or servers),\n"
      "parameter servers (synchronous k of n, or asynchronous with measured staleness),\n"
      "model and pipeline parallelism (GPipe, 1F1B), fixed straggler slowdowns. Simulated\n"
      "only: tensor parallelism, interleaved stages, straggler noise.");
  return {cmd, [o](CommandEnv& env) { RunExec(*o, env); }, [o]() { return !o->network.empty(); }};
}

}  // namespace dtsim::tools
