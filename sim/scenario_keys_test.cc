// Every documented scenario key either changes the prediction or is refused
// (a UserError at the key) for each strategy. The keys come from the
// schema's documentation, docs/scenario.md (each table's `key` rows under
// the section that names their mapping), so a key documented later is
// covered as soon as it is: the test fails until it has an alternative
// value here. For each strategy's base scenario and each key, the key is
// set to its alternative value: the scenario must then be refused, or its
// prediction (timing, breakdown, memory, traffic, goodput) must differ.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/scenario.h"
#include "sim/memory.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

// The documented keys of the scenario's mappings, as dotted paths. List
// entries (cluster.devices[i], stragglers.slow_devices[i]) and the
// transport mapping's own table are not keys of the scenario's mappings.
std::vector<std::string> DocumentedKeys() {
  std::ifstream f("docs/scenario.md");
  std::vector<std::string> keys;
  std::string prefix;
  bool in_section = false;
  const std::regex heading_key("`([a-z_.]+)`");
  const std::regex row(R"(^\| `([a-z_0-9]+)` \| ([^|]*) \|)");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind('#', 0) == 0) {
      std::smatch m;
      in_section = true;
      if (line == "## Top level") {
        prefix = "";
      } else if (line.find("Frameworks and input pipelines") != std::string::npos) {
        prefix = "workload.framework.";
      } else if (std::regex_search(line, m, heading_key) && line.find("[i]") == std::string::npos &&
                 line.find("Transports") == std::string::npos) {
        prefix = m[1].str() + ".";
      } else {
        in_section = false;
      }
      continue;
    }
    std::smatch m;
    // The framework section's second table lists profiles, not keys: its
    // rows' second cell is a figure, not a type.
    if (in_section && std::regex_search(line, m, row) && m[2].str().find(" us") == std::string::npos &&
        m[2].str() != "0")
      keys.push_back(prefix + m[1].str());
  }
  return keys;
}

// Keys that are not parts of the prediction, and why.
const std::map<std::string, std::string> kNotPredictions = {
    {"name", "names the run and its folder"},
    {"seed", "seeds what is random; a scenario with nothing random gives the same answer"},
    {"outputs.dir", "where files go"},
    {"outputs.json", "which files are written"},
    {"outputs.csv", "which files are written"},
    {"outputs.trace", "which files are written"},
    {"outputs.trace_max_ranks", "how much of the timeline is written"},
    {"outputs.link_traffic", "which figures the report and the timeline add"},
    {"cluster.devices", "adds catalog entries, used when named (cluster.device)"},
    {"cluster.links", "adds catalog entries, used when named"},
    {"cluster.device_profile", "a file dtsim calibrate writes (config/device_profile_test.cc)"},
};

// Hardware a strategy's traffic does not cross: the cluster's description,
// kept whatever the strategy ("strategy:key"; "*" for every strategy).
const std::map<std::string, std::string> kHardwareNotCrossed = {
    {"parameter_server:cluster.intra_node_link",
     "dedicated servers: workers send only to the servers, over the network"},
    {"parameter_server:cluster.network.intra_node_transport",
     "dedicated servers: workers send only to the servers, over the network"},
    {"*:cluster.host_link", "crossed only by sums on the host (parallelism.aggregation: host)"},
};

// Mappings whose keys are covered one by one.
const std::set<std::string> kSections = {
    "cluster",  "workload",  "parallelism", "stragglers", "failures",
    "outputs",  "cluster.network", "parallelism.parameter_server", "stragglers.noise",
    "stragglers.interference"};

