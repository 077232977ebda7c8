#include "sim/trace_simulation.h"

#include <algorithm>

#include "common/error.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/plan_costs.h"
#include "sim/engine/simgrid_engine.h"
#include "sim/simulator.h"

namespace dtsim::sim {

TracePrediction SimulateTracePlan(const config::Scenario& s, plan::Plan plan) {
  const int devices = s.cluster.num_devices();
  if (plan.num_ranks() != devices) {
    throw UserError(s.Where("cluster.nodes"),
                    "the trace has " + std::to_string(plan.num_ranks()) +
                        " ranks and the cluster " + std::to_string(devices) + " devices",
                    "give a cluster of one device per rank of the trace");
  }
  for (const plan::Task& t : plan.tasks()) {
    DTSIM_CHECK(t.seconds >= 0 || t.kind == plan::TaskKind::kCollective ||
                    t.kind == plan::TaskKind::kSend,
                "a trace plan's compute tasks carry their durations");
  }
  // Ranks sit on the cluster's nodes in order, whatever the import assumed.
  const int per_node = std::max(1, s.cluster.devices_per_node);
  for (plan::RankId r = 0; r < plan.num_ranks(); ++r) {
    plan.ranks[static_cast<std::size_t>(r)] = {r / per_node, r % per_node};
  }
  const hw::HardwareCatalog catalog = config::ScenarioCatalog(s);
  const hw::DeviceSpec* device = catalog.FindDevice(s.cluster.device);
  if (device == nullptr) throw UserError("unknown device '" + s.cluster.device + "'");

  TracePrediction p;
  p.network = MakeNetworkSpec(s, catalog);
  p.engine_name = s.engine;
  Network network(p.network);
  // Tasks with durations need no cost model; PriceTasks takes one per rank.
  CostModelOptions cost_options;
  cost_options.kernel_model = false;
  const std::vector<CostModel> cost_models{CostModel(*device, s.workload.precision, cost_options)};
  const std::vector<int> cost_of_rank(static_cast<std::size_t>(plan.num_ranks()), 0);
  p.costs = PriceTasks(plan, models::ModelGraph(), cost_models, cost_of_rank, network);
  if (s.engine == "simgrid") {
    SimgridOptions options;
    options.config = s.simgrid.config;
    options.max_step_repeats = s.simgrid.max_step_repeats;
    options.log_threshold = s.simgrid.log_threshold;
    p.engine = RunSimgridEngine(plan, p.costs, p.network, options);
  } else {
    p.engine = RunEngine(plan, p.costs, nullptr);
  }
  p.metrics = ComputeMetrics(plan, p.engine);
  for (std::size_t i = 0; i < plan.num_tasks(); ++i) {
    if (plan.tasks()[i].stream == plan::StreamKind::kCompute) {
      p.compute_s += NsToSeconds(p.costs.task_ns[i]);
    }
  }
  for (SimTime ns : p.costs.collective_ns) p.collective_s += NsToSeconds(ns);
  p.plan = std::move(plan);
  return p;
}

}  // namespace dtsim::sim
