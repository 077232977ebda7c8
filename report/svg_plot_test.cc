#include "report/svg_plot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "report/xml_check.h"

namespace dtsim::report {
namespace {

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

std::string Circle(double cx, double cy) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "<circle cx=\"%.2f\" cy=\"%.2f\"", cx, cy);
  return buf;
}

TEST(AxisTransform, ClosedForms) {
  // log2 axis over [1, 1024] on pixels 100..600: 32 = 2^5 is half way,
  //   100 + (5 - 0) / (10 - 0) * 500 = 350.
  const AxisTransform log2(Scale::kLog2, {1, 1024}, 100, 600);
  EXPECT_DOUBLE_EQ(log2(32), 350);
  EXPECT_DOUBLE_EQ(log2(1), 100);
  EXPECT_DOUBLE_EQ(log2(1024), 600);
  // 3 = 2^1.585: 100 + 0.1585 * 500.
  EXPECT_NEAR(log2(3), 100 + std::log2(3.0) / 10 * 500, 1e-9);
  // A y axis grows upwards: [0, 200] on pixels 400 (bottom) .. 40 (top);
  //   50 -> 400 - 50 / 200 * 360 = 310.
  const AxisTransform linear(Scale::kLinear, {0, 200}, 400, 40);
  EXPECT_DOUBLE_EQ(linear(50), 310);
  EXPECT_DOUBLE_EQ(linear(200), 40);
}

TEST(LineChart, PointsLandWhereTheClosedFormSays) {
  LineChart chart;
  chart.x = {"devices", Scale::kLog2, 1, 1024, false, false, {}};
  chart.y = {"samples/s", Scale::kLinear, 0, 100, true, false, {}};
  chart.series.push_back({"", {{32, 25}, {1024, 100}, {4, 50}}});
  const ChartStyle style;  // 760 x 440, margins left 80, right 16, top 40, bottom 56
  const LineChartLayout l = LayOutLineChart(chart, style);
  // One unnamed series: no legend, the plot fills the margins.
  EXPECT_DOUBLE_EQ(l.plot.left, 80);
  EXPECT_DOUBLE_EQ(l.plot.right, 760 - 16);
  EXPECT_DOUBLE_EQ(l.plot.top, 40);
  EXPECT_DOUBLE_EQ(l.plot.bottom, 440 - 56);
  const std::string svg = RenderLineChart(chart, style);
  // (32, 25): x = 80 + 5/10 * 664 = 412, y = 384 - 25/100 * 344 = 298.
  EXPECT_NE(svg.find(Circle(412, 298)), std::string::npos) << svg;
  // (1024, 100): the top right corner; (4, 50): x = 80 + 2/10 * 664 = 212.8, y = 212.
  EXPECT_NE(svg.find(Circle(744, 40)), std::string::npos);
  EXPECT_NE(svg.find(Circle(212.8, 212)), std::string::npos);
  // The line goes through the points in x order.
  EXPECT_NE(svg.find("points=\"212.80,212.00 412.00,298.00 744.00,40.00\""), std::string::npos);
  EXPECT_EQ(CheckXml(svg), "");
}

TEST(LineChart, LegendNarrowsThePlotAndTheMappingFollows) {
  LineChart chart;
  chart.x.scale = Scale::kLog2;
  chart.series.push_back({"averaging_period=1", {{8, 1000}, {64, 7000}}});
  chart.series.push_back({"averaging_period=<10> & more", {{8, 1100}, {64, 8000}}});
  const LineChartLayout l = LayOutLineChart(chart);
  // The legend sits right of the plot (14 px gap) and the image widens to
  // keep the plot at least 480 px wide.
  EXPECT_GT(l.legend_width, 0);
  EXPECT_DOUBLE_EQ(l.plot.right + 14 + l.legend_width + 16, l.width);
  EXPECT_GE(l.plot.right - l.plot.left, 480);
  // Automatic ranges: x from 8 to 64 (powers of two), y from 0 to a whole
  // step above 8000 (step 2000: 8000 / 6 = 1333 rounds up to 2000).
  EXPECT_DOUBLE_EQ(l.x.min, 8);
  EXPECT_DOUBLE_EQ(l.x.max, 64);
  EXPECT_EQ(l.x_ticks, (std::vector<double>{8, 16, 32, 64}));
  EXPECT_DOUBLE_EQ(l.y.min, 0);
  EXPECT_DOUBLE_EQ(l.y.max, 8000);
  EXPECT_EQ(l.y_ticks, (std::vector<double>{0, 2000, 4000, 6000, 8000}));
  const std::string svg = RenderLineChart(chart);
  // (8, 7000)... (64, 7000): x at the plot's right edge, y = bottom - 7/8 * height.
  const double y = l.plot.bottom - 7000.0 / 8000 * (l.plot.bottom - l.plot.top);
  EXPECT_NE(svg.find(Circle(l.plot.right, y)), std::string::npos) << svg;
  EXPECT_NE(svg.find("averaging_period=&lt;10&gt; &amp; more"), std::string::npos);
  // 4 data markers + 2 legend markers; one polyline per series.
  EXPECT_EQ(Count(svg, "<circle"), 6);
  EXPECT_EQ(Count(svg, "<polyline"), 2);
  EXPECT_EQ(CheckXml(svg), "");
}