// A value of each key other than the base scenarios' (YAML).
const std::map<std::string, std::string> kAlternatives = {
    {"engine", "simgrid"},
    {"cluster.nodes", "4"},
    {"cluster.devices_per_node", "8"},
    {"cluster.device", "A100-SXM4-40GB"},
    {"cluster.intra_node_link", "1GbE"},
    {"cluster.host_link", "pcie4-x16"},
    {"cluster.gpu_speed_spread", "0.05"},
    // Refused beside the bases' cluster.nodes (sim/node_groups_test.cc
    // covers the groups' effect).
    {"cluster.node_groups", "[{name: a, nodes: 1}, {name: b, nodes: 1, device: A100-SXM4-40GB}]"},
    {"cluster.network.link", "100GbE"},
    {"cluster.network.topology", "{link: 10GbE, topology: fat_tree, nodes_per_leaf: 1, "
                                 "oversubscription: 4}"},
    {"cluster.network.nics_per_node", "2"},
    {"cluster.network.nodes_per_leaf", "1"},
    {"cluster.network.oversubscription", "4"},
    {"cluster.network.spine_latency", "50us"},
    {"cluster.network.collective_latency", "100us"},
    {"cluster.network.protocols", "nccl"},
    {"cluster.network.transport", "mpi-tcp"},
    {"cluster.network.intra_node_transport", "{base: grpc, per_message: 20ms}"},
    {"workload.model", "{transformer: {layers: 4, hidden: 512, heads: 8, sequence: 128, vocab: 1000}}"},
    {"workload.batch_per_device", "16"},
    {"workload.precision", "fp32"},
    {"workload.iterations", "7"},
    {"workload.cost_model", "roofline"},
    // Without cost_model: measured it is refused (the CLI test prices from a table).
    {"workload.cost_table", "results/local-measured/cifar10-1cpu.json"},
    {"workload.compute_efficiency", "{matmul: 0.2}"},
    {"workload.memory_efficiency", "0.2"},
    {"workload.kernel_launch", "50us"},
    {"workload.framework", "tensorflow-1"},
    {"workload.input", "{dataset: mine, per_sample: 1ms, cores: 1}"},
    {"workload.optimizer_bytes_per_param", "200"},
    {"workload.framework.per_op", "50us"},
    {"workload.framework.per_kernel", "50us"},
    {"workload.framework.per_collective", "100ms"},
    {"workload.framework.per_step", "5ms"},
    {"workload.framework.optimizer_loop", "per_tensor"},
    {"workload.framework.optimizer_kernels_per_tensor", "9"},
    {"workload.framework.optimizer_tensors_per_launch", "1"},
    {"workload.framework.cuda_graphs", "true"},
    {"workload.framework.graph_launch", "5ms"},
    {"workload.framework.sync_each_step", "false"},
    {"workload.framework.sync_on_p2p", "true"},
    {"workload.framework.fused", "[add, gelu, dropout]"},
    {"workload.framework.fusion_buffer", "1KB"},
    {"workload.framework.cycle_time", "20ms"},
    {"workload.framework.attention", "fa2"},
    {"workload.framework.kernel_efficiency", "0.5"},
    {"workload.framework.fp32_grads", "true"},
    {"parallelism.strategy", "model"},
    {"parallelism.sync", "asynchronous"},
    {"parallelism.algorithm", "tree"},
    {"parallelism.aggregation", "host"},
    {"parallelism.bucket_size", "1KB"},
    {"parallelism.overlap", "false"},
    {"parallelism.averaging_period", "2"},
    {"parallelism.averaging", "parameter_server"},
    {"parallelism.averaging_groups", "[{group_size: 2, period: 2}]"},
    {"parallelism.outer_optimizer", "{kind: nesterov, lr: 0.7, momentum: 0.9}"},
    {"parallelism.averaging_compression", "int8"},
    {"parallelism.streaming", "{fragments: 2}"},
    {"parallelism.post_local_steps", "2"},
    {"parallelism.parameter_server", "{servers: 2}"},
    {"parallelism.tensor_parallel", "1"},
    {"parallelism.pipeline_parallel", "4"},
    {"parallelism.micro_batch_size", "4"},
    {"parallelism.global_batch", "32"},
    {"parallelism.schedule", "gpipe"},
    {"parallelism.virtual_stages", "3"},
    {"parallelism.stage_replicas", "auto"},
    {"parallelism.stage_layers", "[1, 5]"},
    {"parallelism.partition", "even_layers"},
    {"parallelism.recompute", "full"},
    {"parallelism.sequence_parallel", "true"},
    {"parallelism.tp_comm_overlap", "true"},
    {"parallelism.dp_overlap", "true"},
    {"parallelism.context_parallel", "2"},
    {"parallelism.context_parallel_kind", "ulysses"},
    {"parallelism.expert_parallel", "2"},
    {"parallelism.optimizer", "sgd"},
    // Refused without cluster.node_groups (sim/node_groups_test.cc covers it).
    {"parallelism.balance_batch", "by_speed"},
    {"parallelism.zero_stage", "2"},
    {"parallelism.parameter_server.servers", "3"},
    {"parallelism.parameter_server.placement", "colocated"},
    {"parallelism.parameter_server.device", "V100-SXM2-32GB"},
    {"parallelism.parameter_server.replicas_to_aggregate", "3"},
    {"parallelism.parameter_server.payload", "parameters"},
    {"parallelism.parameter_server.local_aggregation", "device"},
    {"parallelism.parameter_server.variable_placement", "round_robin"},
    {"simgrid.config", "[\"network/model:LV08\"]"},
    {"simgrid.max_step_repeats", "3"},
    {"simgrid.log", "critical"},
    {"stragglers.slow_devices", "[{ranks: [0], factor: 2}]"},
    {"stragglers.noise.distribution", "{distribution: lognormal, sigma: 0.3}"},
    {"stragglers.noise.lognormal", "{distribution: lognormal, sigma: 0.3}"},
    {"stragglers.noise.exponential", "{distribution: exponential, mean: 1ms}"},
    {"stragglers.noise.stall", "{distribution: stall, probability: 0.5, delay: 10ms}"},
    {"stragglers.interference.period", "{period: 10ms, duration: 5ms, slowdown: 3, ranks: [0]}"},
    {"stragglers.interference.duration", "{period: 10ms, duration: 5ms, slowdown: 3, ranks: [0]}"},
    {"stragglers.interference.slowdown", "{period: 10ms, duration: 5ms, slowdown: 3, ranks: [0]}"},
    {"stragglers.interference.ranks", "{period: 10ms, duration: 5ms, slowdown: 3, ranks: [0]}"},
    // Node 1's NICs at a tenth of their bandwidth for the whole run.
    {"link_events", "[{at: 0s, node: 1, bandwidth: 0.1}]"},
    // Refused beside the bases' own workload and parallelism (each job gives its own).
    {"jobs", "[{name: a, nodes: 1, workload: {model: resnet50}}]"},
    {"failures.mtbf", "{mtbf: 1h, horizon: 10h}"},
    {"failures.scope", "{mtbf: 1h, horizon: 10h, scope: node}"},
    {"failures.checkpoint_interval", "{mtbf: 1h, horizon: 10h, checkpoint_interval: 5min}"},
    {"failures.checkpoint_cost", "{mtbf: 1h, horizon: 10h, checkpoint_cost: 1min}"},
    {"failures.restart_cost", "{mtbf: 1h, horizon: 10h, restart_cost: 10min}"},
    {"failures.horizon", "{mtbf: 1h, horizon: 20h}"},
};

