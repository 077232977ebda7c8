// The scenario constants `dtsim fit` and `dtsim validate vtrain --fit` can
// fit: the host-side ones no datasheet gives (config/framework.h).
//
//   per_op, per_kernel, per_collective, per_step, graph_launch, cycle_time
//       workload.framework's keys (also written framework.per_op, ...)
//   input.per_sample
//       workload.input's per-sample cost
//   transport.per_message, transport.efficiency,
//   intra_node_transport.per_message, intra_node_transport.efficiency
//       cluster.network's transports (config/transport.h): between nodes
//       and within them
//
// A time is fitted within [1 ns, 1 s] from the scenario's value (1 us when
// that is 0); an efficiency within [0.05, 1]. Each constant also has a
// narrower plausible range (PlausibleRange in fit_constants.cc, with its
// source; docs/fit.md): a fitted value outside it is flagged in the report.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.h"
#include "validation/fit.h"

namespace dtsim::validation {

// The names that can be fitted, in the order above.
const std::vector<std::string>& FittableConstants();

// "per_kernel,per_op" -> the constants, initial values from `base`.
// Throws UserError for an unknown or repeated name (listing the known ones).
std::vector<FitConstant> ParseFitConstants(const std::string& names, const config::Scenario& base);

// Sets constant `names[i]` to values[i] in `s`.
// "12.3 us" for a time, "0.873" for an efficiency.
std::string FormatFitValue(const FitConstant& c, double value);
// {"name", "initial_s", "fitted_s", "plausible_s": [lower, upper],
// "plausible": bool} for a time, {"name", "initial", "fitted",
// "plausible_range": [lower, upper], "plausible": bool} for an efficiency:
// for fit.json.
nlohmann::ordered_json FitConstantJson(const FitConstant& c, double fitted);

// Whether `value` lies in c's plausible range (true when it has none).
bool IsPlausible(const FitConstant& c, double value);
// "per_kernel = 80.8 us is outside its plausible range [1 us, 40 us]: SOURCE; ...";
// "" when the value is plausible.
std::string ImplausibleWarning(const FitConstant& c, double value);

void ApplyFitConstants(const std::vector<FitConstant>& constants, const std::vector<double>& values,
                       config::Scenario* s);

}  // namespace dtsim::validation
