// The plots and the HTML page of a sweep (`dtsim sweep`, study/sweep.h).
//
// Line charts put the number of devices on a log2 x axis when the sweep
// varies cluster.nodes or cluster.devices_per_node, and draw one line per
// combination of the other axes. Without such an axis, x is the first
// numeric axis (log2 when its values are > 0 and span a factor of 8 or more,
// linear otherwise; integer ticks when its values are whole numbers);
// without that either, the first axis as categories ("ring", "tree"); and
// a sweep without axes plots its one point at its number of devices.
//
// More than 10 lines are split into panels, one per value of a series axis
// (the facet axis: of those leaving at most 10 lines per panel, the one
// with the fewest values); lines beyond 10 in one panel get distinct
// colours (SeriesColour). The breakdown chart wraps into rows of kBarsPerRow bars.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "report/svg_plot.h"
#include "study/sweep.h"

namespace dtsim::report {

// What the line charts of a sweep plot.
struct SweepPlotAxes {
  bool x_is_devices = true;          // x = devices; else x = the value of x_axis
  std::size_t x_axis = 0;            // the sweep axis on x when !x_is_devices
  bool x_categorical = false;        // x_axis's values are names: one slot each
  bool x_integer = true;             // x's values are whole numbers
  std::string x_label;               // "devices" or the axis path
  Scale x_scale = Scale::kLog2;
  std::vector<std::size_t> series_axes;  // one line per combination of these
  // One panel per value of this axis (one of series_axes) when the lines
  // would be more than kMaxLinesPerPanel; unset: one chart.
  std::optional<std::size_t> facet_axis;
};

constexpr std::size_t kMaxLinesPerPanel = 10;  // the palette's size (Colour)
constexpr std::size_t kBarsPerRow = 40;        // breakdown chart rows

SweepPlotAxes ChooseSweepPlotAxes(const study::Sweep& sweep);

// An axis's short name: its last key ("averaging_period"), or the full path
// when another axis of the sweep has the same last key.
std::string ShortAxisName(const study::Sweep& sweep, std::size_t axis);

struct SweepPlots {
  std::string throughput;          // throughput.svg: samples/s against x
  std::string scaling_efficiency;  // scaling_efficiency.svg: % against x
  std::string breakdown;           // breakdown.svg: compute / exposed comm / idle per step
};

// REQUIRES: one result per point of `sweep`.
SweepPlots PlotSweep(const study::Sweep& sweep, const std::vector<study::PointResult>& results);

// index.html: the three plots inline and `csv` (sweep.csv) as a table. One
// self-contained file without external resources. The table shows each
// column's unit under its name, memory in GiB, and marks infeasible rows
// (class "infeasible"); a short inline script sorts it by the column whose
// heading is clicked (numbers as numbers, empty cells last), and on load by
// the URL fragment "#sort=COLUMN" or "#sort=COLUMN:desc" (COLUMN as in
// sweep.csv's header). `lead`, when given, is HTML placed before the
// plots (`dtsim tta` puts its time-to-accuracy section there).
std::string SweepPageHtml(const study::Sweep& sweep, const SweepPlots& plots,
                          const std::string& csv, const std::string& lead = "");

// The unit of a column of sweep.csv (sim::CsvHeader), as the page's table
// shows it: "samples/s", "s", "GiB" ...; "" for a column without one.
std::string ColumnUnit(const std::string& column);

// The fields of one CSV line (RFC 4180 quoting, as sim::CsvField writes).
std::vector<std::string> SplitCsvLine(const std::string& line);

}  // namespace dtsim::report