// Where an alternative value goes: the key itself, or (stragglers' and
// failures' keys, whose mappings need their companions) the mapping.
std::string PathToSet(const std::string& key) {
  for (const char* whole : {"stragglers.noise", "stragglers.interference", "failures"})
    if (key.rfind(std::string(whole) + ".", 0) == 0) return whole;
  if (key == "cluster.network.topology") return "cluster.network";
  return key;
}

// Whether the test covers `key`: with an alternative value, or as a part of
// no prediction, or as a mapping whose keys it covers one by one.
bool HasCase(const std::string& key) {
  return kAlternatives.contains(key) || kNotPredictions.contains(key) || kSections.contains(key);
}

// Settings under which a key's effect shows, applied to the base and to
// the changed scenario alike ("strategy:key" or "key"; YAML paths and
// values): the host is the bottleneck for the optimizer's launches, a
// model of several gradient buckets for the overlap, several servers'
// shards for a parameter server's.
const std::multimap<std::string, std::pair<std::string, std::string>> kCompanions = {
    {"workload.framework.optimizer_loop", {"workload.framework.per_kernel", "2ms"}},
    {"workload.framework.optimizer_tensors_per_launch", {"workload.framework.per_kernel", "2ms"}},
    {"workload.framework.optimizer_kernels_per_tensor", {"workload.framework.per_kernel", "2ms"}},
    // A fused attention on a GPU whose default kernel (FlashAttention-3 on
    // Hopper) differs from the one named.
    {"workload.framework.attention", {"cluster.device", "H100-SXM"}},
    {"workload.framework.attention",
     {"workload.model", "{transformer: {layers: 2, hidden: 1024, heads: 8, sequence: 2048, "
                        "vocab: 1000, attention: flash}}"}},
    // Megatron's buckets of 40 M parameters: a stage of 100 M has several,
    // so that all but the last hide under the backward.
    {"parallelism.dp_overlap",
     {"workload.model", "{transformer: {layers: 8, hidden: 2048, heads: 16, sequence: 128, "
                        "vocab: 50000}}"}},
    {"data:parallelism.overlap", {"parallelism.bucket_size", "512KB"}},
    {"local_sgd:parallelism.overlap", {"parallelism.bucket_size", "512KB"}},
    {"local_sgd:parallelism.overlap", {"parallelism.averaging_period", "1"}},
    {"parameter_server:parallelism.overlap", {"parallelism.parameter_server.servers", "4"}},
    {"parameter_server:parallelism.parameter_server.variable_placement",
     {"parallelism.parameter_server.servers", "4"}},
    // Balanced and even partitions coincide for 6 uniform layers on 2
    // stages; 7 layers do not split evenly (even_layers then refuses).
    {"parallelism.partition",
     {"workload.model", "{transformer: {layers: 7, hidden: 256, heads: 4, sequence: 128, "
                        "vocab: 1000}}"}},
};

