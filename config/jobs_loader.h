// The `jobs:` section of a scenario (docs/scenario.md, "Several jobs"):
// jobs, each with its own model, parallelism and start time, placed on the
// scenario's one cluster.
//
//   jobs:
//     - name: a
//       start: 0 s              # optional, default 0
//       nodes: 8                # the next 8 free nodes, in order
//       workload: {...}         # as a scenario's workload
//       parallelism: {...}      # as a scenario's parallelism (optional)
//     - name: b
//       start: 2 s
//       nodes: [2, 3, 6, 7]     # or these nodes, in this order
//       workload: {...}
#pragma once

#include <vector>

#include "common/yaml_reader.h"
#include "config/scenario.h"

namespace dtsim::config {

// Reads `jobs` (the value of the top-level key) of the scenario document
// `root`, whose other top-level keys `shared` already holds. Each job's
// scenario is the document with the job's workload and parallelism and the
// cluster cut to the job's nodes, loaded as any scenario (same checks, same
// file:line:column). Throws UserError at the offending key on: an empty
// list, a duplicate or missing name, a negative start, nodes out of the
// cluster, taken by an earlier job, or more than the free ones, and on
// top-level keys that describe one job (workload, parallelism, stragglers,
// failures, link_events) or an engine other than simgrid.
std::vector<Job> ReadJobs(const YamlValue& jobs, const YamlMap& root, const Scenario& shared,
                          bool check_plan_shape);

}  // namespace dtsim::config
