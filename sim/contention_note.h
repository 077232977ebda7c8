// Where the analytic engine's answer is an approximation the user should
// know about: it prices each collective alone, so collectives that run at
// once over the same node's links do not slow each other down there.
#pragma once

#include <string>

#include "config/scenario.h"
#include "plan/plan.h"

namespace dtsim::sim {

// "" unless `s` runs on the analytic engine and `plan` holds collectives
// whose flows can meet on a node's links: one that spans nodes and stands
// for other copies (Collective::copies > 1, their groups on the same
// nodes), or two of different groups that span nodes and share one. Then
// the note says so and names the engine that models it.
std::string ContentionNote(const config::Scenario& s, const plan::Plan& plan);

}  // namespace dtsim::sim