// The base scenario of each strategy: a small transformer on 2 nodes of 2
// V100s over 10 GbE, with PyTorch's host costs (so the framework's keys
// have something to change), per op lowered to 2 us so that the host does
// not hide the device's keys (the built-in 34 us makes this small model's
// steps host-bound).
std::map<std::string, std::string> Bases() {
  const std::string common =
      "cluster: {nodes: 2, devices_per_node: 2, device: V100-SXM2-16GB, intra_node_link: nvlink2,"
      " network: {link: 10GbE}}\n"
      "workload:\n  model: {transformer: {layers: 6, hidden: 256, heads: 4, sequence: 128,"
      " vocab: 1000}}\n  precision: fp16\n  iterations: 5\n  framework: {base: pytorch-eager, per_op: 2us}\n";
  return {
      {"data", common + "  batch_per_device: 8\nparallelism: {strategy: data}\n"},
      {"local_sgd", common + "  batch_per_device: 8\nparallelism: {strategy: local_sgd, "
                             "averaging_period: 4}\n"},
      {"parameter_server",
       common + "  batch_per_device: 8\nparallelism: {strategy: parameter_server, "
                "parameter_server: {servers: 1, device: cpu-host}}\n"},
      // 2 replicas of t = 2 x p = 2 (ZeRO and the all-reduce have replicas),
      // a large vocabulary (the head outweighs a layer: balanced partitions
      // differ from even ones).
      {"hybrid",
       "cluster: {nodes: 2, devices_per_node: 4, device: V100-SXM2-16GB, intra_node_link: nvlink2,"
       " network: {link: 10GbE}}\n"
       "workload:\n  model: {transformer: {layers: 6, hidden: 256, heads: 4, sequence: 128,"
       " vocab: 50000}}\n  precision: fp16\n  iterations: 5\n  framework: {base: pytorch-eager, per_op: 2us}\n"
       "parallelism: {strategy: hybrid, tensor_parallel: 2, pipeline_parallel: 2, "
       "micro_batch_size: 2, global_batch: 16}\n"},
      {"model", common + "  batch_per_device: 8\nparallelism: {strategy: model}\n"},
  };
}

