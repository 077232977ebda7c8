#include "sim/trace_simulation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/scenario.h"
#include "plan/chakra_import.h"
#include "plan/chakra_test_traces.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

namespace cf = dtsim::chakra_format;

using plan::chakra_test::AppendDelimited;
using plan::chakra_test::SetInt;

cf::CollectiveCommType CommType(plan::CollectiveOp op) {
  switch (op) {
    case plan::CollectiveOp::kAllReduce: return cf::ALL_REDUCE;
    case plan::CollectiveOp::kAllGather: return cf::ALL_GATHER;
    case plan::CollectiveOp::kReduceScatter: return cf::REDUCE_SCATTER;
    case plan::CollectiveOp::kBroadcast: return cf::BROADCAST;
    case plan::CollectiveOp::kReduce: return cf::REDUCE;
    case plan::CollectiveOp::kAllToAll: return cf::ALL_TO_ALL;
    case plan::CollectiveOp::kBarrier: return cf::BARRIER;
  }
  return cf::ALL_REDUCE;
}

// What PyTorch's execution-trace observer and Chakra's converter would
// record of a dtsim run, written in the test from the Chakra schema: one
// trace per rank; each compute task a COMP_NODE of its simulated duration
// (rounded to whole microseconds, as Chakra stores it), each collective
// member a COMM_COLL_NODE, each dependency on the same rank a data_dep.
// REQUIRES: a plan without transfers whose ranks are all materialized.
std::vector<plan::ChakraTrace> TracesOf(const Prediction& p) {
  const plan::Plan& plan = p.plan;
  std::vector<std::string> bytes(static_cast<std::size_t>(plan.num_ranks()));
  for (std::string& b : bytes) {
    cf::GlobalMetadata meta;
    meta.set_version("0.0.4");
    AppendDelimited(meta, &b);
  }
  for (std::size_t i = 0; i < plan.num_tasks(); ++i) {
    const plan::Task& t = plan.tasks()[i];
    EXPECT_NE(t.kind, plan::TaskKind::kSend);
    cf::Node n;
    n.set_id(i);
    n.set_name(plan::TaskKindName(t.kind));
    for (plan::TaskId d : plan.deps(static_cast<plan::TaskId>(i))) {
      if (plan.tasks()[static_cast<std::size_t>(d)].rank == t.rank) n.add_data_deps(d);
    }
    if (t.kind == plan::TaskKind::kCollective) {
      const plan::Collective& c = plan.collectives()[static_cast<std::size_t>(t.collective)];
      n.set_type(cf::COMM_COLL_NODE);
      SetInt(&n, "comm_type", CommType(c.op));
      SetInt(&n, "comm_size", static_cast<std::int64_t>(c.bytes));
    } else {
      n.set_type(cf::COMP_NODE);
      n.set_duration_micros(static_cast<std::uint64_t>(
          std::llround(static_cast<double>(p.costs.task_ns[i]) / 1e3)));
    }
    AppendDelimited(n, &bytes[static_cast<std::size_t>(t.rank)]);
  }
  std::vector<plan::ChakraTrace> traces;
  for (std::size_t r = 0; r < bytes.size(); ++r) {
    traces.push_back({"dp." + std::to_string(r) + ".et", bytes[r]});
  }
  return traces;
}

config::Scenario DataParallelScenario(const std::string& engine) {
  return config::ParseScenario(R"(
name: chakra-dp
cluster:
  nodes: 2
  devices_per_node: 2
  device: V100-SXM2-32GB
  intra_node_link: nvlink2
  network: {link: 25GbE, topology: single_switch}
workload:
  model: resnet50
  batch_per_device: 32
  precision: fp16
  iterations: 3
parallelism:
  strategy: data
  algorithm: ring
  bucket_size: 25MiB
  overlap: true
engine: )" + engine + "\n",
                               "chakra-dp.yaml");
}

// Issue 15 item 1: a data-parallel trace, written from the Chakra schema,
// gives the equivalent dtsim scenario's result. The trace holds the
// scenario's own tasks and durations, so the two runs differ only by the
// rounding of each duration to a microsecond: at most 0.5 us per task on
// the longest chain of a rank's compute stream.
TEST(ChakraTrace, DataParallelMatchesTheScenario) {
  config::Scenario s = DataParallelScenario("analytic");
  s.outputs.trace_max_ranks = 64;  // every rank in the plan
  const Prediction p = Simulate(s);
  ASSERT_EQ(p.plan.num_materialized(), 4);
  ASSERT_TRUE(p.costs.host_ns.empty());
  plan::ChakraImportOptions options;
  options.devices_per_node = 2;
  options.samples_per_iteration = p.plan.samples_per_iteration * p.plan.iterations;
  const TracePrediction t =
      SimulateTracePlan(s, plan::ImportChakra(TracesOf(p), options));
  EXPECT_EQ(t.plan.collectives().size(), p.plan.collectives().size());
  EXPECT_EQ(t.plan.num_tasks(), p.plan.num_tasks());
  std::size_t compute_tasks = 0;
  for (const plan::Task& task : p.plan.tasks()) {
    compute_tasks += task.rank == 0 && task.stream == plan::StreamKind::kCompute;
  }
  const double tolerance_ns = 500.0 * static_cast<double>(compute_tasks);
  EXPECT_NEAR(static_cast<double>(t.engine.makespan), static_cast<double>(p.engine.makespan),
              tolerance_ns)
      << compute_tasks << " compute tasks per rank";
  // One iteration in the trace: its step is the scenario's whole run.
  EXPECT_NEAR(t.metrics.step_time_s, NsToSeconds(p.engine.makespan), tolerance_ns * 1e-9);
}

