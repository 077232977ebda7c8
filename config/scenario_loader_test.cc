#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "config/loader_test_util.h"
#include "config/scenario.h"

namespace dtsim::config {
namespace {

namespace fs = std::filesystem;

// A fresh folder name under the system's temporary folder, unique to this
// call (several test runs may share the machine).
fs::path ScratchDir() {
  std::random_device random;
  return fs::temp_directory_path() / ("dtsim_config_test_" + std::to_string(random()) +
                                      std::to_string(random()));
}

// ---------------------------------------------------------------- bad input

TEST(ScenarioLoaderTest, MissingUnit) {
  EXPECT_TRUE(FailsAt(R"(cluster:
  links:
    - {name: myfabric, bandwidth: 50, latency: 2us}
)",
                      3, "cluster.links[0].bandwidth: the bandwidth '50' has no unit"));
  // The hint is ParseQuantity's: an example and the accepted units.
  EXPECT_TRUE(FailsAt("parallelism:\n  bucket_size: 25\n", 2, "accepted units: B, KB"));
  EXPECT_TRUE(FailsAt("workload:\n  kernel_launch: 5\n", 2, "the time '5' has no unit"));
}

TEST(ScenarioLoaderTest, UnknownTopLevelKey) {
  EXPECT_TRUE(FailsAt("name: x\nsede: 3\n", 2, "unknown key 'sede' at top level"));
  EXPECT_TRUE(FailsAt("name: x\nsede: 3\n", 2,
                      "did you mean 'seed'? allowed keys: name, seed, engine, cluster, workload, "
                      "parallelism, stragglers, failures, link_events, simgrid, outputs"));
}

TEST(ScenarioLoaderTest, UnknownNestedKey) {
  EXPECT_TRUE(FailsAt(R"(cluster:
  nodes: 2
  network:
    link: 25GbE
    topolgy: fat_tree
)",
                      5, "unknown key 'topolgy' in 'cluster.network'"));
  EXPECT_TRUE(FailsAt("workload:\n  compute_efficiency: {convolution: 0.5}\n", 2,
                      "unknown key 'convolution' in 'workload.compute_efficiency'"));
  EXPECT_TRUE(FailsAt("outputs:\n  dir: x\n  jsn: true\n", 3, "allowed keys: dir, json"));
}

TEST(ScenarioLoaderTest, WrongType) {
  EXPECT_TRUE(FailsAt("name: x\ncluster: 4\n", 2, "cluster: expected a mapping"));
  EXPECT_TRUE(FailsAt("parallelism:\n  overlap: maybe\n", 2,
                      "parallelism.overlap: expected true or false, got 'maybe'"));
  EXPECT_TRUE(FailsAt("cluster:\n  device: [V100-SXM2-32GB]\n", 2,
                      "cluster.device: expected a single value, got a list"));
  EXPECT_TRUE(FailsAt("workload:\n  memory_efficiency: high\n", 2, "expected a number"));
  EXPECT_TRUE(FailsAt("cluster:\n  devices: {name: x}\n", 2, "cluster.devices: expected a list"));
  EXPECT_TRUE(FailsAt("- a\n- b\n", 1, "expected a mapping"));
}

TEST(ScenarioLoaderTest, NonIntegerCount) {
  EXPECT_TRUE(FailsAt("cluster:\n  nodes: 2.5\n", 2,
                      "cluster.nodes: expected an integer, got '2.5'"));
  EXPECT_TRUE(FailsAt("cluster:\n  nodes: four\n", 2, "expected an integer, got 'four'"));
  EXPECT_TRUE(FailsAt("cluster:\n  nodes: 0\n", 2, "expected an integer >= 1, got 0"));
  EXPECT_TRUE(FailsAt("workload:\n  batch_per_device: -8\n", 2, "expected an integer >= 1"));
  EXPECT_TRUE(FailsAt("cluster:\n  network: {nics_per_node: 1.5}\n", 2,
                      "cluster.network.nics_per_node: expected an integer"));
}

TEST(ScenarioLoaderTest, NegativeOrZeroBandwidth) {
  EXPECT_TRUE(FailsAt(R"(cluster:
  links:
    - name: myfabric
      bandwidth: -5GBps
      latency: 2us
)",
                      4, "negative bandwidth '-5GBps'"));
  EXPECT_TRUE(FailsAt("cluster:\n  links: [{name: f, bandwidth: 0GBps, latency: 1us}]\n", 2,
                      "expected a bandwidth > 0, got '0GBps'"));
  EXPECT_TRUE(FailsAt("parallelism:\n  bucket_size: 0MiB\n", 2, "expected a size > 0"));
}

TEST(ScenarioLoaderTest, EfficiencyOutOfRange) {
  EXPECT_TRUE(FailsAt("workload:\n  compute_efficiency:\n    dense: 0\n", 3,
                      "workload.compute_efficiency.dense: expected an efficiency in (0, 1], "
                      "got '0'"));
  EXPECT_TRUE(FailsAt("workload:\n  memory_efficiency: 1.2\n", 2,
                      "expected an efficiency in (0, 1], got '1.2'"));
  EXPECT_TRUE(FailsAt("cluster:\n  network:\n    oversubscription: 0.5\n", 3,
                      "expected an oversubscription in [1, 1000], got '0.5'"));
}

// Issue 11: the kernel model and the roofline's keys do not mix; the key
// that does not apply is refused where it is written.
TEST(ScenarioLoaderTest, CostModelKeys) {
  EXPECT_TRUE(FailsAt("workload:\n  cost_model: exact\n", 2, "unknown cost model 'exact'"));
  EXPECT_TRUE(FailsAt("workload:\n  cost_model: kernels\n  kernel_launch: 5us\n", 3,
                      "kernel_launch applies to the roofline cost model"));
  EXPECT_TRUE(FailsAt("workload:\n  compute_efficiency: {dense: 0.5}\n  cost_model: kernels\n",
                      2, "compute_efficiency applies to the roofline cost model"));
  const Scenario s = ParseScenario("workload:\n  cost_model: roofline\n", "test.yaml");
  EXPECT_EQ(s.workload.cost_model, CostModelKind::kRoofline);
  EXPECT_FALSE(ParseScenario("workload: {}\n", "test.yaml").workload.cost_model.has_value());
  // A scenario's own GPU for the kernel model: architecture, sms and l2 together.
  const std::string device =
      "cluster:\n  devices:\n    - {name: g, fp32: 10TFLOPS, memory: 16GiB, "
      "memory_bandwidth: 1TBps";
  const Scenario own = ParseScenario(device + ", architecture: ampere, sms: 80, l2: 40MiB}\n",
                                     "test.yaml");
  ASSERT_EQ(own.cluster.custom_devices.size(), 1u);
  EXPECT_TRUE(own.cluster.custom_devices[0].HasMicroarchitecture());
  EXPECT_EQ(own.cluster.custom_devices[0].sm_count, 80);
  EXPECT_TRUE(FailsAt(device + ", sms: 80}\n", 3, "needs all three"));
  EXPECT_TRUE(FailsAt(device + ", architecture: blackwell, sms: 80, l2: 40MiB}\n", 3,
                      "unknown GPU architecture 'blackwell'"));
}

