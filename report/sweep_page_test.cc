#include "report/sweep_page.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
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

study::SweepAxis Axis(std::string path, std::vector<std::string> values, bool numeric) {
  study::SweepAxis a;
  a.path = std::move(path);
  a.values = std::move(values);
  a.numeric = numeric;
  return a;
}

// A sweep of `axes` with every combination as a point (first axis slowest)
// and made-up results: throughput = devices x 100 x (choice of the last axis + 1).
struct FakeSweep {
  study::Sweep sweep;
  std::vector<study::PointResult> results;
};

FakeSweep MakeSweep(std::vector<study::SweepAxis> axes) {
  FakeSweep f;
  f.sweep.name = "fake";
  f.sweep.axes = std::move(axes);
  std::vector<std::size_t> choice(f.sweep.axes.size(), 0);
  while (true) {
    study::SweepPoint p;
    p.choice = choice;
    p.name = "fake/" + std::to_string(f.sweep.points.size());
    for (std::size_t a = 0; a < choice.size(); ++a) {
      if (f.sweep.axes[a].path == "cluster.nodes") {
        p.scenario.cluster.nodes = std::stoi(f.sweep.axes[a].values[choice[a]]);
      }
    }
    study::PointResult r;
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
  EXPECT_NE(html.find("<th data-col=\"cluster.nodes\">cluster.nodes</th>"
                      "<th data-col=\"scenario\">scenario</th>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>fake/cluster.nodes=1</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;b&gt;</td>"), std::string::npos);  // escaped
  // Nothing is fetched: the one script is inline; no stylesheet or image link.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

// Issue 15 item 5: units under the headings, memory in GiB (bytes kept as
// the sort key), infeasible rows kept and marked.
TEST(SweepPageHtml, UnitsMemoryAndInfeasibleRows) {
  const FakeSweep f = MakeSweep({Axis("cluster.nodes", {"1", "2"}, true)});
  const std::string csv =
      "cluster.nodes,throughput_samples_per_s,memory_per_device_bytes,fits,infeasible\n"
      "1,100,3221225472,true,\n"
      "2,,90194313216,false,needs 84 GiB per device\n";
  const std::string html = SweepPageHtml(f.sweep, PlotSweep(f.sweep, f.results), csv);
  EXPECT_NE(html.find("throughput_samples_per_s<br><small>samples/s</small></th>"),
            std::string::npos);
  EXPECT_NE(html.find("<th data-col=\"memory_per_device_bytes\">memory_per_device<br>"
                      "<small>GiB</small></th>"),
            std::string::npos);
  // 3,221,225,472 bytes = 3 x 2^30: 3.00 GiB; 90,194,313,216 = 84 x 2^30.
  EXPECT_NE(html.find("<td data-v=\"3221225472\" title=\"3221225472 bytes\">3.00</td>"),
            std::string::npos);
  EXPECT_NE(html.find(">84.00</td>"), std::string::npos);
  EXPECT_EQ(Count(html, "<tr class=\"infeasible\">"), 1);
  EXPECT_NE(html.find("<tr class=\"infeasible\"><td>2</td>"), std::string::npos);
  EXPECT_EQ(ColumnUnit("step_time_p99_s"), "s");
  EXPECT_EQ(ColumnUnit("cluster.nodes"), "");
}

// Issue 15 item 5: axes of names get a categorical x axis.
TEST(ChooseSweepPlotAxes, NamesOnlyGiveCategories) {
  const FakeSweep f = MakeSweep({Axis("parallelism.algorithm", {"ring", "tree"}, false),
                                 Axis("workload.precision", {"fp32", "fp16"}, false)});
  const SweepPlotAxes p = ChooseSweepPlotAxes(f.sweep);
  EXPECT_FALSE(p.x_is_devices);
  EXPECT_TRUE(p.x_categorical);
  EXPECT_EQ(p.x_axis, 0u);
  EXPECT_EQ(p.series_axes, (std::vector<std::size_t>{1}));
  const SweepPlots plots = PlotSweep(f.sweep, f.results);
  EXPECT_EQ(CheckXml(plots.throughput), "");
  EXPECT_NE(plots.throughput.find(">ring</text>"), std::string::npos);
  EXPECT_NE(plots.throughput.find(">tree</text>"), std::string::npos);
  EXPECT_NE(plots.throughput.find(">precision=fp16</text>"), std::string::npos);
}

// Issue 15 item 5: whole-number axes are integer axes; 0.5 is not.
TEST(ChooseSweepPlotAxes, IntegerX) {
  EXPECT_TRUE(ChooseSweepPlotAxes(
                  MakeSweep({Axis("parallelism.averaging_period", {"1", "2", "3"}, true)}).sweep)
                  .x_integer);
  EXPECT_FALSE(ChooseSweepPlotAxes(
                   MakeSweep({Axis("workload.learning_rate", {"0.5", "1"}, true)}).sweep)
                   .x_integer);
  const FakeSweep f = MakeSweep({Axis("parallelism.averaging_period", {"1", "2", "3"}, true)});
  const std::string svg = PlotSweep(f.sweep, f.results).throughput;
  EXPECT_EQ(svg.find(">1.5</text>"), std::string::npos);
  EXPECT_NE(svg.find(">2</text>"), std::string::npos);
}

// Issue 15 item 5: 2 x 4 x 4 = 32 points, devices on x, 16 lines: one panel
// per value of a series axis that leaves at most 10 lines, the one with the
// fewest values (a tie: the first, a; 4 panels of 4 lines).
TEST(ChooseSweepPlotAxes, ManyLinesGiveFacets) {
  const FakeSweep f = MakeSweep({Axis("cluster.nodes", {"1", "2"}, true),
                                 Axis("x.a", {"1", "2", "3", "4"}, true),
                                 Axis("x.b", {"5", "6", "7", "8"}, true)});
  const SweepPlotAxes p = ChooseSweepPlotAxes(f.sweep);
  ASSERT_TRUE(p.facet_axis.has_value());
  EXPECT_EQ(*p.facet_axis, 1u);
  const SweepPlots plots = PlotSweep(f.sweep, f.results);
  EXPECT_EQ(CheckXml(plots.throughput), "");
  EXPECT_EQ(Count(plots.throughput, "<svg "), 5);  // the frame and 4 panels
  for (const char* panel : {">a=1</text>", ">a=4</text>"}) {
    EXPECT_NE(plots.throughput.find(panel), std::string::npos) << panel;
  }
  EXPECT_EQ(Count(plots.throughput, ">b=5</text>"), 4);  // a legend entry per panel

  // One series axis of 12 values: one chart, 12 distinct colours.
  std::vector<std::string> twelve;
  for (int v = 1; v <= 12; ++v) twelve.push_back(std::to_string(v));
  const FakeSweep g = MakeSweep({Axis("cluster.nodes", {"1", "2"}, true),
                                 Axis("x.c", twelve, true)});
  EXPECT_FALSE(ChooseSweepPlotAxes(g.sweep).facet_axis.has_value());
  // 6 periods x 2 algorithms: panels by algorithm (2 values, 6 lines each)
  // rather than by period (6 panels of 2 lines).
  const FakeSweep h = MakeSweep({Axis("cluster.nodes", {"1", "2"}, true),
                                 Axis("x.period", {"1", "2", "5", "10", "20", "50"}, true),
                                 Axis("x.algorithm", {"ring", "tree"}, false)});
  EXPECT_EQ(ChooseSweepPlotAxes(h.sweep).facet_axis, std::optional<std::size_t>(2));
  const std::string svg = PlotSweep(g.sweep, g.results).throughput;
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_NE(svg.find("<polyline fill=\"none\" stroke=\"" + SeriesColour(i, 12)),
              std::string::npos);
  }
}

// Issue 15 item 5: the breakdown of 100 points wraps into rows of 40.
TEST(PlotSweep, BreakdownWraps) {
  std::vector<std::string> hundred;
  for (int v = 1; v <= 100; ++v) hundred.push_back(std::to_string(v));
  const FakeSweep f = MakeSweep({Axis("parallelism.averaging_period", hundred, true)});
  const std::string svg = PlotSweep(f.sweep, f.results).breakdown;
  EXPECT_EQ(CheckXml(svg), "");
  EXPECT_EQ(Count(svg, "<svg "), 4);
  const std::size_t at = svg.find("width=\"") + 7;
  EXPECT_LE(std::stoi(svg.substr(at)), 800);
}

// Issue 15 item 5: the page in a real browser (Debian's chromium, headless;
// scripts/setup.sh installs it). The fragment #sort=COLUMN:desc sorts the
// table on load: numbers as numbers (300 > 200 > 100, where text order would
// put 100 first), the empty cell of the infeasible row last, and the
// heading marked descending.
TEST(SweepPageInBrowser, SortsByTheFragmentsColumn) {
  const char* chromium = "/usr/bin/chromium";
  if (!std::filesystem::exists(chromium)) {
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
  }
  const FakeSweep f = MakeSweep({Axis("cluster.nodes", {"1", "2", "4", "8"}, true)});
  const std::string csv =
      "cluster.nodes,throughput_samples_per_s,fits,infeasible\n"
      "1,100,true,\n"
      "2,,false,does not fit\n"
      "4,300,true,\n"
      "8,200,true,\n";
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "dtsim_sweep_page_browser";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream page(dir / "index.html");
    page << SweepPageHtml(f.sweep, PlotSweep(f.sweep, f.results), csv);
  }
  // timeout: the browser dies with the test, whatever happens to it.
  const std::string command =
      "timeout -k 5 120 " + std::string(chromium) +
      " --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=" +
      (dir / "profile").string() + " --dump-dom 'file://" + (dir / "index.html").string() +
      "#sort=throughput_samples_per_s:desc' > " + (dir / "dom.html").string() + " 2> " +
      (dir / "stderr.txt").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(dir / "dom.html");
  const std::string dom((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(dom.find("<table id=\"points\">"), std::string::npos) << dom.substr(0, 400);
  const std::size_t r300 = dom.find("<td>4</td><td>300</td>");
  const std::size_t r200 = dom.find("<td>8</td><td>200</td>");
  const std::size_t r100 = dom.find("<td>1</td><td>100</td>");
  const std::size_t bad = dom.find("<tr class=\"infeasible\"><td>2</td>");
  ASSERT_NE(r300, std::string::npos);
  ASSERT_NE(bad, std::string::npos);
  EXPECT_LT(r300, r200);
  EXPECT_LT(r200, r100);
  EXPECT_LT(r100, bad);
  EXPECT_NE(dom.find("data-col=\"throughput_samples_per_s\" aria-sort=\"descending\""),
            std::string::npos);
  // The inline SVG charts are parsed as SVG elements.
  EXPECT_NE(dom.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dtsim::report
