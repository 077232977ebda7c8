// Keys of a sweep that some points' strategies do not use.
//
// Each point of a sweep is loaded on its own (config::ParseScenarioNode),
// and points may differ in strategy: a sweep over strategy [data, hybrid] x
// pipeline_parallel [1, 2, 4] gives data points that ignore
// pipeline_parallel. The rule (docs/scenario.md, "Sweeps"):
//  - a key that no point uses is an error at the key, as `dtsim run`
//    reports it;
//  - a key that only some points use is ignored by the others;
//  - a point whose strategy does not use an axis is simulated once: the
//    points that differ from it only in such axes' values would repeat it
//    and are left out; the one kept (the axis's first value) has the axis
//    marked unused (SweepPoint::unused_axes), and its sweep.csv cell for
//    that axis is empty.
#pragma once

#include <vector>

#include "config/scenario.h"
#include "study/sweep.h"

namespace dtsim::study {

// `unused[i]`: the keys point i of `sweep` does not use (as
// ParseScenarioNode reported them; empty for a point that did not load).
// `all_loaded`: every point loaded (a point whose plan is infeasible at load
// tells nothing about its keys). Applies the rule above to `sweep->points`.
// Throws UserError at the key for a key no point uses.
void ApplyUnusedKeys(const std::vector<std::vector<config::UnusedKey>>& unused, bool all_loaded,
                     Sweep* sweep);

}  // namespace dtsim::study
