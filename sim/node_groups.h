// Mixed hardware in one cluster (config::ClusterConfig::node_groups): nodes
// in named groups, each with its own device, intra-node link and NICs.
//
// Placement: ranks are numbered group by group, node by node, so group g
// holds the nodes [first_node, first_node + nodes) and the ranks
// [first_rank, first_rank + nodes x devices_per_node). Each rank is priced
// on its group's device, each node's links are its group's, and every
// worker is simulated (no symmetric shortcut). Synchronous data
// parallelism then waits for the slowest group at every all-reduce.
//
// Balancing (parallelism.balance_batch: by_speed): the global batch N x B
// (N devices, B = workload.batch_per_device) is shared in proportion to
// each device's speed alone, v_g = B / t_g with t_g the step time of data
// parallelism on one device of group g at batch B:
//   x_r = N B v_g(r) / sum_r' v_g(r'),
// rounded down, the samples left over given one each to the ranks with the
// largest fractions (in rank order on ties), so the shares add up to N B.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.h"
#include "hw/catalog.h"
#include "models/graph.h"
#include "sim/cost/cost_model.h"
#include "sim/memory.h"
#include "sim/metrics.h"
#include "sim/network/network.h"

namespace dtsim::sim {

// One node group as simulated, for the report.
struct GroupFigures {
  std::string name;
  std::string device;
  int first_node = 0, nodes = 0;
  int first_rank = 0, ranks = 0;
  int min_batch_per_device = 0, max_batch_per_device = 0;  // samples per step
  std::int64_t samples_per_step = 0;                       // of all its devices
  // Its device alone: data parallelism on one device at
  // workload.batch_per_device (the speed balancing uses), seconds.
  double single_device_step_s = 0;
  double peak_flop_per_s = 0;  // its device's dense peak at the workload's precision
  // Per step, mean over its ranks (sim/metrics.h Breakdown): compute,
  // communication not under compute, and waiting (for other ranks).
  double compute_s = 0;
  double exposed_comm_s = 0;
  double idle_s = 0;
  MemoryBreakdown memory;     // per device at its largest batch (sim/memory.h)
  double memory_bytes = 0;    // memory.Total()
  double capacity_bytes = 0;  // its device's memory
  std::string does_not_fit;   // "" when memory_bytes fits, else why (sim/memory.h DoesNotFit)
};

struct Prediction;

// Whether the scenario's cluster has node groups.
bool IsMixed(const config::Scenario& s);

// The group of each worker rank. REQUIRES: IsMixed(s).
std::vector<int> GroupOfRank(const config::ClusterConfig& cluster);

// Refuses what mixed clusters are not simulated with, as a UserError at
// cluster.node_groups: pipelined strategies (hybrid, model: their stages
// and tensor groups are planned for one device). REQUIRES: IsMixed(s).
void CheckNodeGroups(const config::Scenario& s);

// Each group's device, in group order (REQUIRES: IsMixed(s)); the
// scenario's one device otherwise. Throws UserError for an unknown name.
std::vector<const hw::DeviceSpec*> WorkerDevices(const config::Scenario& s,
                                                 const hw::HardwareCatalog& catalog);

// Fills `spec`'s per-node links from the groups (each group's intra-node
// link and NICs, with the scenario's transports as MakeNetworkSpec applies
// them). REQUIRES: IsMixed(s).
void SetNodeGroupLinks(const config::Scenario& s, const hw::HardwareCatalog& catalog,
                       NetworkSpec* spec);

// One cost model per group, in group order, then one for `server` (the
// parameter servers' device). REQUIRES: IsMixed(s).
std::vector<CostModel> NodeGroupCostModels(const config::Scenario& s,
                                           const hw::HardwareCatalog& catalog,
                                           const CostModelOptions& options,
                                           const hw::DeviceSpec& server);

// Per group, the step time of its device alone (see GroupFigures), from a
// simulation of that one device. `graph` is the workload's model.
// REQUIRES: IsMixed(s).
std::vector<double> GroupSingleDeviceSteps(const config::Scenario& s,
                                           const models::ModelGraph& graph);

// Each rank's batch under parallelism.balance_batch (see the file
// comment); empty when the batch is even. Throws UserError when a device
// would get less than one sample.
std::vector<int> RankBatches(const config::Scenario& s, const std::vector<double>& group_steps);

// The report's per-group figures of a simulated run: `metrics` of a plan
// with every worker materialized, `batches` as RankBatches gave them.
std::vector<GroupFigures> ComputeGroupFigures(const config::Scenario& s,
                                              const hw::HardwareCatalog& catalog,
                                              const models::ModelGraph& graph,
                                              const RunMetrics& metrics,
                                              const std::vector<int>& batches,
                                              const std::vector<double>& group_steps);

// Sets `p`'s per-group figures (Prediction::groups) and, for the mixed
// cluster, its scaling reference (each device alone: efficiency =
// throughput / sum over devices of batch_per_device / its group's
// single_device_step_s), its memory (the group whose devices' peak is the
// largest share of their capacity) and does_not_fit (the first group whose
// devices do not hold their batch), from a simulated run of `s` (p.metrics, every
// worker materialized). REQUIRES: IsMixed(s).
void SetNodeGroupFigures(const config::Scenario& s, const hw::HardwareCatalog& catalog,
                         const models::ModelGraph& graph, const std::vector<int>& batches,
                         const std::vector<double>& group_steps, Prediction* p);

// The report's parts (sim/node_groups_report.cc): report.json's
// "node_groups" {placement, balance_batch, groups: [{name, device,
// first_node, nodes, first_rank, ranks, batch_per_device_min,
// batch_per_device_max, samples_per_step, single_device_step_s, compute_s,
// exposed_comm_s, idle_s, memory_bytes, capacity_bytes}]}; the text
// summary's lines; "64 x A100-SXM4-80GB + 64 x H100-SXM".
nlohmann::ordered_json NodeGroupsJson(const config::Scenario& s,
                                      const std::vector<GroupFigures>& groups);
std::string NodeGroupsText(const config::Scenario& s, const std::vector<GroupFigures>& groups);
std::string NodeGroupsDevices(const std::vector<GroupFigures>& groups);

}  // namespace dtsim::sim