// Issue 13, item 3: recompute takes a granularity (Megatron-LM's
// --recompute-granularity), and sequence_parallel is a key of hybrid plans
// with tensor parallelism only.
TEST(ScenarioLoaderTest, RecomputeGranularityAndSequenceParallel) {
  EXPECT_TRUE(ParseScenario("parallelism: {recompute: true}\n", "t.yaml").parallelism.recompute);
  EXPECT_TRUE(ParseScenario("parallelism: {recompute: full}\n", "t.yaml").parallelism.recompute);
  const Scenario sel = ParseScenario("parallelism: {recompute: selective}\n", "t.yaml");
  EXPECT_FALSE(sel.parallelism.recompute);
  EXPECT_TRUE(sel.parallelism.recompute_selective);
  const Scenario none = ParseScenario("parallelism: {recompute: none}\n", "t.yaml");
  EXPECT_FALSE(none.parallelism.recompute || none.parallelism.recompute_selective);
  EXPECT_TRUE(FailsAt("parallelism:\n  recompute: partial\n", 2, "recompute"));
  const std::string hybrid =
      "cluster: {nodes: 1, devices_per_node: 4, device: A100-SXM4-80GB, intra_node_link: "
      "nvswitch-a100}\nworkload: {model: gpt2}\nparallelism:\n  strategy: hybrid\n";
  EXPECT_TRUE(ParseScenario(hybrid + "  tensor_parallel: 2\n  sequence_parallel: true\n", "t.yaml")
                  .parallelism.hybrid.sequence_parallel);
  EXPECT_TRUE(FailsAt(hybrid + "  sequence_parallel: true\n", 5, "tensor_parallel > 1"));
  EXPECT_TRUE(FailsAt("parallelism:\n  sequence_parallel: true\n", 2, "strategy hybrid"));
}

// context_parallel and its kind are keys of hybrid plans; c x t x p must
// divide the devices, and the engines and schedules that cannot simulate
// it refuse it at the key.
TEST(ScenarioLoaderTest, ContextParallelKeys) {
  const std::string hybrid =
      "cluster: {nodes: 1, devices_per_node: 8, device: H100-SXM, intra_node_link: "
      "nvswitch-h100}\nworkload: {model: llama2-7b, precision: bf16}\nparallelism:\n"
      "  strategy: hybrid\n";
  const Scenario s = ParseScenario(
      hybrid + "  context_parallel: 4\n  context_parallel_kind: ulysses\n", "t.yaml");
  EXPECT_EQ(s.parallelism.hybrid.context_parallel, 4);
  EXPECT_EQ(s.parallelism.hybrid.context_parallel_kind, plan::ContextParallelKind::kUlysses);
  EXPECT_TRUE(FailsAt(hybrid + "  tensor_parallel: 4\n  context_parallel: 4\n", 6,
                      "x context_parallel = 16 does not divide"));
  EXPECT_TRUE(FailsAt(hybrid + "  context_parallel_kind: ulysses\n", 5, "context_parallel > 1"));
  EXPECT_TRUE(FailsAt("parallelism:\n  context_parallel: 2\n", 2, "strategy hybrid"));
  // Every context rank is simulated on its own on SimGrid and with stragglers.
  EXPECT_EQ(ParseScenario("engine: simgrid\n" + hybrid + "  context_parallel: 2\n", "t.yaml").engine,
            "simgrid");
  EXPECT_FALSE(ParseScenario(hybrid + "  context_parallel: 2\nstragglers: {slow_devices: [{ranks: "
                             "[0], factor: 2}]}\n", "t.yaml")
                   .stragglers.Empty());
}