TEST(LineChart, OnePointAndNoPointStillDraw) {
  LineChart one;
  one.x.scale = Scale::kLog2;
  one.series.push_back({"", {{8, 500}}});
  const LineChartLayout l = LayOutLineChart(one);
  // One value is centred: [4, 16] around 8 on log2.
  EXPECT_DOUBLE_EQ(l.x.min, 4);
  EXPECT_DOUBLE_EQ(l.x.max, 16);
  const std::string svg = RenderLineChart(one);
  EXPECT_EQ(Count(svg, "<circle"), 1);
  EXPECT_EQ(Count(svg, "<polyline"), 0);
  EXPECT_EQ(CheckXml(svg), "");
  EXPECT_EQ(CheckXml(RenderLineChart(LineChart{})), "");
}

TEST(ScatterChart, PointsWithoutLinesAndTheDiagonalCornerToCorner) {
  ScatterChart chart;
  chart.title = "predicted vs measured";
  chart.x = {"measured ms", Scale::kLog2, 1, 1024, false, false, {}};
  chart.y = {"predicted ms", Scale::kLog2, 1, 1024, false, false, {}};
  chart.series.push_back({"single node", {{32, 32}, {4, 8}}});
  chart.series.push_back({"multi-node", {{512, 256}, {0, 5}}});  // 0: not on a log axis
  chart.diagonal = "y = x";
  const LineChartLayout l = LayOutScatterChart(chart);
  EXPECT_GT(l.legend_width, 0);  // three entries: two series and the diagonal
  const std::string svg = RenderScatterChart(chart);
  // 3 drawable points + 2 legend swatches; no line joins the points.
  EXPECT_EQ(Count(svg, "<circle"), 3 + 2);
  EXPECT_EQ(Count(svg, "<polyline"), 0);
  EXPECT_EQ(Count(svg, "y = x"), 1);
  // (32, 32) lies on y = x half way along both log2 axes (2^5 of 2^10):
  //   x = left + (right - left) / 2, y = bottom - (bottom - top) / 2.
  const double cx = (l.plot.left + l.plot.right) / 2, cy = (l.plot.top + l.plot.bottom) / 2;
  EXPECT_NE(svg.find(Circle(cx, cy)), std::string::npos) << svg;
  // The diagonal runs from the bottom-left corner (1, 1) to the top-right (1024, 1024).
  char diagonal[160];
  std::snprintf(diagonal, sizeof diagonal,
                "<line class=\"diagonal\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"",
                l.plot.left, l.plot.bottom, l.plot.right, l.plot.top);
  EXPECT_NE(svg.find(diagonal), std::string::npos);
  EXPECT_EQ(CheckXml(svg), "");
  EXPECT_EQ(CheckXml(RenderScatterChart(ScatterChart{})), "");
}

TEST(StackedBarChart, SegmentsStackAndTheSvgIsWellFormed) {
  StackedBarChart chart;
  chart.title = "time per step";
  chart.y_label = "ms";
  chart.segments = {"compute", "exposed communication", "idle"};
  chart.bars = {{"8, 1", {60, 20, 0}}, {"16, 1", {60, 30, 10}}};
  const std::string svg = RenderStackedBarChart(chart);
  // background + frame + 2 bars x 3 segments + 3 legend swatches
  EXPECT_EQ(Count(svg, "<rect"), 1 + 1 + 6 + 3);
  EXPECT_EQ(CheckXml(svg), "");
  // The y axis reaches the tallest bar, 100, in whole steps of 20.
  EXPECT_NE(svg.find(">100</text>"), std::string::npos);
  EXPECT_NE(svg.find(">80</text>"), std::string::npos);
}

