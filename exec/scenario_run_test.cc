#include "exec/scenario_run.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "config/scenario.h"
#include "exec/runtime/rank_memory.h"
#include "plan/data_parallel.h"

namespace dtsim::exec {
namespace {

// Two CPU ranks of the TensorFlow CIFAR-10 CNN, synchronous data
// parallelism, batch 32 per rank, momentum, seed 1
// (scenarios/local/cifar10-dp-2cpu.yaml).
constexpr const char* kDataParallel = "scenarios/local/cifar10-dp-2cpu.yaml";
// The same with local SGD, averaging every 4 steps
// (scenarios/local/cifar10-localsgd-2cpu.yaml).
constexpr const char* kLocalSgd = "scenarios/local/cifar10-localsgd-2cpu.yaml";

// The plan a real run of `s` replays, built here with plan/'s builder the
// way sim::MakePlan builds a data-parallel one (2 ranks on one node).
plan::Plan DataPlan(const config::Scenario& s, const models::ModelGraph& g) {
  plan::DataParallelOptions o;
  o.batch_per_rank = s.workload.batch_per_device;
  return plan::BuildDataParallelPlan(g, {s.cluster.nodes, s.cluster.devices_per_node}, o);
}

// Bytes every rank of `plan` needs under `o`, summed (what CheckMemory
// compares with the machine's memory).
double NeededBytes(const ScenarioRunOptions& o, const config::Scenario& s, const plan::Plan& plan,
                   const models::ModelGraph& g) {
  const ExecOptions eo = MakeExecOptions(o, s, plan.num_ranks());
  double need = 0;
  for (plan::RankId r = 0; r < plan.num_ranks(); ++r)
    need += EstimateRankMemory(plan, g, eo, r).total();
  return need;
}

TEST(ScenarioRun, ExecOptionsFromTheScenarioAndDefaults) {
  const config::Scenario s = config::LoadScenario(kDataParallel);
  const ExecOptions eo = MakeExecOptions(ScenarioRunOptions{}, s, 2);
  // Defaults: kDefaultIterations (20) iterations; no input threads on the
  // CPU backend; momentum at its default learning rate 0.01; the
  // scenario's seed 1; no slowdown on either rank; checkpoints under the
  // scenario's outputs.dir; the timeline recorded.
  EXPECT_EQ(eo.iterations, 20);
  EXPECT_EQ(eo.input_threads, 0);
  EXPECT_EQ(eo.optimizer.algorithm, OptimizerAlgorithm::kMomentum);
  EXPECT_DOUBLE_EQ(eo.optimizer.lr.initial_lr, 0.01);
  EXPECT_EQ(eo.seed, 1u);
  EXPECT_EQ(eo.slowdown, (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(eo.checkpoint_dir, s.outputs.dir + "/checkpoints");
  EXPECT_TRUE(eo.record_timeline);
  EXPECT_EQ(eo.eval_data, nullptr);
}

TEST(ScenarioRun, ExecOptionsFromTheCommandLine) {
  config::Scenario s = config::LoadScenario(kDataParallel);
  // Rank 1 computes 3x slower; rank 5 does not exist in a 2-rank run and
  // is ignored.
  s.stragglers.slow_devices = {{{1, 5}, 3.0}};
  ScenarioRunOptions o;
  o.iterations = 7;
  o.backend = "cuda";
  o.learning_rate = 0.2;
  o.lr_decay_rate = 0.5;
  o.lr_decay_steps = 100;
  o.out_dir = "out/here";
  const ExecOptions eo = MakeExecOptions(o, s, 2);
  // cuda without --input-threads: kCudaInputThreads (4); the decay is a
  // staircase unless lr_smooth.
  EXPECT_EQ(eo.iterations, 7);
  EXPECT_EQ(eo.input_threads, kCudaInputThreads);
  EXPECT_DOUBLE_EQ(eo.optimizer.lr.initial_lr, 0.2);
  EXPECT_EQ(eo.optimizer.lr.kind, LrScheduleKind::kExponential);
  EXPECT_DOUBLE_EQ(eo.optimizer.lr.decay_rate, 0.5);
  EXPECT_EQ(eo.optimizer.lr.decay_steps, 100);
  EXPECT_TRUE(eo.optimizer.lr.staircase);
  EXPECT_EQ(eo.slowdown, (std::vector<double>{1.0, 3.0}));
  EXPECT_EQ(eo.checkpoint_dir, "out/here/checkpoints");
}

TEST(ScenarioRun, InconsistentOptionsAreRefused) {
  const config::Scenario s = config::LoadScenario(kDataParallel);
  ScenarioRunOptions decay;
  decay.lr_decay_rate = 0.1;  // without lr_decay_steps
  EXPECT_THROW(MakeExecOptions(decay, s, 2), UserError);
  ScenarioRunOptions stop;
  stop.stop_at_accuracy = 0.9;  // without eval_every
  EXPECT_THROW(MakeExecOptions(stop, s, 2), UserError);
  ScenarioRunOptions accuracy;
  accuracy.eval_every = 10;
  accuracy.stop_at_accuracy = 1.5;  // an accuracy is at most 1
  EXPECT_THROW(MakeExecOptions(accuracy, s, 2), UserError);
}

TEST(ScenarioRun, OptimizerDefaultsFollowTheAlgorithm) {
  config::Scenario s = config::LoadScenario(kDataParallel);
  s.parallelism.optimizer = config::OptimizerKind::kAdam;
  // Adam's default learning rate is 1e-3; a given one is kept.
  EXPECT_EQ(OptimizerFor(s, 0).algorithm, OptimizerAlgorithm::kAdam);
  EXPECT_DOUBLE_EQ(OptimizerFor(s, 0).lr.initial_lr, 1e-3);
  EXPECT_DOUBLE_EQ(OptimizerFor(s, 0.05).lr.initial_lr, 0.05);
}

TEST(ScenarioRun, PlanScenarioHoldsOneRoundOfPlanIterations) {
  // Data parallelism: every real iteration replays plan iteration 0.
  const config::Scenario dp = config::LoadScenario(kDataParallel);
  EXPECT_EQ(PlanScenario(dp).workload.iterations, 1);
  // Local SGD with H = 4 (the scenario's averaging_period): H + 1 = 5.
  const config::Scenario local = config::LoadScenario(kLocalSgd);
  ASSERT_EQ(config::AveragingPeriod(local), 4);
  EXPECT_EQ(PlanScenario(local).workload.iterations, 5);
}

TEST(ScenarioRun, WhatIsOnlySimulatedIsRefused) {
  config::Scenario s = config::LoadScenario(kDataParallel);
  EXPECT_NO_THROW(CheckExecutable(s));
  s.parallelism.hybrid.tensor_parallel = 2;
  EXPECT_THROW(CheckExecutable(s), UserError);
  // Context parallelism ran as if each rank held whole sequences (a
  // reproducer: a 2-rank context-parallel Llama trained and reported a
  // step); it is refused, as is expert parallelism.
  s.parallelism.hybrid.tensor_parallel = 1;
  s.parallelism.hybrid.context_parallel = 2;
  EXPECT_THROW(CheckExecutable(s), UserError);
  s.parallelism.hybrid.context_parallel = 1;
  s.parallelism.hybrid.expert_parallel = 2;
  EXPECT_THROW(CheckExecutable(s), UserError);
  // A bf16 plan ran in fp32 without a word.
  s.parallelism.hybrid.expert_parallel = 1;
  s.workload.precision = hw::Precision::kBf16;
  EXPECT_THROW(CheckExecutable(s), UserError);
}

TEST(ScenarioRun, HostMemoryCheckRefusesWhatDoesNotFit) {
  const config::Scenario s = config::LoadScenario(kDataParallel);
  const models::ModelGraph g = config::BuildWorkloadModel(s);
  const plan::Plan plan = DataPlan(s, g);
  const ScenarioRunOptions o;
  const double need = NeededBytes(o, s, plan, g);
  ASSERT_GT(need, 0);
  // Refused only when the need exceeds what the machine has; 0 = unknown,
  // not checked.
  EXPECT_NO_THROW(CheckMemory(o, s, plan, g, MachineMemory{need, {}}));
  EXPECT_NO_THROW(CheckMemory(o, s, plan, g, MachineMemory{0, {}}));
  try {
    CheckMemory(o, s, plan, g, MachineMemory{need - 1, {}});
    FAIL() << "expected InfeasiblePlan";
  } catch (const InfeasiblePlan& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("memory on this machine"), std::string::npos) << what;
    EXPECT_NE(what.find("2 rank(s)"), std::string::npos) << what;
  }
}

TEST(ScenarioRun, GpuMemoryCheckCountsTheRanksSharingAGpu) {
  const config::Scenario s = config::LoadScenario(kDataParallel);
  const models::ModelGraph g = config::BuildWorkloadModel(s);
  const plan::Plan plan = DataPlan(s, g);
  ScenarioRunOptions o;
  o.backend = "cuda";
  const double need = NeededBytes(o, s, plan, g);
  hw::DeviceSpec gpu;
  gpu.name = "small-gpu";
  // One GPU: ranks 0 and 1 (r mod 1 = 0) both on GPU 0, needing `need`.
  gpu.memory_bytes = need - 1;
  EXPECT_THROW(CheckMemory(o, s, plan, g, MachineMemory{0, {gpu}}), InfeasiblePlan);
  // Two such GPUs: one rank on each, half the need per GPU (the two ranks
  // of a data-parallel plan hold the same buffers).
  EXPECT_NO_THROW(CheckMemory(o, s, plan, g, MachineMemory{0, {gpu, gpu}}));
  // No GPU visible: nothing to check (the run reports it).
  EXPECT_NO_THROW(CheckMemory(o, s, plan, g, MachineMemory{0, {}}));
}

TEST(ScenarioRun, SyntheticDataAndNoEvaluationByDefault) {
  const config::Scenario s = config::LoadScenario(kDataParallel);
  const models::ModelGraph g = config::BuildWorkloadModel(s);
  const ScenarioRunOptions o;
  ExecOptions eo = MakeExecOptions(o, s, 2);
  const ScenarioData data = MakeScenarioData(o, g, s.seed, &eo);
  ASSERT_NE(data.train, nullptr);
  // The model's input (3, 24, 24): the synthetic class images.
  EXPECT_EQ(data.train->sample_shape(), g.op(0).output_shape);
  EXPECT_EQ(data.eval, nullptr);
  EXPECT_EQ(eo.eval_data, nullptr);
}

}  // namespace
}  // namespace dtsim::exec