// Issue 13, item 6: hierarchical averaging levels and post-local SGD.
TEST(ScenarioLoaderTest, AveragingGroupsAndPostLocal) {
  const std::string base =
      "cluster: {nodes: 4, devices_per_node: 4}\nparallelism:\n  strategy: local_sgd\n"
      "  averaging_period: 8\n";
  const Scenario s = ParseScenario(
      base + "  averaging_groups: [{group_size: 4, period: 2}, {group_size: 8, period: 4}]\n"
             "  post_local_steps: 100\n",
      "t.yaml");
  ASSERT_EQ(s.parallelism.averaging_groups.size(), 2u);
  EXPECT_EQ(s.parallelism.averaging_groups[1].group_size, 8);
  EXPECT_EQ(s.parallelism.averaging_groups[1].period, 4);
  EXPECT_EQ(s.parallelism.post_local_steps, 100);
  // Periods must grow by multiples, and divide the global period.
  EXPECT_TRUE(FailsAt(base + "  averaging_groups: [{group_size: 4, period: 4}, {group_size: 8, period: 2}]\n",
                      5, "multiple of the previous"));
  EXPECT_TRUE(FailsAt(base + "  averaging_groups: [{group_size: 4, period: 3}]\n", 5,
                      "must divide averaging_period"));
  // Groups must tile the 16 ranks and be smaller than all of them.
  EXPECT_TRUE(FailsAt(base + "  averaging_groups: [{group_size: 3, period: 2}]\n", 5,
                      "does not divide the 16 ranks"));
  EXPECT_TRUE(FailsAt(base + "  averaging_groups: [{group_size: 16, period: 2}]\n", 5,
                      "does not divide the 16 ranks"));
  EXPECT_TRUE(FailsAt("parallelism:\n  post_local_steps: 10\n", 2, "local_sgd"));
  // DiLoCo's outer optimizer and compressed averages.
  const Scenario d = ParseScenario(
      base + "  outer_optimizer: {kind: nesterov, lr: 0.5}\n  averaging_compression: int4\n",
      "t.yaml");
  EXPECT_TRUE(d.parallelism.outer_optimizer.enabled);
  EXPECT_DOUBLE_EQ(d.parallelism.outer_optimizer.lr, 0.5);
  EXPECT_DOUBLE_EQ(d.parallelism.outer_optimizer.momentum, 0.9);  // DiLoCo's default
  EXPECT_EQ(d.parallelism.averaging_compression, AveragingCompression::kInt4);
  EXPECT_TRUE(FailsAt(base + "  outer_optimizer: {kind: nesterov, momentum: 1}\n", 5, "[0, 1)"));
  EXPECT_TRUE(FailsAt(base + "  averaging: parameter_server\n  averaging_compression: fp16\n", 6,
                      "needs averaging: all_reduce"));
  // Streaming DiLoCo: fragments divide H; the overlap is shorter than H.
  const Scenario st = ParseScenario(base + "  streaming: {fragments: 4, overlap_steps: 2}\n", "t.yaml");
  EXPECT_EQ(st.parallelism.streaming_fragments, 4);
  EXPECT_EQ(st.parallelism.streaming_overlap, 2);
  EXPECT_TRUE(FailsAt(base + "  streaming: {fragments: 3}\n", 5, "must divide averaging_period"));
  EXPECT_TRUE(FailsAt(base + "  streaming: {fragments: 4, overlap_steps: 8}\n", 5,
                      "smaller than averaging_period"));
}

// Issue 13, item 2: hierarchical parameter servers are synchronous and
// aggregate every worker.
TEST(ScenarioLoaderTest, LocalAggregationOfParameterServers) {
  const std::string ps =
      "cluster: {nodes: 2, devices_per_node: 4}\nparallelism:\n  strategy: parameter_server\n";
  EXPECT_TRUE(ParseScenario(ps + "  parameter_server: {local_aggregation: device}\n", "t.yaml")
                  .parallelism.parameter_server.aggregate_in_machine);
  EXPECT_TRUE(FailsAt(ps + "  sync: asynchronous\n  parameter_server: {local_aggregation: device}\n",
                      5, "synchronous"));
  EXPECT_TRUE(FailsAt(ps + "  parameter_server: {local_aggregation: device, replicas_to_aggregate: 6}\n",
                      4, "aggregates every worker"));
  const Scenario host = ParseScenario(ps + "  parameter_server: {local_aggregation: host}\n", "t.yaml");
  EXPECT_TRUE(host.parallelism.parameter_server.aggregate_in_machine);
  EXPECT_TRUE(host.parallelism.parameter_server.aggregate_on_host);
  EXPECT_TRUE(FailsAt(ps + "  parameter_server: {local_aggregation: cpu}\n", 4, "local aggregation"));
}

// parallelism.parameter_server.variable_placement: a policy name or the
// partitioned mapping; anything else is refused where it is written.
TEST(ScenarioLoaderTest, VariablePlacementOfParameterServers) {
  const std::string ps =
      "cluster: {nodes: 2, devices_per_node: 1}\nparallelism:\n  strategy: parameter_server\n";
  const auto placement = [&](const std::string& value) {
    return ParseScenario(ps + "  parameter_server: {servers: 2, variable_placement: " + value +
                             "}\n",
                         "t.yaml")
        .parallelism.parameter_server.variable_placement;
  };
  EXPECT_FALSE(ParseScenario(ps, "t.yaml").parallelism.parameter_server.variable_placement);
  EXPECT_EQ(placement("greedy")->policy, plan::PsPlacementPolicy::kGreedy);
  EXPECT_EQ(placement("round_robin")->policy, plan::PsPlacementPolicy::kRoundRobin);
  const auto part = placement("{partitioned: {max_shard_bytes: 4MB}}");
  EXPECT_EQ(part->policy, plan::PsPlacementPolicy::kPartitioned);
  EXPECT_EQ(part->max_shard_bytes, 4e6);
  EXPECT_TRUE(FailsAt(ps + "  parameter_server: {variable_placement: hashed}\n", 4,
                      "variable placement"));
  EXPECT_TRUE(FailsAt(ps + "  parameter_server: {variable_placement: partitioned}\n", 4,
                      "max_shard_bytes"));
  EXPECT_TRUE(FailsAt(ps + "  parameter_server: {variable_placement: {partitioned: {max_shard_bytes: 0B}}}\n",
                      4, "max_shard_bytes"));
  EXPECT_TRUE(FailsAt(ps + "  parameter_server: {variable_placement: {sliced: 2}}\n", 4, "partitioned"));
  // The framework's default (config/framework.cc's sources).
  EXPECT_EQ(FindFramework("tensorflow-1")->ps_placement.policy, plan::PsPlacementPolicy::kRoundRobin);
  EXPECT_EQ(FindFramework("tensorflow-xla")->ps_placement.policy, plan::PsPlacementPolicy::kRoundRobin);
  EXPECT_EQ(FindFramework("mxnet")->ps_placement.max_shard_bytes, 4e6);        // 1e6 elements x 4 B
  EXPECT_EQ(FindFramework("byteps-pytorch")->ps_placement.max_shard_bytes, 4096000);
  EXPECT_EQ(FindFramework("pytorch-eager")->ps_placement.policy, plan::PsPlacementPolicy::kEven);
}