TEST(LineChart, TickLabelsOfAnAxisLookAlike) {
  LineChart chart;
  chart.x.scale = Scale::kLog2;
  chart.series.push_back({"", {{8, 20000}, {1024, 240000}}});
  const std::string svg = RenderLineChart(chart);
  // y from 0 to 250k in steps of 50k: all in k, none as a plain 50000.
  EXPECT_NE(svg.find(">50k</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">250k</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">50000</text>"), std::string::npos);
  // x: powers of two as whole numbers.
  EXPECT_NE(svg.find(">1024</text>"), std::string::npos);
}

TEST(StackedBarChart, ManyBarsWidenTheImage) {
  StackedBarChart chart;
  chart.segments = {"a"};
  for (int i = 0; i < 200; ++i) chart.bars.push_back({std::to_string(i), {1.0 * i}});
  const std::string svg = RenderStackedBarChart(chart);
  // 200 bars at >= 12 px each: the image is wider than the default 760 px.
  const std::size_t at = svg.find("width=\"");
  EXPECT_GT(std::stoi(svg.substr(at + 7)), 200 * 12);
  EXPECT_EQ(CheckXml(svg), "");
}

TEST(FormatTick, ShortForms) {
  EXPECT_EQ(FormatTick(0), "0");
  EXPECT_EQ(FormatTick(1024), "1024");
  EXPECT_EQ(FormatTick(2.5), "2.5");
  EXPECT_EQ(FormatTick(0.30000000000000004), "0.3");
  EXPECT_EQ(FormatTick(150000), "150k");
  EXPECT_EQ(FormatTick(1.2e6), "1.2M");
}

TEST(CheckXml, CatchesBrokenDocuments) {
  EXPECT_EQ(CheckXml("<svg><g><line/></g></svg>"), "");
  EXPECT_NE(CheckXml("<svg><g></svg>"), "");
  EXPECT_NE(CheckXml("<svg>a & b</svg>"), "");
  EXPECT_NE(CheckXml("<svg x=\"1></svg>"), "");
  EXPECT_NE(CheckXml("<svg></svg><svg></svg>"), "");
}

// Issue 15 item 5: an integer axis has no half ticks. Data 1..3: the
// 1-2-5 rule steps by NiceStep(2, 6) = 0.5 (ticks 1, 1.5, ..., 3); an
// integer axis takes the next step that is whole, 1.
TEST(LineChart, IntegerAxisTicksAreWhole) {
  LineChart chart;
  chart.x.include_zero = false;
  chart.series = {{"s", {{1, 10}, {2, 20}, {3, 30}}}};
  EXPECT_EQ(LayOutLineChart(chart).x_ticks, (std::vector<double>{1, 1.5, 2, 2.5, 3}));
  chart.x.integer = true;
  EXPECT_EQ(LayOutLineChart(chart).x_ticks, (std::vector<double>{1, 2, 3}));
  // Wide ranges keep their 1-2-5 steps: 0..100 by 20.
  chart.series[0].points.push_back({100, 5});
  chart.x.include_zero = true;
  EXPECT_EQ(LayOutLineChart(chart).x_ticks, (std::vector<double>{0, 20, 40, 60, 80, 100}));
}

// Issue 15 item 5: names on x. Category k sits at k, the range is
// [-0.5, n - 0.5], and each tick is labelled with its category.
TEST(LineChart, CategoricalAxis) {
  LineChart chart;
  chart.x.label = "algorithm";
  chart.x.categories = {"ring", "tree", "halving_doubling"};
  chart.series = {{"s", {{0, 10}, {1, 20}, {2, 15}}}};
  const LineChartLayout l = LayOutLineChart(chart);
  EXPECT_EQ(l.x.min, -0.5);
  EXPECT_EQ(l.x.max, 2.5);
  EXPECT_EQ(l.x_ticks, (std::vector<double>{0, 1, 2}));
  const std::string svg = RenderLineChart(chart);
  EXPECT_EQ(CheckXml(svg), "");
  for (const char* name : {">ring</text>", ">tree</text>", ">halving_doubling</text>"}) {
    EXPECT_EQ(Count(svg, name), 1) << name;
  }
  EXPECT_NE(svg.find("algorithm tree, "), std::string::npos);  // the tooltip names it
  // Ticks thin out when labels would overlap: 200 categories of 10
  // characters on a 480 px plot get every k-th label (k >= 2).
  chart.x.categories.clear();
  chart.series[0].points.clear();
  for (int k = 0; k < 200; ++k) {
    chart.x.categories.push_back("category" + std::to_string(k % 10) + "x");
    chart.series[0].points.push_back({static_cast<double>(k), 1});
  }
  const LineChartLayout many = LayOutLineChart(chart);
  ASSERT_GE(many.x_ticks.size(), 2u);
  EXPECT_LT(many.x_ticks.size(), 200u);
  const double gap_px = (many.x_ticks[1] - many.x_ticks[0]) * (many.plot.right - many.plot.left) /
                        (many.x.max - many.x.min);
  EXPECT_GE(gap_px, 10 * 0.6 * 12);  // 10 characters at the width estimate
}

