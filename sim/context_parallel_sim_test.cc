// Context parallelism end to end: Llama 2 7B at a 131,072-token context on
// H100s (scenarios/llama2-7b-128k-cp8-8xH100.yaml), its memory by hand and
// its step time against a hand calculation of the ring's exposed transfers.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "config/scenario.h"
#include "plan/context_parallel.h"
#include "sim/cost/cost_model.h"
#include "sim/memory.h"
#include "sim/network/network.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The hand calculations below price the kernels alone: the shipped file's
// framework (megatron-core: fused kernels, cuDNN attention, its kernel
// efficiency) is set back to none.
std::string ShippedText() {
  std::string text = ReadFile("scenarios/llama2-7b-128k-cp8-8xH100.yaml");
  const std::string framework = "  framework: megatron-core";
  const auto at = text.find(framework);
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos) text.replace(at, framework.size(), "  framework: none");
  return text;
}

config::Scenario Shipped() {
  return config::ParseScenario(ShippedText(), "llama2-7b-128k-cp8-8xH100.yaml");
}

// The shipped scenario's text with each (from, to) replaced once.
config::Scenario ShippedWith(const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text = ShippedText();
  for (const auto& [from, to] : edits) {
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  return config::ParseScenario(text, "cp.yaml");
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kParams = 6'738'415'616;  // `dtsim model llama2-7b`: the released 6.74 B
constexpr double kLayers = 32;

// Memory per GPU, bf16 with Adam and ZeRO-1:
//   parameters   6,738,415,616 x 2 B                = 13,476,831,232 B
//   gradients    the same                           = 13,476,831,232 B
//   optimizer    6,738,415,616 x 12 B / (d c = 8)   = 10,107,623,424 B
//                (fp32 master copy and two moments, sharded over the 8
//                context ranks as Megatron's distributed optimizer does)
//   activations  what context parallelism 1 keeps (the per-op model,
//                sim/memory_test.cc) / 8, plus the ring's buffers: 4 K/V
//                blocks of 2 (k, v) x 32 heads x 16,384 positions x 128 x 2 B
//                = 4 x 268,435,456 = 1,073,741,824 B.
// The layer inputs full recomputation keeps alone are 32 x 16,384 x 4,096 x
// 2 B = 4 GiB of it. Context parallelism 1 keeps 8 times the rest: 95.1 GiB
// in all (the simulator adds the GPU runtime's 0.8 GiB), over the H100's
// 80 GiB.
TEST(ContextParallelSimTest, Llama7B128kFitsWithContextParallel8AndNotWith1) {
  const Prediction cp8 = Simulate(Shipped());
  ASSERT_TRUE(cp8.does_not_fit.empty()) << cp8.does_not_fit;
  ASSERT_EQ(cp8.memory.stages.size(), 1u);
  const MemoryBreakdown& m = cp8.memory.stages[0];
  EXPECT_DOUBLE_EQ(m.params_bytes, kParams * 2);
  EXPECT_DOUBLE_EQ(m.grads_bytes, kParams * 2);
  EXPECT_DOUBLE_EQ(m.optimizer_bytes, kParams * 12 / 8);
  const double block = 2.0 * 32 * 16384 * 128 * 2;
  EXPECT_DOUBLE_EQ(m.context_buffers_bytes, 4 * block);

  const config::Scenario one = ShippedWith({{"context_parallel: 8", "context_parallel: 1"}});
  EXPECT_NE(Simulate(one).does_not_fit, "");
  // The same device's memory without context parallelism (DeviceMemory on
  // the full graph, one micro-batch in flight).
  const models::ModelGraph full = config::BuildWorkloadModel(one);
  MemoryInputs in;
  in.graph = &full;
  for (models::OpId v = 0; v < full.num_ops(); ++v) in.ops.push_back(v);
  in.data_parallel = 8;
  in.zero_stage = 1;
  in.mixed_precision = true;
  in.recompute = true;
  const MemoryBreakdown m1 = DeviceMemory(in);
  EXPECT_GT(m1.Total(), 80 * kGiB);
  EXPECT_NEAR(m1.Total() / kGiB, 95.1, 0.05);
  EXPECT_DOUBLE_EQ(m.activations_bytes, m1.activations_bytes / 8 + 4 * block);
  EXPECT_GE(m.activations_bytes, kLayers * 16384 * 4096 * 2);
  EXPECT_LT(m.Total(), 80 * kGiB);
}

// The ring's exposed time, by hand. Per layer and micro-batch, with T1 the
// time of one K/V block on the ring's hop (bytes / link bandwidth + the
// link's latency), T2 that of two, and Tf, Tb one blockwise attention step
// forward and backward:
//   forward (run twice: full recomputation re-runs it before the backward):
//     (c - 1) x max(0, T1 - Tf)      c - 1 blocks, each under one step
//   backward:
//     max(0, T1 - Tb)                step 0 sends the next block
//     + (c - 2) x max(0, T2 - Tb)    steps 1..c-2: next block and a dK/dV
//     + max(0, T1 - Tb)              step c - 1: the last dK/dV but one
//     + T1                           the last dK/dV goes home, nothing to hide it
// times m = 8 micro-batches x 32 layers per step.
double HandRingExposed(const config::Scenario& s, int c, int hop_from, int hop_to) {
  const models::ModelGraph full = config::BuildWorkloadModel(s);
  const models::ModelGraph shard = plan::ContextParallelShard(full, {c, plan::ContextParallelKind::kRing});
  models::OpId core = 0;
  while (shard.op(core).name != "layer0.attn.core") ++core;
  const hw::HardwareCatalog catalog = config::ScenarioCatalog(s);
  // Compute at the pace of the slowest of the job's GPUs, as Simulate prices it.
  CostModelOptions options;
  options.synchronised_gpus = s.cluster.num_devices();
  const CostModel cost(*catalog.FindDevice(s.cluster.device), hw::Precision::kBf16, options);
  const double tf = cost.ComputeSeconds(shard.op(core), plan::TaskKind::kForward, 1);
  const double tb = cost.ComputeSeconds(shard.op(core), plan::TaskKind::kBackwardInput, 1);
  const Network network(MakeNetworkSpec(s, catalog));
  const double block = plan::RingBlockBytes(shard.op(core));
  const double t1 = network.TransferSeconds(hop_from, hop_to, block);
  const double t2 = network.TransferSeconds(hop_from, hop_to, 2 * block);
  const auto hidden = [](double comm, double compute) { return std::max(0.0, comm - compute); };
  const double per_layer = 2 * (c - 1) * hidden(t1, tf) + 2 * hidden(t1, tb) +
                           (c - 2) * hidden(t2, tb) + t1;
  return 8 * kLayers * per_layer;
}

// On one NVSwitch node the blocks (268,435,456 B at 450 GB/s: 0.60 ms) hide
// under the attention steps (about 2.5 ms forward), and only the last
// dK/dV of each layer's backward shows: 256 x 0.60 ms = 153 ms. The step is
// then the compute, the ring's exposed time and the gradient all-reduce
// over the 8 context ranks after the last backward (ring: 2 x 7/8 x
// 13,476,831,232 B at 450 GB/s = 52.4 ms, plus 2 x 7 hops' latency).
TEST(ContextParallelSimTest, Llama7B128kStepIsComputePlusTheRingsExposedTransfers) {
  const config::Scenario s = Shipped();
  const Prediction p = Simulate(s);
  const double block = 2.0 * 32 * 16384 * 128 * 2;
  const Network network(MakeNetworkSpec(s, config::ScenarioCatalog(s)));
  EXPECT_NEAR(network.TransferSeconds(0, 1, block), block / 450e9, 0.01 * block / 450e9);
  const double ring = HandRingExposed(s, 8, 0, 1);
  EXPECT_NEAR(ring, 256 * block / 450e9, 0.01 * ring);
  const ContextComm& cp = p.comm.context;
  EXPECT_EQ(cp.degree, 8);
  EXPECT_NEAR(cp.exposed_s, ring, 0.01 * ring);
  // Bytes each GPU sends per step: per layer and micro-batch 7 blocks
  // forward, 7 again in the recomputation, 7 + 8 backward.
  EXPECT_DOUBLE_EQ(cp.bytes, 8 * kLayers * (7 + 7 + 15) * block);
  const double allreduce = 2 * 7.0 / 8 * kParams * 2 / 450e9;
  const double hand = p.metrics.breakdown.compute_s + ring + allreduce;
  EXPECT_NEAR(p.metrics.step_time_s, hand, 0.002 * hand);
}

// Across two nodes (context parallelism 16, InfiniBand NDR between them) the
// ring's slowest hop leaves the node: 134,217,728 B blocks at 50 GB/s take
// 2.7 ms, longer than an attention step over 8,192 positions, and each
// step's excess shows.
TEST(ContextParallelSimTest, RingAcrossNodesExposesWhatComputeCannotHide) {
  const config::Scenario s = ShippedWith({{"context_parallel: 8", "context_parallel: 16"},
                                          {"nodes: 1", "nodes: 2"},
                                          {"intra_node_link: nvswitch-h100",
                                           "intra_node_link: nvswitch-h100\n  network: {link: ib-ndr}"}});
  const Prediction p = Simulate(s);
  const double ring = HandRingExposed(s, 16, 0, 8);
  const double block = 2.0 * 32 * 8192 * 128 * 2;
  const Network network(MakeNetworkSpec(s, config::ScenarioCatalog(s)));
  EXPECT_NEAR(network.TransferSeconds(0, 8, block), block / 50e9, 0.01 * block / 50e9);
  EXPECT_GT(ring, 256 * block / 50e9);  // more than the last dK/dV alone
  EXPECT_NEAR(p.comm.context.exposed_s, ring, 0.01 * ring);
}

}  // namespace
}  // namespace dtsim::sim