// The same trace on the SimGrid engine gives the scenario's SimGrid result.
TEST(ChakraTrace, DataParallelOnSimgridMatchesTheScenario) {
  config::Scenario s = DataParallelScenario("simgrid");
  s.outputs.trace_max_ranks = 64;
  const Prediction p = Simulate(s);
  ASSERT_EQ(p.plan.num_materialized(), 4);
  plan::ChakraImportOptions options;
  options.devices_per_node = 2;
  const TracePrediction t = SimulateTracePlan(s, plan::ImportChakra(TracesOf(p), options));
  EXPECT_EQ(t.engine_name, "simgrid");
  std::size_t compute_tasks = 0;
  for (const plan::Task& task : p.plan.tasks()) {
    compute_tasks += task.rank == 0 && task.stream == plan::StreamKind::kCompute;
  }
  EXPECT_NEAR(static_cast<double>(t.engine.makespan), static_cast<double>(p.engine.makespan),
              500.0 * static_cast<double>(compute_tasks));
}

// Closed form: two ranks each compute 1 ms, then rank 0 sends 1 MB to rank
// 1, which computes 0.5 ms after receiving it. Within a node of NVLink 2
// the transfer takes what the network prices for it; the run is
// 1 ms + transfer + 0.5 ms.
TEST(ChakraTrace, SendAndReceiveOrderTheRanks) {
  config::Scenario s = DataParallelScenario("analytic");
  s.cluster.nodes = 1;
  std::vector<std::string> bytes(2);
  for (int r = 0; r < 2; ++r) {
    cf::GlobalMetadata meta;
    AppendDelimited(meta, &bytes[static_cast<std::size_t>(r)]);
    cf::Node comp;
    comp.set_id(1);
    comp.set_type(cf::COMP_NODE);
    comp.set_duration_micros(1000);
    AppendDelimited(comp, &bytes[static_cast<std::size_t>(r)]);
  }
  cf::Node send;
  send.set_id(2);
  send.set_type(cf::COMM_SEND_NODE);
  send.add_data_deps(1);
  SetInt(&send, "comm_dst", 1);
  SetInt(&send, "comm_size", 1'000'000);
  AppendDelimited(send, &bytes[0]);
  cf::Node recv;
  recv.set_id(2);
  recv.set_type(cf::COMM_RECV_NODE);
  SetInt(&recv, "comm_src", 0);
  SetInt(&recv, "comm_size", 1'000'000);
  AppendDelimited(recv, &bytes[1]);
  cf::Node after;
  after.set_id(3);
  after.set_type(cf::COMP_NODE);
  after.set_duration_micros(500);
  after.add_data_deps(2);
  after.add_data_deps(1);
  AppendDelimited(after, &bytes[1]);

  plan::ChakraImportOptions options;
  options.devices_per_node = 4;
  const TracePrediction t =
      SimulateTracePlan(s, plan::ImportChakra({{"a.0.et", bytes[0]}, {"a.1.et", bytes[1]}}, options));
  ASSERT_EQ(t.plan.num_tasks(), 4u);
  const plan::Task& sent = t.plan.tasks()[1];
  ASSERT_EQ(sent.kind, plan::TaskKind::kSend);
  EXPECT_EQ(sent.peer, 1);
  EXPECT_EQ(sent.bytes, 1e6);
  const SimTime transfer = t.costs.task_ns[1];
  EXPECT_GT(transfer, 0);
  EXPECT_EQ(t.engine.makespan, 1'000'000 + transfer + 500'000);
}

// A trace that starts as PyTorch's DDP does, with a broadcast of the
// parameters from rank 0, runs on every algorithm and on both engines. Two
// single-device nodes on 25 GbE: each rank computes 1 ms, rank 0
// broadcasts 1 MiB (one chunk, one step of the chain: the network's
// latency + 1 MiB / NIC bandwidth, after the collective's launch latency),
// then each computes 0.5 ms:
//   1 ms + (collective latency + net latency + 1048576 B / NIC B/s) + 0.5 ms.
TEST(ChakraTrace, BroadcastRunsOnEveryAlgorithmAndEngine) {
  std::vector<plan::ChakraTrace> traces;
  for (int r = 0; r < 2; ++r) {
    plan::chakra_test::TraceWriter w;
    w.Compute(1, 1000);
    cf::Node* b = w.Node(2, cf::COMM_COLL_NODE, {1});
    SetInt(b, "comm_type", cf::BROADCAST);
    SetInt(b, "comm_size", 1 << 20);
    w.Compute(3, 500, {2});
    traces.push_back(w.Finish("bcast." + std::to_string(r) + ".et"));
  }
  for (const std::string engine : {"analytic", "simgrid"}) {
    for (auto algorithm : {plan::CollectiveAlgorithm::kRing, plan::CollectiveAlgorithm::kTree,
                           plan::CollectiveAlgorithm::kHierarchical}) {
      config::Scenario s = DataParallelScenario(engine);
      s.cluster.devices_per_node = 1;
      plan::ChakraImportOptions options;
      options.algorithm = algorithm;
      const TracePrediction t = SimulateTracePlan(s, plan::ImportChakra(traces, options));
      ASSERT_EQ(t.plan.collectives().size(), 1u);
      EXPECT_EQ(t.plan.collectives()[0].op, plan::CollectiveOp::kBroadcast);
      const double expected_s = 1e-3 + t.network.collective_latency_s + t.network.net_latency_s +
                                (1 << 20) / t.network.nic_bw_bytes_per_s + 0.5e-3;
      EXPECT_NEAR(NsToSeconds(t.engine.makespan), expected_s,
                  engine == "analytic" ? 2e-9 : 0.01 * expected_s)
          << engine << " " << plan::CollectiveAlgorithmName(algorithm);
    }
  }
}

// Tensor parallelism inside each node and data parallelism across them, as
// PyTorch names the groups: ranks 0-3 on 2 nodes of 2 V100 (NVLink 2
// inside a node, 25 GbE between). Each rank all-reduces 64 MB in its
// tensor-parallel pair ({0, 1} or {2, 3}: inside its node), then 64 MB in
// its data-parallel pair ({0, 2} or {1, 3}: across the nodes). Ring
// all-reduces of 2 ranks, 2 steps of 32 MB each, priced alone by the
// analytic engine:
//   TP = L + 2 (intra latency + 32 MB / NVLink B),
//   DP = L + 2 (net latency + 32 MB / NIC B),
// and the step is TP + DP. Over all four ranks instead (what a pg_name
// used to get), each all-reduce would cross the NICs.
TEST(ChakraTrace, ProcessGroupsPlaceTensorAndDataParallelCollectives) {
  const std::string groups =
      R"(['[{"pg_name": "0", "ranks": []}, {"pg_name": "1", "ranks": [0, 1]}, )"
      R"({"pg_name": "2", "ranks": [2, 3]}, {"pg_name": "3", "ranks": [0, 2]}, )"
      R"({"pg_name": "4", "ranks": [1, 3]}]'])";
  const auto set_pg = [](cf::Node* n, const std::string& pg) {
    cf::AttributeProto* a = n->add_attr();
    a->set_name("pg_name");
    a->set_string_val(pg);
  };
  std::vector<plan::ChakraTrace> traces;
  for (int r = 0; r < 4; ++r) {
    plan::chakra_test::TraceWriter w;
    cf::Node* meta = w.Node(1, cf::METADATA_NODE);
    meta->set_name("## process_group:init ##");
    meta->mutable_inputs()->set_values(groups);
    set_pg(w.AllReduce(2, 64'000'000, {1}), r < 2 ? "1" : "2");
    set_pg(w.AllReduce(3, 64'000'000, {2}), r % 2 == 0 ? "3" : "4");
    traces.push_back(w.Finish("tp-dp." + std::to_string(r) + ".et"));
  }
  const config::Scenario s = DataParallelScenario("analytic");
  plan::ChakraImportOptions options;
  options.devices_per_node = 2;
  const TracePrediction t = SimulateTracePlan(s, plan::ImportChakra(traces, options));
  ASSERT_EQ(t.plan.collectives().size(), 4u);
  const NetworkSpec& n = t.network;
  const double tp = n.collective_latency_s + 2 * (n.intra_latency_s + 32e6 / n.intra_bw_bytes_per_s);
  const double dp = n.collective_latency_s + 2 * (n.net_latency_s + 32e6 / n.nic_bw_bytes_per_s);
  EXPECT_NEAR(NsToSeconds(t.engine.makespan), tp + dp, 2e-9);
}

}  // namespace
}  // namespace dtsim::sim
