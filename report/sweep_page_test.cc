#include "report/sweep_page.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/xml_check.h"

namespace dtsim::report {
namespace {

sim::SweepAxis Axis(std::string path, std::vector<std::string> values, bool numeric) {
  sim::SweepAxis a;
  a.path = std::move(path);
  a.values = std::move(values);
  a.numeric = numeric;
  return a;
}

// A sweep of `axes` with every combination as a point (first axis slowest)
// and made-up results: throughput = devices x 100 x (choice of the last axis + 1).
struct FakeSweep {
  sim::Sweep sweep;
  std::vector<sim::PointResult> results;
};

FakeSweep MakeSweep(std::vector<sim::SweepAxis> axes) {
  FakeSweep f;
  f.sweep.name = "fake";
  f.sweep.axes = std::move(axes);
  std::vector<std::size_t> choice(f.sweep.axes.size(), 0);
  while (true) {
    sim::SweepPoint p;
    p.choice = choice;
    p.name = "fake/" + std::to_string(f.sweep.points.size());
    for (std::size_t a = 0; a < choice.size(); ++a) {
      if (f.sweep.axes[a].path == "cluster.nodes") {
        p.scenario.cluster.nodes = std::stoi(f.sweep.axes[a].values[choice[a]]);
      }
    }
    sim::PointResult r;
    r.devices = p.scenario.cluster.num_devices();
    r.throughput_samples_per_s =
        r.devices * 100.0 * (choice.empty() ? 1 : static_cast<double>(choice.back() + 1));
    r.scaling_efficiency = 0.9;
    r.compute_s = 0.05;
    r.exposed_comm_s = 0.01;
    r.csv_row = "x";
    f.sweep.points.push_back(p);
    f.results.push_back(r);
    std::size_t a = choice.size();
    while (a > 0 && ++choice[a - 1] == f.sweep.axes[a - 1].values.size()) choice[--a] = 0;
    if (a == 0) break;
  }
  return f;
}

TEST(ChooseSweepPlotAxes, DevicesOnXOtherAxesAreLines) {
  const FakeSweep f = MakeSweep({Axis("cluster.nodes", {"1", "2", "4"}, true),
                                 Axis("parallelism.averaging_period", {"1", "10"}, true)});
  const SweepPlotAxes p = ChooseSweepPlotAxes(f.sweep);
  EXPECT_TRUE(p.x_is_devices);
  EXPECT_EQ(p.x_scale, Scale::kLog2);
  EXPECT_EQ(p.series_axes, (std::vector<std::size_t>{1}));
  const SweepPlots plots = PlotSweep(f.sweep, f.results);
  // Two lines (one per averaging period), named by the short axis name.
  EXPECT_NE(plots.throughput.find(">averaging_period=10</text>"), std::string::npos);
  EXPECT_EQ(CheckXml(plots.throughput), "");
  EXPECT_EQ(CheckXml(plots.scaling_efficiency), "");
  EXPECT_EQ(CheckXml(plots.breakdown), "");
}

TEST(ChooseSweepPlotAxes, WithoutDeviceAxisTheFirstNumericAxis) {
  FakeSweep f = MakeSweep({Axis("parallelism.strategy", {"data", "local_sgd"}, false),
                           Axis("parallelism.averaging_period", {"1", "2", "5", "10", "20", "50"},
                                true)});
  SweepPlotAxes p = ChooseSweepPlotAxes(f.sweep);
  EXPECT_FALSE(p.x_is_devices);
  EXPECT_EQ(p.x_axis, 1u);
  EXPECT_EQ(p.x_label, "parallelism.averaging_period");
  EXPECT_EQ(p.x_scale, Scale::kLog2);  // 1 to 50 spans more than 8x
  EXPECT_EQ(p.series_axes, (std::vector<std::size_t>{0}));

  f = MakeSweep({Axis("workload.batch_per_device", {"16", "32"}, true)});
  p = ChooseSweepPlotAxes(f.sweep);
  EXPECT_EQ(p.x_scale, Scale::kLinear);  // only 2x
  EXPECT_TRUE(p.series_axes.empty());
}

TEST(PlotSweep, SinglePointStillPlots) {
  const FakeSweep f = MakeSweep({});
  ASSERT_EQ(f.sweep.points.size(), 1u);
  const SweepPlots plots = PlotSweep(f.sweep, f.results);
  for (const std::string* svg : {&plots.throughput, &plots.scaling_efficiency, &plots.breakdown}) {
    EXPECT_EQ(CheckXml(*svg), "");
    EXPECT_NE(svg->find("<svg"), std::string::npos);
  }
}

TEST(ShortAxisName, FullPathWhenLastKeysClash) {
  const FakeSweep f = MakeSweep({Axis("cluster.devices[0].fp32", {"1TFLOPS"}, false),
                                 Axis("cluster.devices[1].fp32", {"2TFLOPS"}, false),
                                 Axis("cluster.nodes", {"1"}, true)});
  EXPECT_EQ(ShortAxisName(f.sweep, 0), "cluster.devices[0].fp32");
  EXPECT_EQ(ShortAxisName(f.sweep, 2), "nodes");
}

TEST(SplitCsvLine, QuotedFields) {
  EXPECT_EQ(SplitCsvLine("a,\"b,c\",\"d \"\"e\"\"\",,f"),
            (std::vector<std::string>{"a", "b,c", "d \"e\"", "", "f"}));
}

TEST(SweepPageHtml, SelfContainedWithPlotsAndTable) {
  const FakeSweep f = MakeSweep({Axis("cluster.nodes", {"1", "2"}, true)});
  const SweepPlots plots = PlotSweep(f.sweep, f.results);
  const std::string html = SweepPageHtml(
      f.sweep, plots, "cluster.nodes,scenario\n1,\"fake/cluster.nodes=1\"\n2,<b>\n");
  int svgs = 0;
  for (std::size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    ++svgs;
  }
  EXPECT_EQ(svgs, 3);
  EXPECT_NE(html.find("<th>cluster.nodes</th><th>scenario</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>fake/cluster.nodes=1</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;b&gt;</td>"), std::string::npos);  // escaped
  // Nothing is fetched: no script, no stylesheet or image link.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

}  // namespace
}  // namespace dtsim::report
