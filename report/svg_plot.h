// Small SVG charts with no dependency: line charts (linear or log2 axes,
// ticks, grid, legend), scatter charts and stacked bar charts. The output is a standalone
// SVG document that also works inline in HTML; the same input gives the same
// bytes.
//
// Coordinates: the plot area is the box `plot` of the layout, in pixels from
// the image's top-left corner. A value v maps to
//
//   x_px = plot.left   + (T(v) - T(x.min)) / (T(x.max) - T(x.min)) * (plot.right - plot.left)
//   y_px = plot.bottom - (T(v) - T(y.min)) / (T(y.max) - T(y.min)) * (plot.bottom - plot.top)
//
// with T(v) = v on a linear axis and T(v) = log2(v) on a log2 axis.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::report {

enum class Scale { kLinear, kLog2 };

struct AxisSpec {
  std::string label;
  Scale scale = Scale::kLinear;
  // The range shown. Unset: from the data, widened to whole ticks (log2:
  // powers of two; linear: 1-2-5 steps, and down to 0 when include_zero).
  std::optional<double> min;
  std::optional<double> max;
  bool include_zero = true;  // linear axes with an automatic range only
  // Ticks only at whole numbers (a count of devices, an averaging period):
  // a linear axis steps by 1, 2, 5, 10... and never by 0.5.
  bool integer = false;
  // A categorical axis when not empty: the value k (0, 1, ...) stands for
  // categories[k], which labels its tick; the range is [-0.5, size - 0.5]
  // and `scale`, `min`, `max` and `integer` are ignored. For axes whose
  // values are names ("ring", "tree") rather than numbers.
  std::vector<std::string> categories;
};

struct Series {
  std::string name;  // legend entry; "" keeps the series out of the legend
  struct Point {
    double x = 0;
    double y = 0;
  };
  std::vector<Point> points;  // drawn in x order; on a log2 axis, values <= 0 are skipped
};

struct LineChart {
  std::string title;
  AxisSpec x;
  AxisSpec y;
  std::vector<Series> series;  // colours in this order (SeriesColour(i, series.size()))
};

struct StackedBarChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<std::string> segments;  // legend, bottom to top
  std::vector<std::string> colours;   // per segment, CSS colours; empty: Colour(i)
  struct Bar {
    std::string label;           // under the bar (rotated)
    std::vector<double> values;  // one per segment, >= 0
  };
  std::vector<Bar> bars;  // left to right
  // The top of the y axis; unset: from the tallest bar. Panels of one
  // chart wrapped over several rows share it (RenderWrappedStackedBarChart).
  std::optional<double> y_max;
  // Bar slots across the plot, at least bars.size(): a short last row of
  // a wrapped chart keeps the other rows' bar width. 0 = one per bar.
  std::size_t slots = 0;
};

// Points without connecting lines, e.g. predicted against measured values.
// Laid out as a line chart with the same axes and series (LayOutScatterChart).
struct ScatterChart {
  std::string title;
  AxisSpec x;
  AxisSpec y;
  std::vector<Series> series;  // one colour each (Colour(i)), drawn in this order
  // Draws the line y = x across the plot (a perfect prediction), grey and
  // dashed, with this legend entry ("" = none). REQUIRES (when set): x and y
  // have the same scale, so that the line is straight.
  std::optional<std::string> diagonal;
};

// Sizes in pixels. Charts grow beyond width/height where their content
// needs it (a long legend, many bars, long bar labels).
struct ChartStyle {
  int width = 760;         // the whole image
  int height = 440;
  int margin_left = 80;    // y tick labels and the y axis label
  int margin_right = 16;   // right of the legend (or of the plot without one)
  int margin_top = 40;     // the title
  int margin_bottom = 56;  // x tick labels and the x axis label
  int font_size = 12;
};

struct Box {
  double left = 0;
  double top = 0;
  double right = 0;
  double bottom = 0;
};

struct Range {
  double min = 0;
  double max = 0;
};

// Where a line chart's parts go: the plot area, the value ranges at its
// edges and the ticks.
struct LineChartLayout {
  int width = 0;   // of the image
  int height = 0;
  Box plot;
  Range x;
  Range y;
  std::vector<double> x_ticks;
  std::vector<double> y_ticks;
  double legend_width = 0;  // between the plot and margin_right; 0 without legend
};

LineChartLayout LayOutLineChart(const LineChart& chart, const ChartStyle& style = {});

// Maps values of one axis to pixels (the closed form above).
class AxisTransform {
 public:
  // REQUIRES: range.min < range.max, and both > 0 on a log2 axis.
  AxisTransform(Scale scale, Range range, double pixel_at_min, double pixel_at_max);
  double operator()(double value) const;

 private:
  Scale scale_;
  double t_min_;
  double t_span_;
  double pixel_at_min_;
  double pixel_span_;
};

std::string RenderLineChart(const LineChart& chart, const ChartStyle& style = {});
LineChartLayout LayOutScatterChart(const ScatterChart& chart, const ChartStyle& style = {});
std::string RenderScatterChart(const ScatterChart& chart, const ChartStyle& style = {});
std::string RenderStackedBarChart(const StackedBarChart& chart, const ChartStyle& style = {});

// Small multiples: one SVG holding `panels` (line charts) in a grid of
// `columns`, under `title`. Panels keep their own titles and legends; their
// y axes share one range (the union of theirs, unless a panel fixes its own)
// so that heights compare across panels.
std::string RenderLineChartGrid(const std::string& title, const std::vector<LineChart>& panels,
                                int columns, const ChartStyle& style = {});

// A stacked bar chart of many bars wrapped into rows of at most
// `bars_per_row` bars, one under the other in one SVG, all on the same y
// range: the image stays about `style.width` wide however many bars there
// are. With no more bars than `bars_per_row`, the same as
// RenderStackedBarChart. REQUIRES: bars_per_row >= 1.
std::string RenderWrappedStackedBarChart(const StackedBarChart& chart, std::size_t bars_per_row,
                                         const ChartStyle& style = {});

// The i-th colour of the palette (Tableau 10, repeating), e.g. "#4e79a7".
const char* Colour(std::size_t i);
// The colour of series i of n: Colour(i) for up to 10 series; beyond, n
// distinct colours, hues spaced evenly around the HSL circle with the
// lightness alternating between two levels (neighbours differ in both).
std::string SeriesColour(std::size_t i, std::size_t n);
// A tick label: "0", "12", "1024", "2.5", "150k", "1.2M".
std::string FormatTick(double value);
// `text` with XML's special characters escaped (&, <, >, ", ').
std::string EscapeXml(const std::string& text);

}  // namespace dtsim::report
