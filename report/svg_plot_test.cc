#include "report/svg_plot.h"

#include <gtest/gtest.h>

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
  chart.x = {"devices", Scale::kLog2, 1, 1024, false};
  chart.y = {"samples/s", Scale::kLinear, 0, 100, true};
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
  chart.x = {"measured ms", Scale::kLog2, 1, 1024, false};
  chart.y = {"predicted ms", Scale::kLog2, 1, 1024, false};
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

}  // namespace
}  // namespace dtsim::report
