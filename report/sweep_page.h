// The plots and the HTML page of a sweep (`dtsim sweep`, sim/sweep.h).
//
// Line charts put the number of devices on a log2 x axis when the sweep
// varies cluster.nodes or cluster.devices_per_node, and draw one line per
// combination of the other axes. Without such an axis, x is the first
// numeric axis (log2 when its values are > 0 and span a factor of 8 or more,
// linear otherwise), and without that either, the (constant) number of
// devices.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "report/svg_plot.h"
#include "sim/sweep.h"

namespace dtsim::report {

// What the line charts of a sweep plot.
struct SweepPlotAxes {
  bool x_is_devices = true;          // x = devices; else x = the value of x_axis
  std::size_t x_axis = 0;            // the sweep axis on x when !x_is_devices
  std::string x_label;               // "devices" or the axis path
  Scale x_scale = Scale::kLog2;
  std::vector<std::size_t> series_axes;  // one line per combination of these
};

SweepPlotAxes ChooseSweepPlotAxes(const sim::Sweep& sweep);

// An axis's short name: its last key ("averaging_period"), or the full path
// when another axis of the sweep has the same last key.
std::string ShortAxisName(const sim::Sweep& sweep, std::size_t axis);

struct SweepPlots {
  std::string throughput;          // throughput.svg: samples/s against x
  std::string scaling_efficiency;  // scaling_efficiency.svg: % against x
  std::string breakdown;           // breakdown.svg: compute / exposed comm / idle per step
};

// REQUIRES: one result per point of `sweep`.
SweepPlots PlotSweep(const sim::Sweep& sweep, const std::vector<sim::PointResult>& results);

// index.html: the three plots inline and `csv` (sweep.csv) as a table. One
// self-contained file: no script, no external resource.
std::string SweepPageHtml(const sim::Sweep& sweep, const SweepPlots& plots,
                          const std::string& csv);

// The fields of one CSV line (RFC 4180 quoting, as sim::CsvField writes).
std::vector<std::string> SplitCsvLine(const std::string& line);

}  // namespace dtsim::report
