#include "sim/node_groups.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"
#include "config/transport.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

const hw::LinkSpec& FindLink(const hw::HardwareCatalog& catalog, const std::string& name) {
  const hw::LinkSpec* link = catalog.FindLink(name);
  if (link == nullptr) throw UserError("unknown link '" + name + "'");
  return *link;
}

}  // namespace

bool IsMixed(const config::Scenario& s) { return !s.cluster.node_groups.empty(); }

std::vector<int> GroupOfRank(const config::ClusterConfig& c) {
  DTSIM_CHECK(!c.node_groups.empty(), "a cluster without node groups");
  std::vector<int> group;
  group.reserve(static_cast<std::size_t>(c.num_devices()));
  for (std::size_t g = 0; g < c.node_groups.size(); ++g)
    for (int r = 0; r < c.node_groups[g].nodes * c.node_groups[g].devices_per_node; ++r)
      group.push_back(static_cast<int>(g));
  DTSIM_CHECK(static_cast<int>(group.size()) == c.num_devices(), "groups do not add up to the cluster");
  return group;
}

void CheckNodeGroups(const config::Scenario& s) {
  const config::Strategy st = s.parallelism.strategy;
  if (config::IsPipelined(s))
    throw UserError(s.Where("cluster.node_groups"),
                    std::string("strategy '") + config::StrategyName(st) +
                        "' on node groups is not simulated: its pipeline stages and tensor "
                        "groups are planned for one device",
                    "use strategy data, local_sgd or parameter_server on a mixed cluster, or "
                    "one device for the whole cluster");
}

std::vector<const hw::DeviceSpec*> WorkerDevices(const config::Scenario& s,
                                                 const hw::HardwareCatalog& catalog) {
  std::vector<std::string> names;
  if (IsMixed(s)) {
    for (const config::NodeGroup& g : s.cluster.node_groups) names.push_back(g.device);
  } else {
    names.push_back(s.cluster.device);
  }
  std::vector<const hw::DeviceSpec*> devices;
  for (const std::string& name : names) {
    const hw::DeviceSpec* d = catalog.FindDevice(name);
    if (d == nullptr) throw UserError("unknown device '" + name + "'");
    devices.push_back(d);
  }
  return devices;
}

void SetNodeGroupLinks(const config::Scenario& s, const hw::HardwareCatalog& catalog,
                       NetworkSpec* spec) {
  const config::ClusterConfig& c = s.cluster;
  for (const config::NodeGroup& g : c.node_groups) {
    const hw::LinkSpec& intra = FindLink(catalog, g.intra_node_link);
    const hw::LinkSpec& nic = FindLink(catalog, g.link);
    // As MakeNetworkSpec folds the transports into the cluster's links.
    const config::EffectiveLink in_node = config::ApplyTransport(
        intra.bw_bytes_per_s, intra.latency_s, c.network.intra_node_transport);
    const config::EffectiveLink between =
        config::ApplyTransport(nic.bw_bytes_per_s * g.nics_per_node, nic.latency_s,
                               c.network.transport, g.devices_per_node);
    for (int n = 0; n < g.nodes; ++n) {
      spec->node_intra_bw_bytes_per_s.push_back(in_node.bw_bytes_per_s);
      spec->node_intra_latency_s.push_back(in_node.latency_s);
      spec->node_nic_bw_bytes_per_s.push_back(between.bw_bytes_per_s);
      spec->node_net_latency_s.push_back(between.latency_s);
    }
  }
}

std::vector<CostModel> NodeGroupCostModels(const config::Scenario& s,
                                           const hw::HardwareCatalog& catalog,
                                           const CostModelOptions& options,
                                           const hw::DeviceSpec& server) {
  std::vector<CostModel> models;
  for (const hw::DeviceSpec* d : WorkerDevices(s, catalog))
    models.emplace_back(*d, s.workload.precision, options);
  models.emplace_back(server, s.workload.precision, options);
  return models;
}