// Issue 13, item 4: PipeDream's replicated stages, given or planned.
TEST(ScenarioLoaderTest, PipeDreamStageReplicas) {
  const std::string base =
      "cluster: {nodes: 1, devices_per_node: 4}\nparallelism:\n  strategy: hybrid\n"
      "  schedule: pipedream\n";
  const Scenario given =
      ParseScenario(base + "  pipeline_parallel: 2\n  stage_replicas: [3, 1]\n", "t.yaml");
  EXPECT_EQ(given.parallelism.hybrid.stage_replicas, (std::vector<int>{3, 1}));
  EXPECT_FALSE(given.parallelism.hybrid.plan_replicas);
  EXPECT_TRUE(ParseScenario(base + "  stage_replicas: auto\n", "t.yaml").parallelism.hybrid.plan_replicas);
  EXPECT_TRUE(FailsAt(base + "  pipeline_parallel: 2\n  stage_replicas: [2, 1]\n", 6,
                      "add up to 3 devices, the cluster has 4"));
  EXPECT_TRUE(FailsAt(base + "  pipeline_parallel: 3\n  stage_replicas: [3, 1]\n", 6,
                      "2 entries and pipeline_parallel is 3"));
  EXPECT_TRUE(FailsAt(base + "  pipeline_parallel: 2\n  stage_replicas: auto\n", 5,
                      "leave pipeline_parallel out"));
  EXPECT_TRUE(FailsAt(base + "  stage_replicas: some\n", 5, "auto"));
  EXPECT_TRUE(FailsAt(base + "  tensor_parallel: 2\n", 5, "tensor_parallel 1"));
  EXPECT_TRUE(FailsAt(base + "  global_batch: 64\n", 5, "global_batch does not apply"));
  // Other schedules replicate every stage d times.
  EXPECT_TRUE(FailsAt("parallelism:\n  strategy: hybrid\n  stage_replicas: [1]\n", 3,
                      "only schedule pipedream"));
}

// Issue 13, item 1: sums on the host, over a named host link.
TEST(ScenarioLoaderTest, AggregationOnTheHost) {
  const Scenario s = ParseScenario(
      "cluster: {host_link: pcie4-x16}\nparallelism: {strategy: data, aggregation: host}\n", "t.yaml");
  EXPECT_TRUE(s.parallelism.aggregate_on_host);
  EXPECT_EQ(s.cluster.host_link, "pcie4-x16");
  EXPECT_FALSE(ParseScenario("parallelism: {aggregation: device}\n", "t.yaml").parallelism.aggregate_on_host);
  EXPECT_TRUE(FailsAt("parallelism:\n  strategy: parameter_server\n  aggregation: host\n", 3,
                      "parameter servers sum on their own device"));
  EXPECT_TRUE(FailsAt("cluster:\n  host_link: pcie9\n", 2, "pcie9"));
}

// Issue 10 item 18: extreme quantities ended as exit 1 "internal error" or
// as an error without a location ("must be > 0, got inf"); each is refused
// at the value, naming the bound (common/yaml_reader.h BoundsOf).
TEST(ScenarioLoaderTest, ExtremeQuantitiesAreRefusedWhereWritten) {
  EXPECT_TRUE(FailsAt(R"(cluster:
  links: [{name: l, bandwidth: 1e-300bps, latency: 1us}]
)",
                      2, "cluster.links[0].bandwidth: the bandwidth '1e-300bps' is less than"));
  EXPECT_TRUE(FailsAt(R"(cluster:
  devices:
    - {name: d, fp32: 1e-3FLOPS, memory: 16GiB, memory_bandwidth: 900GBps}
)",
                      3, "the compute rate '1e-3FLOPS' is less than 1.00 MFLOP/s"));
  // 1e308 PFLOPS is inf once scaled to FLOP/s: "must be > 0, got inf" before.
  EXPECT_TRUE(FailsAt(R"(cluster:
  devices:
    - {name: d, fp32: 1e308PFLOPS, memory: 16GiB, memory_bandwidth: 900GBps}
)",
                      3, "the compute rate '1e308PFLOPS' is more than 1000 EFLOP/s"));
  EXPECT_TRUE(FailsAt("cluster:\n  links: [{name: l, bandwidth: 1e308TBps, latency: 1us}]\n", 2,
                      "the bandwidth '1e308TBps' is more than"));
  EXPECT_TRUE(FailsAt("workload:\n  kernel_launch: 1e300s\n", 2,
                      "workload.kernel_launch: the time '1e300s' is more than"));
  EXPECT_TRUE(FailsAt("cluster:\n  network: {collective_latency: 1000001s}\n", 2,
                      "the time '1000001s' is more than"));
  EXPECT_TRUE(FailsAt("parallelism:\n  bucket_size: 1e-300B\n", 2,
                      "the size '1e-300B' is less than 1.00 B"));
  EXPECT_TRUE(FailsAt("workload:\n  memory_efficiency: 1e-300\n", 2, "below 0.001"));
  EXPECT_TRUE(FailsAt("cluster:\n  network: {oversubscription: 1e300}\n", 2,
                      "oversubscription in [1, 1000]"));
  EXPECT_TRUE(FailsAt("workload:\n  optimizer_bytes_per_param: 1e300\n", 2, "[0, 1000]"));
  EXPECT_TRUE(FailsAt("workload:\n  kernel_launch: infs\n", 2, "expected a finite time"));
  EXPECT_TRUE(FailsAt("workload:\n  memory_efficiency: nan\n", 2, "expected a number"));
  // The largest accepted values load.
  EXPECT_NO_THROW(ParseScenario(R"(cluster:
  links: [{name: l, bandwidth: 1000TBps, latency: 1000000s}]
  devices:
    - {name: d, fp32: 1e21FLOPS, memory: 1048576TiB, memory_bandwidth: 1000TBps}
)",
                                "t.yaml"));
}

TEST(ScenarioLoaderTest, ReplicasToAggregateAreWorkers) {
  EXPECT_TRUE(FailsAt(R"(cluster: {nodes: 2}
parallelism:
  strategy: parameter_server
  parameter_server:
    replicas_to_aggregate: 3
)",
                      5, "expected at most the cluster's 2 workers, got 3"));
}

TEST(ScenarioLoaderTest, FailureEventsAreBoundedWhereWritten) {
  // The reproducer printed "about -9223372036854775808 events".
  EXPECT_TRUE(FailsAt("failures: {mtbf: 100h, horizon: 1e300h}\n", 1,
                      "failures.horizon: the time '1e300h' is more than"));
  EXPECT_TRUE(FailsAt("failures:\n  mtbf: 100h\n  checkpoint_interval: 1ns\n", 3,
                      "is 605 T checkpoints, more than the 10^8"));
  // 1 ns per device over 7 days: 6e14 failures.
  EXPECT_TRUE(FailsAt("failures:\n  mtbf: 1ns\n", 2, "more than the 10^8 dtsim simulates"));
}

