// Prices every task of a plan: compute tasks with each rank's cost model,
// collectives with the network model.
#pragma once

#include <set>
#include <vector>

#include "models/graph.h"
#include "plan/plan.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/task_costs.h"
#include "sim/network/network.h"

namespace dtsim::sim {

// Seconds collective `c` of `plan` takes on `network`: the network's
// collective_latency_s plus its schedule's time (on the hosts for via_host),
// or NCCL's protocols' time when the network prices them.
double PricedCollectiveSeconds(const plan::Plan& plan, const plan::Collective& c,
                               Network& network);

// `cost_of_rank[r]` indexes `cost_models` for rank r. A collective costs
// the network's collective_latency_s plus its schedule's time; collectives
// with the same algorithm, group and size are priced once.
// Ops whose kind is in `fused` and that a framework fuses into their
// producer (sim/cost/host_costs.h, IsFusedOp) are priced as FusedOp.
TaskCosts PriceTasks(const plan::Plan& plan, const models::ModelGraph& graph,
                     const std::vector<CostModel>& cost_models,
                     const std::vector<int>& cost_of_rank, Network& network,
                     const std::set<models::OpKind>& fused = {});

}  // namespace dtsim::sim
