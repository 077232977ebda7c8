#include "sim/simulator.h"

#include <chrono>

#include "common/error.h"
#include "plan/data_parallel.h"
#include "sim/cost_model.h"
#include "sim/plan_costs.h"

namespace dtsim::sim {
namespace {

CostModelOptions MakeCostOptions(const config::WorkloadConfig& w) {
  CostModelOptions o;
  o.compute_efficiency = w.compute_efficiency;
  if (w.memory_efficiency) o.memory_efficiency = *w.memory_efficiency;
  if (w.kernel_launch_s) o.kernel_launch_s = *w.kernel_launch_s;
  if (w.optimizer_bytes_per_param) o.optimizer_bytes_per_param = *w.optimizer_bytes_per_param;
  return o;
}

// Simulates `plan` on identical devices and returns (engine result, costs).
std::pair<EngineResult, TaskCosts> Execute(const plan::Plan& plan, const models::ModelGraph& graph,
                                           const CostModel& cost_model, const NetworkSpec& spec) {
  Network network(spec);
  std::vector<CostModel> models{cost_model};
  std::vector<int> cost_of_rank(static_cast<std::size_t>(plan.num_ranks()), 0);
  TaskCosts costs = PriceTasks(plan, graph, models, cost_of_rank, network);
  EngineResult result = RunEngine(plan, costs);
  return {std::move(result), std::move(costs)};
}

}  // namespace

NetworkSpec MakeNetworkSpec(const config::Scenario& s, const hw::HardwareCatalog& catalog) {
  const auto& c = s.cluster;
  const hw::LinkSpec* intra = catalog.FindLink(c.intra_node_link);
  const hw::LinkSpec* nic = catalog.FindLink(c.network.link);
  if (intra == nullptr) throw UserError("unknown intra-node link '" + c.intra_node_link + "'");
  if (nic == nullptr) throw UserError("unknown network link '" + c.network.link + "'");
  NetworkSpec n;
  n.nodes = c.nodes;
  n.devices_per_node = c.devices_per_node;
  n.intra_bw_bytes_per_s = intra->bw_bytes_per_s;
  n.intra_latency_s = intra->latency_s;
  n.nic_bw_bytes_per_s = nic->bw_bytes_per_s * c.network.nics_per_node;
  n.net_latency_s = nic->latency_s;
  n.fat_tree = c.network.topology == config::Topology::kFatTree;
  n.nodes_per_leaf = c.network.nodes_per_leaf;
  n.oversubscription = c.network.oversubscription;
  n.spine_latency_s = c.network.spine_latency_s;
  return n;
}

plan::Plan MakePlan(const config::Scenario& s, const models::ModelGraph& graph) {
  plan::DataParallelOptions o;
  o.batch_per_rank = s.workload.batch_per_device;
  o.iterations = s.workload.iterations;
  o.bucket_bytes = s.parallelism.bucket_bytes;
  o.overlap = s.parallelism.overlap;
  o.algorithm = s.parallelism.algorithm;
  return plan::BuildDataParallelPlan(graph, {s.cluster.nodes, s.cluster.devices_per_node}, o);
}

Prediction Simulate(const config::Scenario& s, const SimulateOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const hw::HardwareCatalog catalog = config::ScenarioCatalog(s);
  const hw::DeviceSpec* device = catalog.FindDevice(s.cluster.device);
  if (device == nullptr) throw UserError("unknown device '" + s.cluster.device + "'");

  Prediction p;
  p.graph = options.graph ? *options.graph : config::BuildWorkloadModel(s);
  p.device = *device;
  p.network = MakeNetworkSpec(s, catalog);
  p.plan = MakePlan(s, p.graph);
  const CostModel cost_model(*device, s.workload.precision, MakeCostOptions(s.workload));
  std::tie(p.engine, p.costs) = Execute(p.plan, p.graph, cost_model, p.network);
  p.metrics = ComputeMetrics(p.plan, p.engine);

  // Baseline: the same per-device work on a single device.
  config::Scenario one = s;
  one.cluster.nodes = 1;
  one.cluster.devices_per_node = 1;
  NetworkSpec one_net = p.network;
  one_net.nodes = one_net.devices_per_node = 1;
  const plan::Plan one_plan = MakePlan(one, p.graph);
  const auto one_run = Execute(one_plan, p.graph, cost_model, one_net);
  p.single_device_throughput_samples_per_s =
      ComputeMetrics(one_plan, one_run.first).throughput_samples_per_s;
  const int devices = s.cluster.num_devices();
  if (p.single_device_throughput_samples_per_s > 0)
    p.scaling_efficiency = p.metrics.throughput_samples_per_s /
                           (devices * p.single_device_throughput_samples_per_s);
  p.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return p;
}

}  // namespace dtsim::sim