TEST(ScenarioLoaderTest, UnknownModel) {
  EXPECT_TRUE(FailsAt("name: x\nworkload:\n  model: resnet-50\n", 3,
                      "unknown model 'resnet-50'\n  hint: did you mean 'resnet50'?"));
  EXPECT_TRUE(FailsAt("workload:\n  model: {zoo: resnet50}\n", 2, "unknown key 'zoo'"));
  EXPECT_TRUE(FailsAt("workload:\n  model: {file: no-such-model.yaml}\n", 2,
                      "model file 'no-such-model.yaml' not found"));
}

TEST(ScenarioLoaderTest, InconsistentTransformer) {
  EXPECT_TRUE(FailsAt("workload:\n  model:\n    transformer: {hidden: 1000, heads: 16}\n", 3,
                      "workload.model.transformer.heads: hidden (1000) must be divisible by "
                      "heads (16)"));
  EXPECT_TRUE(FailsAt(R"(workload:
  model:
    transformer:
      sequence: 2048
      max_positions: 1024
)",
                      5, "max_positions (1024) is shorter than sequence (2048)"));
  EXPECT_TRUE(FailsAt("workload:\n  model: {transformer: {layers: 0}}\n", 2,
                      "transformer.layers: expected an integer >= 1, got 0"));
}

TEST(ScenarioLoaderTest, TooManyDevices) {
  EXPECT_TRUE(FailsAt("cluster:\n  nodes: 100000\n  devices_per_node: 100000\n", 3,
                      "more than dtsim can number"));
}

TEST(ScenarioLoaderTest, UnknownDevice) {
  EXPECT_TRUE(FailsAt("cluster:\n  nodes: 2\n  device: V100-SMX2-32GB\n", 3,
                      "cluster.device: unknown device 'V100-SMX2-32GB'\n  hint: did you mean "
                      "'V100-SXM2-32GB'?"));
  EXPECT_TRUE(FailsAt("cluster:\n  device: TPUv9\n", 2, "define it under cluster.devices"));
}

TEST(ScenarioLoaderTest, UnknownLink) {
  EXPECT_TRUE(FailsAt("cluster:\n  intra_node_link: nvlink9\n", 2,
                      "cluster.intra_node_link: unknown link 'nvlink9'"));
  EXPECT_TRUE(FailsAt("cluster:\n  network:\n    link: 400GbE-ultra\n", 3,
                      "cluster.network.link: unknown link '400GbE-ultra'"));
}

TEST(ScenarioLoaderTest, UnknownEnumValue) {
  EXPECT_TRUE(FailsAt("parallelism:\n  algorithm: butterfly\n", 2,
                      "unknown all-reduce algorithm 'butterfly'\n  hint: accepted values: "
                      "ring, tree, hierarchical"));
  EXPECT_TRUE(FailsAt("cluster:\n  network: {topology: torus}\n", 2,
                      "accepted values: single_switch, fat_tree"));
  EXPECT_TRUE(FailsAt("parallelism:\n  strategy: pipeline\n", 2, "unknown strategy 'pipeline'"));
  EXPECT_TRUE(FailsAt("engine: ns3\n", 1, "unknown engine 'ns3'"));
  // Precision names come from hw::ParsePrecision; the error is moved to the value.
  EXPECT_TRUE(FailsAt("workload:\n  precision: fp4\n", 2, "fp4"));
}

// fp8 needs FP8 tensor cores: refused at workload.precision on an A100,
// naming the GPUs of the catalog that have them; accepted on an H100 and on
// a device of the scenario that gives an fp8 rate.
TEST(ScenarioLoaderTest, Fp8NeedsFp8TensorCores) {
  EXPECT_TRUE(FailsAt("cluster: {device: A100-SXM4-80GB}\nworkload:\n  precision: fp8\n", 3,
                      "precision fp8 needs FP8 tensor cores, which A100-SXM4-80GB does not have"));
  EXPECT_TRUE(FailsAt("cluster: {device: V100}\nworkload:\n  model: resnet50\n  precision: fp8\n",
                      4, "Hopper, Ada and Blackwell GPUs (in the catalog: H100-PCIe, H100-SXM, "
                         "H200-SXM;"));
  EXPECT_EQ(ParseScenario("cluster: {device: H100-SXM}\nworkload: {precision: fp8}\n", "a.yaml")
                .workload.precision,
            hw::Precision::kFp8);
  const Scenario own = ParseScenario(R"(cluster:
  devices:
    - {name: MyGPU, fp32: 60TFLOPS, bf16: 900TFLOPS, fp8: 1800TFLOPS, memory: 80GiB,
       memory_bandwidth: 3TB/s}
  device: MyGPU
workload: {precision: fp8}
)",
                                     "b.yaml");
  EXPECT_DOUBLE_EQ(ScenarioCatalog(own).FindDevice("MyGPU")->fp8_flop_per_s, 1800e12);
}

TEST(ScenarioLoaderTest, MissingRequiredKey) {
  EXPECT_TRUE(FailsAt(R"(cluster:
  devices:
    - {name: MyGPU, memory: 48GiB, memory_bandwidth: 1TBps}
)",
                      3, "cluster.devices[0]: missing required key 'fp32'"));
}

TEST(ScenarioLoaderTest, DuplicateCustomDevice) {
  EXPECT_TRUE(FailsAt(R"(cluster:
  devices:
    - {name: G, fp32: 1TFLOPS, memory: 1GiB, memory_bandwidth: 1TBps}
    - {name: g, fp32: 2TFLOPS, memory: 1GiB, memory_bandwidth: 1TBps}
)",
                      4, "device 'g' is defined twice"));
}

TEST(ScenarioLoaderTest, MalformedYaml) {
  // The flow mapping opened on line 3 is never closed.
  EXPECT_TRUE(FailsAt(R"(name: x
cluster:
  network: {link: 25GbE, topology: fat_tree
workload:
  model: resnet50
)",
                      4, "malformed YAML"));
  // A tab is not indentation in YAML.
  EXPECT_TRUE(FailsAt("cluster:\n  nodes: 2\n\tdevices_per_node: 4\n", 3, "malformed YAML"));
}

TEST(ScenarioLoaderTest, EmptyFile) { EXPECT_TRUE(FailsAt("", 1, "the scenario is empty")); }