// Issue 15 item 5: more than 10 series get distinct colours.
TEST(SeriesColour, TableauUpToTenDistinctBeyond) {
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(SeriesColour(i, 10), Colour(i));
  std::vector<std::string> colours;
  for (std::size_t i = 0; i < 30; ++i) colours.push_back(SeriesColour(i, 30));
  std::sort(colours.begin(), colours.end());
  EXPECT_EQ(std::unique(colours.begin(), colours.end()), colours.end());
  // Series 0 of 11: hsl(0, 65%, 42%). CSS Color 3's chroma form:
  // C = (1 - |2 x 0.42 - 1|) x 0.65 = 0.546, m = 0.42 - C / 2 = 0.147;
  // (R, G, B) = (C + m, m, m) x 255 = (176.7, 37.5, 37.5) -> (177, 37, 37).
  EXPECT_EQ(SeriesColour(0, 11), "#b12525");
}

// Issue 15 item 5: 100 bars wrap into rows of 40 on one y range instead of
// one image 1,200+ pixels wide.
TEST(StackedBarChart, WrapsIntoRows) {
  StackedBarChart chart;
  chart.title = "t";
  chart.segments = {"a", "b"};
  for (int i = 0; i < 100; ++i) {
    chart.bars.push_back({"bar" + std::to_string(i), {1.0 + i % 7, 1}});
  }
  const std::string one = RenderStackedBarChart(chart);
  const std::string wrapped = RenderWrappedStackedBarChart(chart, 40);
  EXPECT_EQ(CheckXml(wrapped), "");
  auto width = [](const std::string& svg) {
    const std::size_t at = svg.find("width=\"") + 7;
    return std::stoi(svg.substr(at));
  };
  EXPECT_GT(width(one), 1200);   // 80 + 100 x 12 px per bar + legend
  EXPECT_LE(width(wrapped), 800);
  EXPECT_EQ(Count(wrapped, "<svg "), 4);  // the frame and 3 rows: 40, 40, 20 bars
  EXPECT_NE(wrapped.find(">bars 81 to 100 of 100</text>"), std::string::npos);
  EXPECT_EQ(Count(wrapped, "<g class=\"bar\">"), 100);
  // One y range: the tallest bar, 7 + 1 = 8, gives every row ticks up to 8.
  EXPECT_EQ(Count(wrapped, ">8</text>"), 3);
  // Few bars: the plain chart.
  chart.bars.resize(30);
  EXPECT_EQ(RenderWrappedStackedBarChart(chart, 40), RenderStackedBarChart(chart));
}

// A defect found with the facets: a legend of one 3-character name ("b=5")
// printed "..." because the legend's width, 22 + 8 + 3 x 0.6 x 12 px, gave
// back 2.9999 characters.
TEST(LineChart, ShortLegendNamesAreNotTruncated) {
  LineChart chart;
  chart.series = {{"b=5", {{1, 1}, {2, 2}}}};
  EXPECT_NE(RenderLineChart(chart).find(">b=5</text>"), std::string::npos);
}

// Small multiples share their y range.
TEST(LineChartGrid, PanelsShareTheYRange) {
  LineChart low, high;
  low.title = "low";
  low.series = {{"s", {{1, 1}, {2, 10}}}};
  high.title = "high";
  high.series = {{"s", {{1, 1}, {2, 100}}}};
  const std::string svg = RenderLineChartGrid("grid", {low, high, low}, 2);
  EXPECT_EQ(CheckXml(svg), "");
  EXPECT_EQ(Count(svg, "<svg "), 4);
  // 0..100 by 20 on every panel: the label "100" three times.
  EXPECT_EQ(Count(svg, ">100</text>"), 3);
  // Two columns: the third panel starts a second row, under the first.
  EXPECT_NE(svg.find("<svg x=\"0\" y=\"40\" "), std::string::npos);
  EXPECT_NE(svg.find("<svg x=\"0\" y=\"480\" "), std::string::npos);
}

}  // namespace
}  // namespace dtsim::report
