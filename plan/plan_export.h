// Views of a plan for people and tools.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "models/graph.h"
#include "plan/plan.h"

namespace dtsim::plan {

// Placement of ops on devices, in the spirit of TensorFlow's
// log_device_placement: one line per op naming the devices that hold it
// ("/node:0/device:1"), then one line per rank with its task counts.
// Ranks beyond `max_ranks` are summarized.
std::string FormatPlacement(const Plan& plan, const models::ModelGraph& graph, int max_ranks = 16);

// Streams the whole task graph as JSON: ranks, groups, collectives and every
// task with its dependencies.
void WritePlanJson(std::ostream& out, const Plan& plan, const models::ModelGraph& graph);

}  // namespace dtsim::plan