std::vector<double> GroupSingleDeviceSteps(const config::Scenario& s,
                                           const models::ModelGraph& graph) {
  std::vector<double> steps;
  for (const config::NodeGroup& g : s.cluster.node_groups) {
    config::Scenario one = s;
    one.cluster.node_groups.clear();
    one.cluster.nodes = 1;
    one.cluster.devices_per_node = 1;
    one.cluster.device = g.device;
    one.cluster.intra_node_link = g.intra_node_link;
    one.cluster.network.link = g.link;
    one.cluster.network.nics_per_node = g.nics_per_node;
    one.engine = "analytic";
    one.stragglers = {};
    one.failures = {};
    one.link_events.clear();
    one.workload.iterations = 1;
    one.parallelism.strategy = config::Strategy::kData;
    one.parallelism.balance_batch = config::BatchBalance::kEven;
    one.parallelism.post_local_steps = 0;
    one.parallelism.averaging_groups.clear();
    SimulateOptions options;
    options.graph = &graph;
    steps.push_back(Simulate(one, options).metrics.step_time_s);
  }
  return steps;
}

std::vector<int> RankBatches(const config::Scenario& s, const std::vector<double>& group_steps) {
  if (s.parallelism.balance_batch != config::BatchBalance::kBySpeed) return {};
  const std::vector<int> group = GroupOfRank(s.cluster);
  const double b = s.workload.batch_per_device;
  const auto n = static_cast<std::int64_t>(group.size());
  // Speed of each rank's device alone, samples/s.
  std::vector<double> speed(group.size());
  double total_speed = 0;
  for (std::size_t r = 0; r < group.size(); ++r) {
    const double t = group_steps[static_cast<std::size_t>(group[r])];
    DTSIM_CHECK(t > 0, "a device alone must take time");
    speed[r] = b / t;
    total_speed += speed[r];
  }
  const std::int64_t global = n * s.workload.batch_per_device;
  std::vector<int> batch(group.size());
  std::vector<double> fraction(group.size());
  std::int64_t given = 0;
  for (std::size_t r = 0; r < group.size(); ++r) {
    const double share = static_cast<double>(global) * speed[r] / total_speed;
    batch[r] = static_cast<int>(std::floor(share));
    fraction[r] = share - batch[r];
    given += batch[r];
  }
  std::vector<std::size_t> order(group.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return fraction[x] > fraction[y]; });
  for (std::size_t i = 0; given < global; ++i, ++given) ++batch[order[i % order.size()]];
  for (std::size_t r = 0; r < group.size(); ++r)
    if (batch[r] < 1)
      throw UserError(s.Where("parallelism.balance_batch"),
                      "balance_batch: by_speed gives the devices of node group '" +
                          s.cluster.node_groups[static_cast<std::size_t>(group[r])].name +
                          "' less than one sample per step",
                      "raise workload.batch_per_device, or use balance_batch: even");
  return batch;
}

