// The host thread and the input pipeline (issue 12): the engine's gates on
// hand-built plans (closed forms), the host costs a framework profile gives
// a real model, and whole simulations that become host- or input-bound.
#include "sim/cost/host_costs.h"

#include <gtest/gtest.h>

#include <numeric>
#include <span>

#include "config/scenario.h"
#include "models/graph_builder.h"
#include "plan/compute_tasks.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

using plan::Plan;
using plan::Task;
using plan::TaskId;
using plan::TaskKind;

Plan OneRank(int iterations) {
  Plan p;
  p.ranks = {{0, 0}};
  p.iterations = iterations;
  return p;
}

Task Compute(int iteration) {
  Task t;
  t.kind = TaskKind::kForward;
  t.iteration = iteration;
  return t;
}

TEST(HostModel, HostBoundStepIsKernelsTimesDispatch) {
  // 10 tasks of 1 us on the device, 10 us each to issue: the device waits
  // for the host, and the last task ends when the host has issued it:
  // 10 x 10 us (closed form).
  Plan p = OneRank(1);
  for (int i = 0; i < 10; ++i) p.AddTask(Compute(0));
  TaskCosts c{std::vector<SimTime>(10, 1'000), {}};
  c.host_ns.assign(10, 10'000);
  c.host_lead_ns.assign(10, 0);
  c.host_sync.assign(10, 0);
  const EngineResult r = RunEngine(p, c);
  EXPECT_EQ(r.makespan, 100'000);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(r.host_begin[static_cast<std::size_t>(i)], i * 10'000);
  // One kernel per task: the device starts each only once it is launched
  // (lead = the whole dispatch), so the last runs from 100 to 101 us.
  c.host_lead_ns.assign(10, 10'000);
  EXPECT_EQ(RunEngine(p, c).makespan, 101'000);
}

TEST(HostModel, DeviceBoundStepIsDeviceTimeAfterTheFirstLaunch) {
  // 1 us to issue, 10 us on the device: the host runs ahead; the step is
  // the device's 10 x 10 us after the first task began (host_begin 0).
  Plan p = OneRank(1);
  for (int i = 0; i < 10; ++i) p.AddTask(Compute(0));
  TaskCosts c{std::vector<SimTime>(10, 10'000), {}};
  c.host_ns.assign(10, 1'000);
  c.host_lead_ns.assign(10, 0);
  c.host_sync.assign(10, 0);
  EXPECT_EQ(RunEngine(p, c).makespan, 100'000);
}

TEST(HostModel, SyncPointMakesTheHostWait) {
  // Iteration 0: one 50 us task; the host syncs on it, so iteration 1's
  // task is issued only at 50 us and ends at 50 + 5 (issue) ... its device
  // time 10 us starts at host_begin = 50: end = max(50 + 10, 55) = 60.
  Plan p = OneRank(2);
  p.AddTask(Compute(0));
  p.AddTask(Compute(1));
  TaskCosts c{{50'000, 10'000}, {}};
  c.host_ns = {5'000, 5'000};
  c.host_lead_ns = {0, 0};
  c.host_sync = {1, 0};
  const EngineResult r = RunEngine(p, c);
  EXPECT_EQ(r.host_begin[1], 50'000);
  EXPECT_EQ(r.timing[1].start, 50'000);
  EXPECT_EQ(r.makespan, 60'000);
  // Without the sync the host issues it at 5 us and the stream runs it
  // right after the first: 50 + 10.
  c.host_sync = {0, 0};
  EXPECT_EQ(RunEngine(p, c).timing[1].start, 50'000);
  EXPECT_EQ(RunEngine(p, c).host_begin[1], 5'000);
}

TEST(HostModel, AWorkerHostWaitsForItsServersReplyAfterTheStepSetup) {
  // Rank 1 is a server; its 30 us send (task 0, the pulled parameters)
  // feeds the worker's 10 us task 1. The worker's host spends its 4 us
  // setup, waits for the reply (30 us), then issues task 1 (2 us more of
  // host time, lead 2 us): task 1 runs from 32 to 42 us. Without the await
  // the host issues it at once and it starts when the reply is in (30).
  Plan p;
  p.ranks = {{0, 0}, {1, 0, plan::RankRole::kServer}};
  p.iterations = 1;
  Task pull;
  pull.kind = TaskKind::kSend;
  pull.rank = 1;
  pull.peer = 0;
  pull.bytes = 1;
  const TaskId reply = p.AddTask(pull);
  p.AddTask(Compute(0), std::span(&reply, 1));
  TaskCosts c{{30'000, 10'000}, {}};
  c.host_ns = {0, 6'000};
  c.host_lead_ns = {0, 6'000};
  c.host_sync = {0, 0};
  c.host_await = {0, 1};
  c.host_await_setup_ns = {0, 4'000};
  const EngineResult r = RunEngine(p, c);
  EXPECT_EQ(r.host_begin[1], 30'000);
  EXPECT_EQ(r.timing[1].start, 32'000);
  EXPECT_EQ(r.makespan, 42'000);
  c.host_await.clear();
  c.host_await_setup_ns.clear();
  EXPECT_EQ(RunEngine(p, c).timing[1].start, 30'000);
}

// The seeds' synchronous parameter server (2 K20m workers over 1 GbE, one
// CPU server): a worker's framework costs its step too. TensorFlow 1.x's
// host issues the forward only once the pulled parameters are in: the
// first op's dispatch (per op 2 us + its kernels at 5 us) then precedes
// the device's work on the critical path, so the step is at least that
// much longer than with no framework.
TEST(HostModel, AParameterServerWorkersFrameworkCostsItsStep) {
  auto ps = [](const std::string& framework) {
    config::Scenario s;
    s.cluster.nodes = 2;
    s.cluster.device = "K20m";
    s.cluster.intra_node_link = "pcie2-x16";
    s.cluster.network.link = "1GbE";
    s.workload.model.zoo_name = "cifar10-cnn";
    s.workload.batch_per_device = 128;
    s.workload.iterations = 6;
    s.workload.framework = *config::FindFramework(framework);
    s.parallelism.strategy = config::Strategy::kParameterServer;
    s.parallelism.parameter_server.device = "cpu-host";
    return s;
  };
  const double none = Simulate(ps("none")).metrics.step_time_s;
  const Prediction tf = Simulate(ps("tensorflow-1"));
  EXPECT_GE(tf.metrics.step_time_s, none + 2e-6 + 5e-6);
  EXPECT_GT(tf.metrics.breakdown.host_wait_s, 0);
}

TEST(InputPipeline, InputBoundStepIsBatchTimesCostOverCores) {
  // Each iteration: 1 ms on the device; its batch takes 3 ms to prepare.
  // Batch k is ready at 3 (k + 1) ms, so iteration k starts then and the
  // pace is one iteration per 3 ms (closed form); waits are recorded.
  Plan p = OneRank(5);
  for (int i = 0; i < 5; ++i) p.AddTask(Compute(i));
  TaskCosts c{std::vector<SimTime>(5, 1'000'000), {}};
  c.input_ns = {3'000'000};
  c.input_prefetch = 2;
  const EngineResult r = RunEngine(p, c);
  for (int k = 0; k < 5; ++k)
    EXPECT_EQ(r.timing[static_cast<std::size_t>(k)].start, 3'000'000 * (k + 1)) << k;
  EXPECT_EQ(r.input_wait_ns[4], 2'000'000);  // able at 13 ms (12 + 1), batch at 15
}

TEST(InputPipeline, FastPipelineHidesBehindTheDevice) {
  // 1 ms per batch, 3 ms per step: after the first batch the device never
  // waits: starts at 1, 4, 7, ... ms.
  Plan p = OneRank(4);
  for (int i = 0; i < 4; ++i) p.AddTask(Compute(i));
  TaskCosts c{std::vector<SimTime>(4, 3'000'000), {}};
  c.input_ns = {1'000'000};
  c.input_prefetch = 1;
  const EngineResult r = RunEngine(p, c);
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(r.timing[static_cast<std::size_t>(k)].start, 1'000'000 + 3'000'000 * k) << k;
}

TEST(InputPipeline, NoPrefetchLoadsEachBatchWhenAsked) {
  // prefetch 0: iteration k's batch (1 ms) is prepared only when its task
  // could start, after iteration k - 1's 3 ms: the step is the sum, 4 ms
  // (closed form), and every iteration waits 1 ms for its batch.
  Plan p = OneRank(4);
  for (int i = 0; i < 4; ++i) p.AddTask(Compute(i));
  TaskCosts c{std::vector<SimTime>(4, 3'000'000), {}};
  c.input_ns = {1'000'000};
  c.input_prefetch = 0;
  const EngineResult r = RunEngine(p, c);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(r.timing[static_cast<std::size_t>(k)].start, 1'000'000 + 4'000'000 * k) << k;
    EXPECT_EQ(r.input_wait_ns[static_cast<std::size_t>(k)], 1'000'000) << k;
  }
}

config::Scenario Mlp(const std::string& framework) {
  config::Scenario s;
  s.name = "host";
  s.cluster.nodes = 1;
  s.cluster.devices_per_node = 1;
  s.cluster.device = "H100-SXM";
  s.workload.model.zoo_name = "mnist-mlp";
  s.workload.batch_per_device = 32;
  s.workload.iterations = 4;
  s.workload.framework = *config::FindFramework(framework);
  return s;
}

// Kernels of one training step of `s`'s model, counted from sim/cost/op_kernels.h.
int StepKernels(const models::ModelGraph& g, hw::Precision precision) {
  int n = 0;
  for (models::OpId v = 0; v < g.num_ops(); ++v) {
    if (plan::IsFreeOp(g.op(v))) continue;
    n += KernelsOf(g, v, TaskKind::kForward, precision);
    n += KernelsOf(g, v, TaskKind::kBackward, precision);
  }
  return n;
}

TEST(HostModel, TinyModelOnAFastGpuIsHostBound) {
  // An MLP at batch 32 runs each kernel in a few microseconds on an H100:
  // with dispatch set to 100 us per kernel (and nothing else) the step is
  // the kernels' dispatch: kernels x 100 us, plus the optimizer's launches.
  config::Scenario s = Mlp("none");
  s.workload.framework.per_kernel_s = 100e-6;
  s.workload.framework.optimizer_loop = config::OptimizerLoop::kMultiTensor;
  s.workload.framework.optimizer_tensors_per_launch = 1000;  // one launch
  s.workload.framework.sync_each_step = true;
  const Prediction p = Simulate(s);
  const int kernels = StepKernels(p.graph, s.workload.precision) + 1;
  EXPECT_NEAR(p.metrics.step_time_s, kernels * 100e-6, 0.02 * kernels * 100e-6);
  // With the framework none, the same step is far shorter.
  EXPECT_LT(Simulate(Mlp("none")).metrics.step_time_s, 0.2 * p.metrics.step_time_s);
}

TEST(HostModel, CudaGraphsRemoveDispatch) {
  const config::Scenario eager = Mlp("pytorch-eager");
  const config::Scenario graphs = Mlp("pytorch-cuda-graphs");
  const Prediction pe = Simulate(eager), pg = Simulate(graphs);
  auto host_total = [](const Prediction& p) {
    return std::accumulate(p.costs.host_ns.begin(), p.costs.host_ns.end(), SimTime{0});
  };
  // Graphs: per iteration only per_step + graph_launch remain.
  const auto& g = graphs.workload.framework;
  EXPECT_EQ(host_total(pg), eager.workload.iterations * SecondsToNs(g.per_step_s + g.graph_launch_s));
  // Eager: every op and kernel pays, far more than one graph launch.
  const SimTime eager_dispatch =
      host_total(pe) - eager.workload.iterations * SecondsToNs(eager.workload.framework.per_step_s);
  EXPECT_GT(eager_dispatch, 10 * eager.workload.iterations * SecondsToNs(g.graph_launch_s));
  EXPECT_LT(pg.metrics.step_time_s, pe.metrics.step_time_s);
}

TEST(HostModel, InputBoundSimulationAndTheBatchCost) {
  // 64 samples at 1 ms each on 4 cores: 16 ms per batch, far above the
  // MLP's step on an H100: the step is 16 ms (closed form).
  config::Scenario s = Mlp("none");
  s.workload.batch_per_device = 64;
  s.workload.iterations = 6;
  s.workload.input = {.dataset = "test", .per_sample_s = 1e-3, .cores = 4, .prefetch = 2};
  const Prediction p = Simulate(s);
  EXPECT_NEAR(p.metrics.step_time_s, 16e-3, 1e-6);
}

TEST(HostModel, SummingOnTheHostDelaysTheInputPipeline) {
  // Issue 13 item 1: one node's CPU both sums the gradients (aggregation:
  // host) and prepares the batches. 4 devices x 32 samples at 1 ms on 4
  // cores: 32 ms per batch; the 4 copies of the fp32 gradients (4 x params
  // bytes) are summed in (4 + 1) x bytes through host memory at 2 x 6
  // DDR4-2666 channels x 8 bytes (cpu-host, hw/host_cpus.cc) x 0.7 (the
  // roofline's memory efficiency), and the pipeline gets the CPU back after
  // that. Closed form: step = 32 ms + 5 x 4 params / (255.936e9 x 0.7).
  config::Scenario s = Mlp("none");
  s.cluster.devices_per_node = 4;
  s.cluster.host_link = "pcie4-x16";
  s.parallelism.aggregate_on_host = true;
  s.workload.iterations = 6;
  s.workload.input = {.dataset = "test", .per_sample_s = 1e-3, .cores = 4, .prefetch = 2};
  const Prediction p = Simulate(s);
  const double sum_s = 5.0 * 4 * static_cast<double>(p.model_totals.params) / (2 * 6 * 2666e6 * 8 * 0.7);
  EXPECT_GT(sum_s, 1e-6);
  EXPECT_NEAR(p.metrics.step_time_s, 32e-3 + sum_s, 2e-9);
  // Summed on the devices, the CPU only prepares batches: 32 ms.
  s.parallelism.aggregate_on_host = false;
  EXPECT_NEAR(Simulate(s).metrics.step_time_s, 32e-3, 1e-9);
}

TEST(HostModel, FusedOpsLaunchNothingAndMoveLess) {
  // GPT-2 under Megatron's profile fuses the residual add into the dropout
  // before it: the add launches no kernel and its traffic shrinks.
  config::Scenario s = Mlp("megatron-lm");
  const models::ModelGraph g = config::BuildWorkloadModel([] {
    config::Scenario t;
    t.workload.model.zoo_name = "gpt2";
    return t;
  }());
  int fused = 0;
  for (models::OpId v = 0; v < g.num_ops(); ++v) {
    if (!IsFusedOp(g, v, s.workload.framework.fused)) continue;
    ++fused;
    EXPECT_EQ(g.op(v).kind, models::OpKind::kAdd);
    EXPECT_LT(FusedOp(g.op(v)).FwdBytes(1), g.op(v).FwdBytes(1));
  }
  EXPECT_EQ(fused, 2 * 12 + 1);  // two residuals per layer, 12 layers, and the position add
}

}  // namespace
}  // namespace dtsim::sim

namespace dtsim::sim {
namespace {

// A recurrent layer launches its per-step kernels once per step
// (sim/cost/rnn_kernels.h): forward = the input GEMM + T x (step GEMM +
// pointwise), so the host pays per_kernel 1 + 2 T times, not 3.
TEST(HostModel, RecurrentLayerLaunchesEveryStep) {
  models::GraphBuilder b("lstm");
  const auto x = b.Input("x", {10, 32});  // T = 10 steps of 32 features
  const auto h = b.Recurrent("lstm", x, {.cell = models::RnnCell::kLstm, .hidden = 64});
  b.SoftmaxCrossEntropy("loss", h, 64);
  const models::ModelGraph g = b.Finish("one LSTM layer");
  models::OpId lstm = 0;
  for (models::OpId v = 0; v < g.num_ops(); ++v)
    if (g.op(v).kind == models::OpKind::kRecurrent) lstm = v;
  EXPECT_EQ(KernelsOf(g, lstm, plan::TaskKind::kForward, hw::Precision::kFp32), 1 + 2 * 10);
}

}  // namespace
}  // namespace dtsim::sim
