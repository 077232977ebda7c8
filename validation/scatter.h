// Predicted against measured values as an SVG scatter chart: log2 axes over
// the same powers of two, a square plot, and the line y = x, so that a
// perfect prediction lies on the diagonal. Shared by the validation reports.
#pragma once

#include <string>
#include <vector>

#include "report/svg_plot.h"

namespace dtsim::validation {

// `series` points are (measured, predicted), one colour per series. The same
// input gives the same bytes.
std::string PredictedVsMeasuredSvg(const std::string& title, const std::string& x_label,
                                   const std::string& y_label,
                                   std::vector<report::Series> series);

}  // namespace dtsim::validation
