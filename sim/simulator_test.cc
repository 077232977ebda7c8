#include "sim/simulator.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "plan/layers.h"
#include "sim/cost/collectives.h"
#include "sim/report.h"

namespace dtsim::sim {
namespace {

config::Scenario Base(int nodes, int per_node) {
  config::Scenario s;
  s.name = "test";
  s.cluster.nodes = nodes;
  s.cluster.devices_per_node = per_node;
  s.cluster.device = "V100-SXM2-32GB";
  s.cluster.intra_node_link = "nvlink2";
  s.cluster.network.link = "25GbE";
  s.workload.model.zoo_name = "resnet50";
  s.workload.batch_per_device = 32;
  s.workload.iterations = 3;
  return s;
}

// A link so fast that communication costs (almost) nothing.
config::Scenario FreeComm(config::Scenario s) {
  hw::LinkSpec free_link;
  free_link.name = "free";
  free_link.bw_bytes_per_s = 1e30;
  free_link.latency_s = 0;
  s.cluster.custom_links.push_back(free_link);
  s.cluster.intra_node_link = "free";
  s.cluster.network.link = "free";
  s.cluster.network.collective_latency_s = 0;
  return s;
}

// GPT-2 (124M) under strategy hybrid, 2 iterations, on `s`'s cluster.
config::Scenario HybridGpt2(config::Scenario s) {
  s.workload.model.zoo_name = "gpt2";
  s.workload.iterations = 2;
  s.parallelism.strategy = config::Strategy::kHybrid;
  return s;
}

// Issue 11: built-in GPUs are priced by their kernels unless a roofline key
// asks otherwise; the kernel model on a device it does not know is refused.
TEST(Simulator, CostModelFollowsTheScenario) {
  config::Scenario s = Base(1, 1);
  EXPECT_EQ(Simulate(s).setup.cost_model, "kernels");
  s.workload.kernel_launch_s = 5e-6;  // a roofline key
  EXPECT_EQ(Simulate(s).setup.cost_model, "roofline");
  s = Base(1, 1);
  s.workload.cost_model = config::CostModelKind::kRoofline;
  EXPECT_EQ(Simulate(s).setup.cost_model, "roofline");
  hw::DeviceSpec own = *hw::HardwareCatalog::BuiltIn().FindDevice("V100-SXM2-32GB");
  own.name = "my-gpu";
  own.sm_count = 0;  // a scenario's device without its microarchitecture
  s.cluster.custom_devices.push_back(own);
  s.cluster.device = "my-gpu";
  EXPECT_EQ(Simulate(s).setup.cost_model, "roofline");
  s.workload.cost_model = config::CostModelKind::kKernels;
  EXPECT_THROW(Simulate(s), UserError);
}

// FlashAttention kernels take fp16/bf16 and run from Turing on (FlashAttention
// 1.x; FlashAttention-2 from Ampere, flash-attn README): a fused attention on
// a V100 or in fp32 is refused at the key that decides it.
TEST(Simulator, FlashAttentionNeedsTuringOrLaterAndHalfPrecision) {
  const std::string model =
      "workload:\n  model: {transformer: {layers: 2, hidden: 256, heads: 4, sequence: 128, "
      "vocab: 1000, attention: flash}}\n";
  auto message = [&](const std::string& text) -> std::string {
    try {
      Simulate(config::ParseScenario(text, "f.yaml"));
    } catch (const UserError& e) {
      return e.message();
    }
    return "";
  };
  EXPECT_NE(message("cluster: {nodes: 1, devices_per_node: 1}\n" + model + "  precision: fp16\n")
                .find("needs a Turing GPU or later"),
            std::string::npos);
  EXPECT_NE(message("cluster: {nodes: 1, devices_per_node: 1, device: A100-SXM4-80GB}\n" + model)
                .find("fp16 or bf16 only, not fp32"),
            std::string::npos);
  EXPECT_EQ(message("cluster: {nodes: 1, devices_per_node: 1, device: A100-SXM4-80GB}\n" + model +
                    "  precision: bf16\n"),
            "");
}

TEST(Simulator, TransportsFoldIntoTheLinks) {
  // config/transport.h: seconds per byte 1 / (bw x efficiency) + copies /
  // (copy bandwidth x copying processes), latency + per message. 25GbE is
  // 3.125e9 B/s per NIC; the node's 4 devices copy in parallel.
  config::Scenario s = Base(2, 4);
  const hw::HardwareCatalog catalog = config::ScenarioCatalog(s);
  const NetworkSpec native = MakeNetworkSpec(s, catalog);
  s.cluster.network.transport = *config::FindTransport("grpc");
  const config::TransportProfile& g = s.cluster.network.transport;
  const NetworkSpec grpc = MakeNetworkSpec(s, catalog);
  const double per_byte =
      1 / (native.nic_bw_bytes_per_s * g.efficiency) + g.copies / (g.copy_bandwidth_bytes_per_s * 4);
  EXPECT_DOUBLE_EQ(grpc.nic_bw_bytes_per_s, 1 / per_byte);
  EXPECT_DOUBLE_EQ(grpc.net_latency_s, native.net_latency_s + g.per_message_s);
  // Within the node the link is untouched: only cluster.network.transport
  // was set.
  EXPECT_EQ(grpc.intra_bw_bytes_per_s, native.intra_bw_bytes_per_s);
  EXPECT_EQ(grpc.intra_latency_s, native.intra_latency_s);
  // A communication-bound step gets slower, and the report names the
  // transport.
  s.parallelism.overlap = false;
  config::Scenario plain = s;
  plain.cluster.network.transport = config::TransportProfile{};
  const Prediction a = Simulate(plain, {}), b = Simulate(s, {});
  EXPECT_GT(b.metrics.step_time_s, a.metrics.step_time_s);
  EXPECT_TRUE(a.setup.transport.empty());
  EXPECT_NE(b.setup.transport.find("between nodes grpc"), std::string::npos) << b.setup.transport;
}

TEST(Simulator, FreeCommunicationScalesLinearly) {
  // With communication free, N devices do N times the work of one in the
  // same step time: throughput(N) = N x throughput(1), efficiency 1.
  const double one = Simulate(FreeComm(Base(1, 1))).metrics.throughput_samples_per_s;
  for (auto [nodes, per_node] : {std::pair{1, 2}, {2, 4}, {8, 8}}) {
    const Prediction p = Simulate(FreeComm(Base(nodes, per_node)));
    const int n = nodes * per_node;
    EXPECT_NEAR(p.metrics.throughput_samples_per_s, n * one, 1e-6 * n * one) << n;
    EXPECT_NEAR(p.scaling.efficiency, 1.0, 1e-6) << n;
  }
}

TEST(Simulator, OverlapLiesBetweenMaxAndSum) {
  // T_comp: step of one device (no communication). T_comm: the all-reduces
  // of one iteration back to back. Overlapped: max(T_comp, T_comm) <= T <=
  // T_comp + T_comm. Not overlapped: T = T_comp + T_comm (the optimizer and
  // all-reduces all wait for the end of backward).
  for (auto link : {"25GbE", "100GbE", "1GbE"}) {
    config::Scenario s = Base(2, 4);
    s.cluster.network.link = link;
    const Prediction p = Simulate(s);
    const double t_comp = p.plan.samples_per_iteration / 8.0 /
                          p.scaling.single_device_throughput_samples_per_s;
    double t_comm = 0;
    for (std::size_t c = 0; c < p.plan.collectives().size(); ++c)
      if (p.plan.collectives()[c].iteration == 0) t_comm += NsToSeconds(p.costs.collective_ns[c]);
    const double t = p.metrics.step_time_s;
    EXPECT_GE(t, std::max(t_comp, t_comm) * (1 - 1e-9)) << link;
    EXPECT_LE(t, (t_comp + t_comm) * (1 + 1e-9)) << link;

    s.parallelism.overlap = false;
    const double serial = Simulate(s).metrics.step_time_s;
    EXPECT_NEAR(serial, t_comp + t_comm, 1e-6 * serial) << link;
    EXPECT_LE(t, serial * (1 + 1e-9)) << link;
  }
}

TEST(Simulator, BreakdownAddsUpToTheStep) {
  const Prediction p = Simulate(Base(2, 4));
  const Breakdown& b = p.metrics.breakdown;
  EXPECT_NEAR(b.compute_s + b.exposed_comm_s + b.idle_s, p.metrics.step_time_s,
              1e-9 * p.metrics.step_time_s);
  EXPECT_GT(b.compute_s, 0);
  EXPECT_GT(b.exposed_comm_s, 0);  // 25 GbE cannot hide ResNet-50's 100 MB of gradients
}

TEST(Simulator, SameScenarioGivesIdenticalReport) {
  const config::Scenario s = Base(2, 2);
  EXPECT_EQ(ReportJson(s, Simulate(s)).dump(), ReportJson(s, Simulate(s)).dump());
}

// Issue 10, item 5: the scaling reference is the same per-device work on
// one device alone (Prediction::single_device_throughput_samples_per_s), so
// every strategy run on a single device is 100% efficient by definition.
// Before, hybrid and model runs were compared with data parallelism at the
// unused batch_per_device default (one GPU printed 71.7%).
TEST(Simulator, OneDeviceIsFullyEfficientForEveryStrategy) {
  config::Scenario data = Base(1, 1);
  config::Scenario hybrid = HybridGpt2(Base(1, 1));
  hybrid.parallelism.hybrid.micro_batch_size = 2;
  hybrid.parallelism.hybrid.global_batch = 8;
  config::Scenario model = Base(1, 1);
  model.parallelism.strategy = config::Strategy::kModel;
  model.workload.batch_per_device = 16;
  config::Scenario local = Base(1, 1);
  local.parallelism.strategy = config::Strategy::kLocalSgd;
  local.parallelism.averaging_period = 4;
  for (const config::Scenario& s : {data, hybrid, model, local}) {
    const Prediction p = Simulate(s);
    EXPECT_NEAR(p.scaling.efficiency, 1.0, 1e-9)
        << config::StrategyName(s.parallelism.strategy) << ": " << p.scaling.reference;
    EXPECT_FALSE(p.scaling.reference.empty());
  }
}

// The hybrid reference runs one replica's micro-batches on one device: with
// free communication and no pipeline (t = p = 1), d replicas run exactly d
// times the reference.
TEST(Simulator, HybridReferenceIsOneReplicasBatch) {
  config::Scenario s = HybridGpt2(FreeComm(Base(1, 4)));
  s.parallelism.hybrid.micro_batch_size = 2;
  s.parallelism.hybrid.global_batch = 32;  // 4 micro-batches per replica
  const Prediction p = Simulate(s);
  EXPECT_NEAR(p.scaling.efficiency, 1.0, 1e-6) << p.scaling.reference;
  EXPECT_EQ(p.scaling.reference, "one device, whole model, 4 micro-batch(es) of 2 per step");
}

// Issue 10, item 7: a latency at the edge of the int64 nanosecond clock used
// to wrap around (a step of 0 s, or 265% scaling efficiency). It is refused
// as a user error that says why.
TEST(Simulator, DurationsBeyondTheClockAreRefused) {
  config::Scenario s = Base(2, 1);
  hw::LinkSpec slow;
  slow.name = "slow";
  slow.bw_bytes_per_s = 1e9;
  slow.latency_s = 9.2e9;  // about 2^63 ns
  s.cluster.custom_links.push_back(slow);
  s.cluster.network.link = "slow";
  try {
    Simulate(s);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("146 years"), std::string::npos) << e.what();
  }
  // Just under the limit per transfer, but the run as a whole exceeds it.
  s.cluster.custom_links.back().latency_s = 1e8;
  s.workload.iterations = 1000;
  EXPECT_THROW(Simulate(s), UserError);
}

// Tensor-parallel plans run on the SimGrid engine and with stragglers:
// every rank materialized, each tensor-parallel collective over its real
// group. On one node nothing contends (a ring's flows each hold their own
// device links), so SimGrid gives the analytic step within 5%; a slow
// device lengthens the step.
TEST(Simulator, TensorParallelRunsOnSimgridAndWithStragglers) {
  config::Scenario s = HybridGpt2(Base(1, 4));
  s.parallelism.hybrid.tensor_parallel = 2;
  s.parallelism.hybrid.pipeline_parallel = 2;
  const Prediction analytic = Simulate(s);
  config::Scenario simgrid = s;
  simgrid.engine = "simgrid";
  const Prediction flows = Simulate(simgrid);
  EXPECT_EQ(flows.layout.materialized_workers, 4);
  EXPECT_NEAR(flows.metrics.step_time_s / analytic.metrics.step_time_s, 1.0, 0.05);
  config::Scenario slow = s;
  slow.stragglers.slow_devices.push_back({{1}, 2.0});
  EXPECT_GT(Simulate(slow).metrics.step_time_s, 1.2 * analytic.metrics.step_time_s);
}

// Issue 13 reproducer: `recompute: true` with strategy data (or a
// parameter server) shrank the activations but did not re-run any forward,
// so the step kept its length: a memory saving for free. Now the step grows
// by exactly the forward time of the ranges the memory model checkpoints
// (RecomputedRanges), about one more forward pass: for ResNet-50, between a
// fifth and a half of the step (forward is about a third of forward +
// backward; Chen et al. 2016, §3: "one additional forward pass").
TEST(Simulator, RecomputeRerunsTheForwardWithEveryStrategy) {
  for (const bool servers : {false, true}) {
    config::Scenario s = FreeComm(Base(1, servers ? 2 : 1));
    s.workload.iterations = 2;
    if (servers) s.parallelism.strategy = config::Strategy::kParameterServer;
    const Prediction plain = Simulate(s);
    s.parallelism.recompute = true;
    const Prediction rec = Simulate(s);
    std::vector<models::OpId> all;
    for (models::OpId v = 0; v < plain.graph.num_ops(); ++v) all.push_back(v);
    const plan::RecomputeRanges ranges = RecomputedRanges(plain.graph, all, 1);
    ASSERT_GT(ranges.size(), 10u);
    double extra_s = 0;  // rank 0's forwards of iteration 1 inside the ranges
    for (std::size_t t = 0; t < plain.plan.num_tasks(); ++t) {
      const plan::Task& task = plain.plan.task(static_cast<plan::TaskId>(t));
      if (task.rank != 0 || task.iteration != 1 || task.kind != plan::TaskKind::kForward) continue;
      for (const auto& [b, e] : ranges)
        if (task.op >= static_cast<int>(b) && task.op < static_cast<int>(e))
          extra_s += NsToSeconds(plain.costs.task_ns[t]);
    }
    EXPECT_NEAR(rec.metrics.breakdown.compute_s - plain.metrics.breakdown.compute_s, extra_s,
                1e-6 * extra_s)
        << (servers ? "parameter server" : "data");
    EXPECT_GT(extra_s, 0.2 * plain.metrics.breakdown.compute_s);
    EXPECT_LT(extra_s, 0.5 * plain.metrics.breakdown.compute_s);
    EXPECT_LT(rec.memory.stages.at(0).activations_bytes, plain.memory.stages.at(0).activations_bytes);
  }
}

// Issue 13, item 3: selective recomputation re-runs attention's core only.
// Its forward is Q K^T and attention over V, 2 s^2 h multiply-adds per
// sample and layer = 4 s^2 h FLOPs (Korthikanti et al. 2022, §5), plus the
// softmax and dropout on the a s^2 scores; the step's compute grows by
// exactly the time of those forwards, far less than full recomputation's.
TEST(Simulator, SelectiveRecomputationRerunsAttentionsCoreOnly) {
  config::Scenario s = HybridGpt2(FreeComm(Base(1, 1)));
  s.cluster.device = "A100-SXM4-80GB";
  s.workload.precision = hw::Precision::kFp16;
  s.workload.iterations = 2;
  const Prediction none = Simulate(s);
  s.parallelism.recompute_selective = true;
  const Prediction sel = Simulate(s);
  s.parallelism.recompute_selective = false;
  s.parallelism.recompute = true;
  const Prediction full = Simulate(s);
  const auto cores = plan::AttentionCores(none.graph);
  ASSERT_EQ(cores.size(), 12u);  // GPT-2 small: 12 layers
  const double sq = 1024, h = 768;
  double core_flops = 0, core_s = 0;
  for (const auto& [b, e] : cores)
    for (models::OpId v = b; v < e; ++v) core_flops += none.graph.op(v).fwd_flops;
  EXPECT_NEAR(core_flops, 12 * 4 * sq * sq * h, 0.1 * 12 * 4 * sq * sq * h);
  for (std::size_t t = 0; t < sel.plan.num_tasks(); ++t) {
    const plan::Task& task = sel.plan.task(static_cast<plan::TaskId>(t));
    if (task.iteration != 1 || task.kind != plan::TaskKind::kForward) continue;
    for (const auto& [b, e] : cores)
      if (task.op == static_cast<int>(b) && task.op_count == static_cast<int>(e - b))
        core_s += NsToSeconds(sel.costs.task_ns[t]);
  }
  ASSERT_GT(core_s, 0);
  const double grew = sel.metrics.breakdown.compute_s - none.metrics.breakdown.compute_s;
  EXPECT_NEAR(grew, core_s, 1e-6 * core_s);
  EXPECT_LT(grew, 0.5 * (full.metrics.breakdown.compute_s - none.metrics.breakdown.compute_s));
  EXPECT_LT(sel.memory.stages.at(0).activations_bytes, none.memory.stages.at(0).activations_bytes);
  // A model without attention has nothing to recompute selectively: refused.
  config::Scenario cnn = Base(1, 1);
  cnn.parallelism.recompute_selective = true;
  EXPECT_THROW(Simulate(cnn), UserError);
}

}  // namespace
}  // namespace dtsim::sim
