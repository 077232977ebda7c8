// Which scenario keys a scenario's strategy (and engine) actually reads.
//
// A key that the chosen strategy does not use would silently have no
// effect: `workload.batch_per_device` under `hybrid` (its batch is
// micro_batch_size x micro-batches x replicas), `pipeline_parallel` under
// `data`. The loader reports such a key as an error at the key, naming the
// strategy (config::ParseScenarioNode); a sweep, whose points may have
// different strategies, ignores it for the points that do not use it
// (study/sweep.h, docs/scenario.md "Sweeps").
#pragma once

#include <string>
#include <string_view>

#include "config/scenario.h"

namespace dtsim::config {

// "" when `s` uses the key `path` ("workload.batch_per_device",
// "parallelism.pipeline_parallel", "simgrid"), else why not, as a sentence
// that names the strategy or engine:
//   "strategy 'data' does not use parallelism.pipeline_parallel (only
//    hybrid and model pipelines have stages)".
// Keys this function does not know are used by every scenario.
std::string UnusedKeyReason(const Scenario& s, std::string_view path);

}  // namespace dtsim::config
