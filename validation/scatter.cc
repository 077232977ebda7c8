#include "validation/scatter.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace dtsim::validation {

std::string PredictedVsMeasuredSvg(const std::string& title, const std::string& x_label,
                                   const std::string& y_label,
                                   std::vector<report::Series> series) {
  report::ScatterChart chart;
  chart.title = title;
  chart.series = std::move(series);
  double lo = 0, hi = 0;
  for (const report::Series& s : chart.series) {
    for (const report::Series::Point& p : s.points) {
      lo = lo == 0 ? std::min(p.x, p.y) : std::min({lo, p.x, p.y});
      hi = std::max({hi, p.x, p.y});
    }
  }
  // Both axes over the same powers of two, so that y = x is the diagonal.
  chart.x = {x_label, report::Scale::kLog2, std::nullopt, std::nullopt, false, false, {}};
  chart.y = {y_label, report::Scale::kLog2, std::nullopt, std::nullopt, false, false, {}};
  if (hi > 0) {
    const double min = std::exp2(std::floor(std::log2(lo)));
    double max = std::exp2(std::ceil(std::log2(hi)));
    if (max <= min) max = min * 2;
    chart.x.min = chart.y.min = min;
    chart.x.max = chart.y.max = max;
  }
  chart.diagonal = "y = x";
  // A square plot, so that y = x runs at 45 degrees.
  report::ChartStyle style;
  const report::LineChartLayout layout = report::LayOutScatterChart(chart, style);
  style.height = style.margin_top + static_cast<int>(layout.plot.right - layout.plot.left) +
                 style.margin_bottom;
  return report::RenderScatterChart(chart, style);
}

}  // namespace dtsim::validation
