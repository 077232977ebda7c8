// Numbers and rules as time to accuracy's files and summaries write them.
#pragma once

#include <string>

#include "exec/runtime/optimizer.h"

namespace dtsim::study {

// `v` in printf's %g: "0.05", "1e-05".
std::string Shortest(double v);
// `v` with `digits` decimals: Fixed(1.5, 3) = "1.500".
std::string Fixed(double v, int digits);
// A duration with its unit, 3 significant digits: "12.3 s", "45.6 ms",
// "789 us".
std::string Seconds(double s);
// The update rule in words: "momentum 0.9, warm-up 100 steps, decay x0.5
// every 1000 steps (staircase)".
std::string RuleText(const exec::OptimizerOptions& rule);

}  // namespace dtsim::study
