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

// Graphviz DOT of the model with each op coloured by the pipeline stage (or
// device group) that holds it, as TensorBoard's colour-by-device view does:
// ops held by the same set of ranks share a colour; the legend names them.
void WriteDot(std::ostream& out, const Plan& plan, const models::ModelGraph& graph);

// Streams the whole task graph as JSON: ranks, groups, collectives and every
// task with its dependencies.
void WritePlanJson(std::ostream& out, const Plan& plan, const models::ModelGraph& graph);

// A task's name in timelines: "fwd layer3.attn.ln", "bwd conv1 .. pool1 (mb 2)",
// "all_reduce bucket 4", "send to 3", "optimizer".
std::string TaskLabel(const Plan& plan, const models::ModelGraph& graph, const Task& task);

}  // namespace dtsim::plan
