// From a scenario's hybrid (tensor x pipeline x data) or model parallelism
// to the options of plan::BuildHybridPlan.
#pragma once

#include <string>

#include "config/scenario.h"
#include "models/graph.h"
#include "plan/hybrid.h"
#include "sim/cost/cost_model.h"

namespace dtsim::sim {

// Hybrid and model parallelism: the options of plan::BuildHybridPlan and the
// model graph of one tensor rank (the plan refers to its ops).
struct HybridSetup {
  plan::HybridOptions options;
  models::ModelGraph shard;
  std::string partition_note;  // how the chunks were chosen (balanced partitions)
};
// Derives micro-batches, chunks (partition) and the tensor shard from the
// scenario. Throws InfeasiblePlan, at the parallelism key (Scenario::Where),
// for splits that do not divide: t x p and the devices, the global batch and
// the micro-batches, t and the heads, hidden size or MLP width (or a model
// tensor parallelism does not split), the layer units and the chunks; and
// UserError for stage_layers that do not describe the model.
// Forward and backward (input and weight gradients) of ops [begin, end) of
// `graph` for `batch` samples on one device: what partitions balance.
double TrainingSeconds(const CostModel& cost_model, const models::ModelGraph& graph,
                       models::OpId begin, models::OpId end, int batch);

// `partition_micro_batches` > 0: balance the chunks within memory as if each
// replica ran that many micro-batches per step (the micro-batches a
// schedule keeps in flight, and so the partition, depend on it), while
// HybridSetup::options keeps the scenario's own count. 0 = the scenario's.
HybridSetup MakeHybridSetup(const config::Scenario& scenario, const models::ModelGraph& graph,
                            const CostModel& cost_model, int partition_micro_batches = 0);

}  // namespace dtsim::sim