std::vector<GroupFigures> ComputeGroupFigures(const config::Scenario& s,
                                              const hw::HardwareCatalog& catalog,
                                              const models::ModelGraph& graph,
                                              const RunMetrics& metrics,
                                              const std::vector<int>& batches,
                                              const std::vector<double>& group_steps) {
  const config::ClusterConfig& c = s.cluster;
  const std::vector<const hw::DeviceSpec*> devices = WorkerDevices(s, catalog);
  std::vector<GroupFigures> out;
  int node = 0, rank = 0;
  for (std::size_t i = 0; i < c.node_groups.size(); ++i) {
    const config::NodeGroup& g = c.node_groups[i];
    GroupFigures f;
    f.name = g.name;
    f.device = devices[i]->name;
    f.first_node = node;
    f.nodes = g.nodes;
    f.first_rank = rank;
    f.ranks = g.nodes * g.devices_per_node;
    f.single_device_step_s = group_steps[i];
    f.peak_flop_per_s = devices[i]->PeakFlopRate(
        s.workload.precision == hw::Precision::kFp8 ? hw::Precision::kBf16 : s.workload.precision);
    f.min_batch_per_device = f.max_batch_per_device = s.workload.batch_per_device;
    if (!batches.empty()) {
      const auto first = batches.begin() + rank, last = first + f.ranks;
      f.min_batch_per_device = *std::min_element(first, last);
      f.max_batch_per_device = *std::max_element(first, last);
      f.samples_per_step = std::accumulate(first, last, std::int64_t{0});
    } else {
      f.samples_per_step = std::int64_t{f.ranks} * s.workload.batch_per_device;
    }
    int counted = 0;
    for (std::size_t k = 0; k < metrics.ranks.size(); ++k) {
      const plan::RankId r = metrics.ranks[k];
      if (r < rank || r >= rank + f.ranks) continue;
      f.compute_s += metrics.per_rank[k].compute_s;
      f.exposed_comm_s += metrics.per_rank[k].exposed_comm_s;
      f.idle_s += metrics.per_rank[k].idle_s;
      ++counted;
    }
    if (counted > 0) {
      f.compute_s /= counted;
      f.exposed_comm_s /= counted;
      f.idle_s /= counted;
    }
    // As the simulator's data-parallel worker (Prediction::memory), at the
    // group's largest batch.
    const auto& par = s.parallelism;
    MemoryInputs in;
    in.graph = &graph;
    in.optimizer = par.optimizer;
    in.mixed_precision = hw::IsMixedPrecision(s.workload.precision);
    in.fp32_grads = s.workload.framework.fp32_grads;
    in.fp8 = s.workload.precision == hw::Precision::kFp8;
    in.recompute = par.recompute;
    in.recompute_selective = par.recompute_selective;
    for (models::OpId v = 0; v < graph.num_ops(); ++v) in.ops.push_back(v);
    const bool servers =
        par.strategy == config::Strategy::kParameterServer ||
        (par.strategy == config::Strategy::kLocalSgd &&
         par.averaging == config::AveragingTransport::kParameterServer);
    if (par.strategy == config::Strategy::kLocalSgd && par.outer_optimizer.enabled)
      in.extra_state_bytes_per_param = 8;
    in.data_parallel = servers ? 1 : c.num_devices();
    in.zero_stage = servers ? 0 : par.zero_stage;
    in.micro_batch_size = f.max_batch_per_device;
    in.micro_batches_in_flight = 1;
    f.memory = DeviceMemory(in);
    f.memory_bytes = f.memory.Total();
    f.capacity_bytes = devices[i]->memory_bytes;
    f.does_not_fit = DoesNotFit(rank, f.memory, f.capacity_bytes);
    out.push_back(std::move(f));
    node += g.nodes;
    rank += out.back().ranks;
  }
  return out;
}

void SetNodeGroupFigures(const config::Scenario& s, const hw::HardwareCatalog& catalog,
                         const models::ModelGraph& graph, const std::vector<int>& batches,
                         const std::vector<double>& group_steps, Prediction* p) {
  p->groups = ComputeGroupFigures(s, catalog, graph, p->metrics, batches, group_steps);
  double alone = 0;  // samples/s of every device alone, summed
  for (const GroupFigures& g : p->groups) alone += g.ranks * s.workload.batch_per_device / g.single_device_step_s;
  const int workers = s.cluster.num_devices();
  p->scaling.single_device_throughput_samples_per_s = alone / workers;
  p->scaling.efficiency = alone > 0 ? p->metrics.throughput_samples_per_s / alone : 0;
  p->scaling.reference = "each device alone, data parallel alone, batch " +
                         std::to_string(s.workload.batch_per_device) +
                         " per step (single device: the mean over the node groups' devices)";
  const GroupFigures* fullest = &p->groups.front();
  for (const GroupFigures& g : p->groups)
    if (g.memory_bytes / g.capacity_bytes > fullest->memory_bytes / fullest->capacity_bytes)
      fullest = &g;
  // Mixed clusters run data-parallel workers only (CheckNodeGroups): one
  // entry, the first group's at batch_per_device until here.
  if (p->memory.stages.size() == 1) {
    p->does_not_fit.clear();
    p->memory.stages[0] = fullest->memory;
    p->memory.stage_rank[0] = fullest->first_rank;
    p->memory.capacity_bytes = fullest->capacity_bytes;
  }
  for (const GroupFigures& g : p->groups)
    if (p->does_not_fit.empty() && !g.does_not_fit.empty())
      p->does_not_fit = g.does_not_fit + " (node group '" + g.name + "')";
}

}  // namespace dtsim::sim