TEST(ScenarioLoaderTest, MissingFile) {
  try {
    LoadScenario("scenarios/no-such-scenario.yaml");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().file, "scenarios/no-such-scenario.yaml");
    EXPECT_NE(std::string(e.what()).find("cannot read scenario file "
                                         "'scenarios/no-such-scenario.yaml': no such file"),
              std::string::npos)
        << e.what();
    // The hint lists the scenarios next to it.
    EXPECT_NE(e.hint().find("default.yaml"), std::string::npos) << e.what();
  }
}

// --------------------------------------------------------------- good input

TEST(ScenarioLoaderTest, DefaultsApplied) {
  const Scenario s = ParseScenario("seed: 7\n", "some/dir/my-run.yaml");
  const Scenario d;  // scenario.h's defaults
  EXPECT_EQ(s.name, "my-run");  // the file stem
  EXPECT_EQ(s.source_path, "some/dir/my-run.yaml");
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.engine, d.engine);
  EXPECT_EQ(s.cluster.nodes, 1);
  EXPECT_EQ(s.cluster.devices_per_node, 1);
  EXPECT_EQ(s.cluster.device, d.cluster.device);
  EXPECT_EQ(s.cluster.intra_node_link, d.cluster.intra_node_link);
  EXPECT_EQ(s.cluster.network.link, d.cluster.network.link);
  EXPECT_EQ(s.cluster.network.topology, Topology::kSingleSwitch);
  EXPECT_EQ(s.cluster.network.nodes_per_leaf, 16);
  EXPECT_EQ(s.workload.model.zoo_name, "resnet50");
  EXPECT_FALSE(s.workload.model.transformer.has_value());
  EXPECT_EQ(s.workload.batch_per_device, 32);
  EXPECT_EQ(s.workload.precision, hw::Precision::kFp32);
  EXPECT_EQ(s.workload.iterations, 5);
  EXPECT_TRUE(s.workload.compute_efficiency.empty());
  EXPECT_FALSE(s.workload.memory_efficiency.has_value());
  EXPECT_FALSE(s.workload.kernel_launch_s.has_value());
  EXPECT_EQ(s.parallelism.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_DOUBLE_EQ(s.parallelism.bucket_bytes, 25.0 * 1024 * 1024);
  EXPECT_TRUE(s.parallelism.overlap);
  EXPECT_EQ(s.outputs.dir, "results/my-run");
  EXPECT_TRUE(s.outputs.json && s.outputs.csv && s.outputs.trace);
  EXPECT_EQ(s.outputs.trace_max_ranks, 16);
}

TEST(ScenarioLoaderTest, DefaultNamesAreInTheBuiltInCatalog) {
  const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  const ClusterConfig c;
  EXPECT_NE(catalog.FindDevice(c.device), nullptr) << c.device;
  EXPECT_NE(catalog.FindLink(c.intra_node_link), nullptr) << c.intra_node_link;
  EXPECT_NE(catalog.FindLink(c.network.link), nullptr) << c.network.link;
}

TEST(ScenarioLoaderTest, EveryKeyIsRead) {
  // The full example of docs/scenario.md, with the values converted by hand:
  //   25MiB = 25 x 1024^2 B; 1TBps = 1e12 B/s; 48GiB = 48 x 1024^3 B.
  const Scenario s = ParseScenario(R"(name: full
seed: 42
engine: analytic
cluster:
  nodes: 4
  devices_per_node: 8
  device: MyGPU
  intra_node_link: myfabric
  network:
    link: myfabric
    topology: fat_tree
    nics_per_node: 2
    nodes_per_leaf: 2
    oversubscription: 2.5
    spine_latency: 3us
  devices:
    - {name: MyGPU, kind: gpu, fp32: 20TFLOPS, tf32: 80TFLOPS, fp16: 160TFLOPS, bf16: 160TFLOPS,
       memory: 48GiB, memory_bandwidth: 1TBps, source: "vendor sheet"}
  links:
    - {name: myfabric, bandwidth: 50GBps, latency: 2us}
workload:
  model: ResNet50
  batch_per_device: 64
  precision: fp16
  iterations: 3
  compute_efficiency: {conv2d: 0.55, dense: 0.7}
  memory_efficiency: 0.8
  kernel_launch: 5us
  optimizer_bytes_per_param: 12
parallelism:
  strategy: data
  sync: synchronous
  algorithm: hierarchical
  bucket_size: 25MiB
  overlap: false
outputs:
  dir: out/full
  json: true
  csv: false
  trace: no
  trace_max_ranks: 4
)",
                                   "full.yaml");
  EXPECT_EQ(s.name, "full");
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(s.cluster.num_devices(), 32);
  EXPECT_EQ(s.cluster.device, "MyGPU");
  EXPECT_EQ(s.cluster.network.topology, Topology::kFatTree);
  EXPECT_EQ(s.cluster.network.nics_per_node, 2);
  EXPECT_EQ(s.cluster.network.nodes_per_leaf, 2);
  EXPECT_DOUBLE_EQ(s.cluster.network.oversubscription, 2.5);
  EXPECT_DOUBLE_EQ(s.cluster.network.spine_latency_s, 3e-6);
  ASSERT_EQ(s.cluster.custom_devices.size(), 1u);
  const hw::DeviceSpec& d = s.cluster.custom_devices[0];
  EXPECT_DOUBLE_EQ(d.tf32_flop_per_s, 80e12);
  EXPECT_DOUBLE_EQ(d.memory_bytes, 48.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(d.memory_bw_bytes_per_s, 1e12);
  EXPECT_EQ(d.source, "vendor sheet");
  ASSERT_EQ(s.cluster.custom_links.size(), 1u);
  EXPECT_DOUBLE_EQ(s.cluster.custom_links[0].bw_bytes_per_s, 50e9);
  EXPECT_DOUBLE_EQ(s.cluster.custom_links[0].latency_s, 2e-6);
  EXPECT_EQ(s.workload.model.zoo_name, "resnet50");  // the zoo's spelling
  EXPECT_EQ(s.workload.precision, hw::Precision::kFp16);
  EXPECT_EQ(s.workload.iterations, 3);
  EXPECT_EQ(s.workload.compute_efficiency.size(), 2u);
  EXPECT_DOUBLE_EQ(s.workload.compute_efficiency.at(models::OpKind::kConv2d), 0.55);
  EXPECT_DOUBLE_EQ(s.workload.compute_efficiency.at(models::OpKind::kDense), 0.7);
  EXPECT_DOUBLE_EQ(*s.workload.memory_efficiency, 0.8);
  EXPECT_DOUBLE_EQ(*s.workload.kernel_launch_s, 5e-6);
  EXPECT_DOUBLE_EQ(*s.workload.optimizer_bytes_per_param, 12);
  EXPECT_EQ(s.parallelism.algorithm, CollectiveAlgorithm::kHierarchical);
  EXPECT_DOUBLE_EQ(s.parallelism.bucket_bytes, 25.0 * 1024 * 1024);
  EXPECT_FALSE(s.parallelism.overlap);
  EXPECT_EQ(s.outputs.dir, "out/full");
  EXPECT_TRUE(s.outputs.json);
  EXPECT_FALSE(s.outputs.csv);
  EXPECT_FALSE(s.outputs.trace);
  EXPECT_EQ(s.outputs.trace_max_ranks, 4);
}