// What a prediction says, as numbers.
std::vector<double> Figures(const Prediction& p) {
  const RunMetrics& m = p.metrics;
  std::vector<double> f = {m.step_time_s,
                           m.throughput_samples_per_s,
                           m.breakdown.compute_s,
                           m.breakdown.exposed_comm_s,
                           m.breakdown.idle_s,
                           m.breakdown.comm_s,
                           m.breakdown.host_wait_s,
                           m.breakdown.input_wait_s,
                           m.step_times.p50,
                           m.step_times.p99,
                           m.step_times.max,
                           p.comm.network_bytes_per_sample,
                           p.scaling.efficiency,
                           p.comm.averaging_round_s,
                           static_cast<double>(p.does_not_fit.size())};
  for (const MemoryBreakdown& b : p.memory.stages) f.push_back(b.Total());
  for (const double e : m.iteration_end_s) f.push_back(e);
  if (p.failures) f.push_back(p.failures->goodput);
  if (p.post_local) f.push_back(p.post_local->synchronous_step_s);
  if (p.async) f.push_back(p.async->global_steps_per_s);
  return f;
}

YAML::Node Set(YAML::Node root, const std::string& path, const std::string& value) {
  std::vector<std::string> parts;
  for (std::istringstream in(path); std::getline(in, parts.emplace_back(), '.');) {}
  parts.pop_back();
  YAML::Node node = root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!node[parts[i]] || !node[parts[i]].IsMap()) node[parts[i]] = YAML::Node(YAML::NodeType::Map);
    node.reset(node[parts[i]]);  // rebinds (operator= would overwrite the node)
  }
  node[parts.back()] = YAML::Load(value);
  return root;
}

// Either refuses (true) or predicts (the figures).
bool Predict(const std::string& yaml, std::vector<double>* figures, std::string* refusal) {
  try {
    const config::Scenario s = config::ParseScenario(yaml, "keys.yaml");
    *figures = Figures(Simulate(s));
    return false;
  } catch (const InfeasiblePlan& e) {
    *refusal = e.what();
    return true;
  } catch (const UserError& e) {
    *refusal = e.what();
    return true;
  }
}

TEST(ScenarioKeys, EveryDocumentedKeyHasACase) {
  const std::vector<std::string> keys = DocumentedKeys();
  ASSERT_GT(keys.size(), 80u);  // the tables were read
  for (const std::string& key : keys)
    EXPECT_TRUE(HasCase(key)) << "documented key " << key << " has no alternative value in scenario_keys_test.cc";
}

TEST(ScenarioKeys, EveryKeyChangesThePredictionOrIsRefused) {
  const std::vector<std::string> keys = DocumentedKeys();
  int refused = 0, predicted = 0;
  for (const auto& [strategy, text] : Bases()) {
    std::vector<double> base;
    std::string refusal;
    ASSERT_FALSE(Predict(text, &base, &refusal)) << strategy << ": " << refusal;
    for (const std::string& key : keys) {
      if (!kAlternatives.contains(key)) continue;  // no prediction, or a section
      if (kHardwareNotCrossed.contains(strategy + ":" + key) ||
          kHardwareNotCrossed.contains("*:" + key))
        continue;
      YAML::Node doc = YAML::Load(text);
      std::vector<double> before = base;
      bool companions = false;
      for (const std::string& k : {strategy + ":" + key, key}) {
        const auto [b, e] = kCompanions.equal_range(k);
        for (auto it = b; it != e; ++it) {
          doc = Set(doc, it->second.first, it->second.second);
          companions = true;
        }
      }
      if (companions) {
        YAML::Emitter with;
        with << doc;
        ASSERT_FALSE(Predict(with.c_str(), &before, &refusal))
            << strategy << ", companions of " << key << ": " << refusal;
      }
      std::string alternative = kAlternatives.at(key);
      if (key == "parallelism.strategy" && strategy == "model") alternative = "data";
      YAML::Emitter out;
      out << Set(doc, PathToSet(key), alternative);
      std::vector<double> changed;
      if (Predict(out.c_str(), &changed, &refusal)) {  // refused
        ++refused;
        continue;
      }
      ++predicted;
      EXPECT_NE(changed, before) << "strategy " << strategy << ": " << key << ": "
                                 << alternative << " changes nothing\n"
                               << out.c_str();
    }
  }
  // Most changes are predictions, not refusals (else the property says
  // little): 268 of 448 cases when written.
  EXPECT_GT(predicted, refused);
}

}  // namespace
}  // namespace dtsim::sim