TEST(ScenarioLoaderTest, CustomDeviceIsUsed) {
  const Scenario s = ParseScenario(R"(cluster:
  device: mygpu   # names are case-insensitive; the definition's spelling is kept
  devices:
    - {name: MyGPU, fp32: 20TFLOPS, fp16: 160TFLOPS, memory: 48GiB, memory_bandwidth: 1TBps}
)",
                                   "custom.yaml");
  EXPECT_EQ(s.cluster.device, "MyGPU");
  const hw::HardwareCatalog catalog = ScenarioCatalog(s);
  const hw::DeviceSpec* d = catalog.FindDevice(s.cluster.device);
  ASSERT_NE(d, nullptr);
  EXPECT_DOUBLE_EQ(d->fp16_flop_per_s, 160e12);
  EXPECT_EQ(d->source, "scenario custom.yaml");
  // The built-in entries are still there.
  EXPECT_NE(catalog.FindDevice("V100-SXM2-32GB"), nullptr);
}

TEST(ScenarioLoaderTest, CustomDeviceReplacesBuiltIn) {
  const Scenario s = ParseScenario(R"(cluster:
  device: V100-SXM2-32GB
  devices:
    - {name: V100-SXM2-32GB, fp32: 1TFLOPS, memory: 1GiB, memory_bandwidth: 1GBps}
)",
                                   "replace.yaml");
  EXPECT_DOUBLE_EQ(ScenarioCatalog(s).FindDevice("V100-SXM2-32GB")->fp32_flop_per_s, 1e12);
}

TEST(ScenarioLoaderTest, TransformerModel) {
  const Scenario s = ParseScenario(R"(workload:
  model:
    transformer: {layers: 2, hidden: 256, heads: 4, sequence: 128, vocab: 1000,
                  tied_embeddings: false, causal: false}
  precision: bf16
)",
                                   "t.yaml");
  ASSERT_TRUE(s.workload.model.transformer.has_value());
  const models::TransformerConfig& t = *s.workload.model.transformer;
  EXPECT_EQ(t.layers, 2);
  EXPECT_EQ(t.hidden, 256);
  EXPECT_EQ(t.heads, 4);
  EXPECT_EQ(t.sequence, 128);
  EXPECT_EQ(t.vocab, 1000);
  EXPECT_EQ(t.ffn_hidden, 0);  // builder default
  EXPECT_FALSE(t.tied_embeddings);
  EXPECT_FALSE(t.causal);
  const models::ModelGraph g = BuildWorkloadModel(s);
  ASSERT_GT(g.num_ops(), 0u);
  for (models::OpId i = 0; i < g.num_ops(); ++i) EXPECT_EQ(g.op(i).dtype, models::DType::kBf16);
}

TEST(ScenarioLoaderTest, PrecisionSetsTheModelDType) {
  const Scenario fp16 = ParseScenario("workload: {model: resnet50, precision: fp16}\n", "a.yaml");
  EXPECT_EQ(BuildWorkloadModel(fp16).op(0).dtype, models::DType::kFp16);
  const Scenario tf32 = ParseScenario("workload: {model: resnet50, precision: tf32}\n", "b.yaml");
  EXPECT_EQ(BuildWorkloadModel(tf32).op(0).dtype, models::DType::kFp32);
}

TEST(ScenarioLoaderTest, ModelFileIsResolvedAgainstTheScenarioFolder) {
  const fs::path dir = ScratchDir();
  fs::create_directories(dir / "models");
  // The example of docs/model_file.md.
  std::ofstream(dir / "models" / "mine.yaml") << R"(name: my-cnn
input: [3, 32, 32]
layers:
  - {name: conv1, type: conv2d, out_channels: 32, kernel: 3, stride: 1, padding: 1}
  - {name: relu1, type: relu}
  - {name: pool1, type: maxpool, kernel: 2}
  - {name: flat, type: flatten}
  - {name: fc, type: dense, out_features: 10, inputs: [flat]}
  - {type: softmax_xent}
)";
  std::ofstream(dir / "run.yaml") << "workload:\n  model: {file: models/mine.yaml}\n";
  const Scenario s = LoadScenario((dir / "run.yaml").string());
  EXPECT_EQ(s.workload.model.file, (dir / "models" / "mine.yaml").string());
  EXPECT_EQ(s.name, "run");
  EXPECT_EQ(BuildWorkloadModel(s).name(), "my-cnn");
  fs::remove_all(dir);
}

TEST(ScenarioLoaderTest, ErrorsInAFileNameTheFile) {
  const fs::path dir = ScratchDir();
  fs::create_directories(dir);
  const std::string path = (dir / "bad.yaml").string();
  std::ofstream(path) << "name: bad\ncluster:\n  nodes: 2.5\n";
  try {
    LoadScenario(path);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().ToString(), path + ":3:10");
  }
  fs::remove_all(dir);
}

// The full example of docs/scenario.md (its first yaml block) is valid.
TEST(ScenarioLoaderTest, DocumentationExampleLoads) {
  std::ifstream in("docs/scenario.md");
  ASSERT_TRUE(in) << "run from the repository root";
  std::string line, example;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line == "```yaml") {
      inside = true;
    } else if (inside && line == "```") {
      break;
    } else if (inside) {
      example += line + "\n";
    }
  }
  ASSERT_FALSE(example.empty());
  const Scenario s = ParseScenario(example, "docs/scenario.md");
  EXPECT_EQ(s.name, "resnet50-16xV100-25GbE");
  EXPECT_EQ(s.cluster.num_devices(), 16);
  EXPECT_EQ(s.cluster.custom_devices.size(), 1u);
}

// Every shipped scenario loads, names catalog entries and builds its model.
// Tests run from the repository root (dtsim_test sets the working directory).
TEST(ScenarioLoaderTest, EveryShippedScenarioLoads) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    // sweep-*.yaml give lists (sweep axes): `dtsim sweep` expands them.
    if (entry.path().filename().string().starts_with("sweep-")) continue;
    SCOPED_TRACE(entry.path().string());
    ++count;
    try {
      const Scenario s = LoadScenario(entry.path().string());
      EXPECT_EQ(s.name, entry.path().stem().string());
      const hw::HardwareCatalog catalog = ScenarioCatalog(s);
      EXPECT_NE(catalog.FindDevice(s.cluster.device), nullptr);
      EXPECT_NE(catalog.FindLink(s.cluster.intra_node_link), nullptr);
      EXPECT_NE(catalog.FindLink(s.cluster.network.link), nullptr);
      // A scenario with jobs: each job's model.
      if (s.jobs.empty()) {
        EXPECT_GT(BuildWorkloadModel(s).num_ops(), 0u);
      }
      for (const Job& job : s.jobs) EXPECT_GT(BuildWorkloadModel(job.scenario).num_ops(), 0u);
    } catch (const UserError& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_GE(count, 6);
}

TEST(ScenarioLoaderTest, HybridShapeIsCheckedWhereWritten) {
  const std::string cluster = "cluster: {nodes: 1, devices_per_node: 8}\n";
  EXPECT_TRUE(FailsAt(cluster + "parallelism:\n  strategy: hybrid\n  tensor_parallel: 3\n", 4,
                      "tensor_parallel x pipeline_parallel = 3 does not divide the cluster's 8"));
  EXPECT_TRUE(FailsAt(cluster +
                          "parallelism:\n  strategy: hybrid\n  tensor_parallel: 2\n"
                          "  micro_batch_size: 2\n  global_batch: 12\n",
                      6, "not a multiple of data parallelism x micro_batch_size = 8"));
  EXPECT_TRUE(FailsAt(cluster + "parallelism:\n  strategy: hybrid\n  schedule: interleaved\n", 3,
                      "needs virtual_stages >= 2"));
}

TEST(ScenarioLoaderTest, SimgridSection) {
  const Scenario s = ParseScenario(
      "engine: simgrid\nsimgrid:\n  config: [\"network/model:LV08\"]\n  max_step_repeats: 8\n"
      "  log: warning\n",
      "test.yaml");
  EXPECT_EQ(s.engine, "simgrid");
  EXPECT_EQ(s.simgrid.config, std::vector<std::string>{"network/model:LV08"});
  EXPECT_EQ(s.simgrid.max_step_repeats, 8);
  EXPECT_EQ(s.simgrid.log_threshold, "warning");
  EXPECT_TRUE(FailsAt("simgrid:\n  config: [LV08]\n", 2, "expected a SimGrid configuration item"));
  EXPECT_TRUE(FailsAt("simgrid:\n  log: loud\n", 2, "log threshold"));
  // A precision <= 0 never lets SimGrid's solver settle: refused at the item.
  EXPECT_TRUE(FailsAt("simgrid:\n  config: [\"surf/precision:-1\"]\n", 2,
                      "SimGrid's surf/precision must be a number in (0, 1], got '-1'"));
  EXPECT_TRUE(FailsAt("simgrid:\n  config:\n    - network/model:LV08\n    - precision/timing:0\n",
                      4, "precision/timing must be a number in (0, 1]"));
  EXPECT_TRUE(FailsAt("simgrid:\n  config: [\"maxmin/precision:nan\"]\n", 2, "(0, 1]"));
  EXPECT_EQ(ParseScenario("engine: simgrid\nsimgrid:\n  config: [\"precision/work-amount:1e-5\"]\n",
                          "t.yaml")
                .simgrid.config.size(),
            1u);
}

}  // namespace
}  // namespace dtsim::config

namespace dtsim::config {
namespace {

// Issue 10 item 15: `name: ../../../escaped` wrote outside results/ and
// `name: ".."` into the current directory. A name is a name, not a path.
TEST(ScenarioLoaderTest, NameIsNotAPath) {
  EXPECT_TRUE(FailsAt("name: ../../../escaped\n", 1, "cannot contain '/'"));
  EXPECT_TRUE(FailsAt("name: \"..\"\n", 1, "'..' is a folder, not a scenario name"));
  EXPECT_TRUE(FailsAt("name: .\n", 1, "'.' is a folder"));
  EXPECT_TRUE(FailsAt("seed: 1\nname: 'a\\b'\n", 2, "cannot contain '\\'"));
  EXPECT_TRUE(FailsAt("name: \"a\\0b\"\n", 1, "control characters"));
  EXPECT_TRUE(FailsAt("name: \"x\\ny\"\n", 1, "control characters"));
  EXPECT_TRUE(FailsAt("name: -rf\n", 1, "cannot start with '-'"));
  EXPECT_TRUE(FailsAt("name: .hidden\n", 1, "cannot start with '.'"));
  EXPECT_TRUE(FailsAt("name: " + std::string(129, 'a') + "\n", 1, "at most 128 bytes"));
  EXPECT_EQ(ParseScenario("name: gpt3-13b_64 GPUs.v2\n", "t.yaml").name, "gpt3-13b_64 GPUs.v2");
  EXPECT_EQ(ParseScenario("seed: 1\n", "dir/my-run.yaml").outputs.dir, "results/my-run");
  // A file name that cannot be a folder's ("...yaml" has the stem "..")
  // needs a name: key.
  try {
    ParseScenario("seed: 1\n", "dir/...yaml");
    ADD_FAILURE() << "accepted the stem '..'";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("add a 'name:' key"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtsim::config
