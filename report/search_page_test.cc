#include "report/search_page.h"

#include <gtest/gtest.h>

#include "report/xml_check.h"

namespace dtsim::report {
namespace {

// A search of two plans by hand: the chart is well-formed SVG, the page
// lists the plans fastest first with their labels, and the front.
TEST(SearchPage, ChartAndTablesOfAHandMadeSearch) {
  study::Search search;
  search.global_batch = 64;
  search.counts.candidates = 3;
  search.counts.pruned_by_memory = 1;
  search.sweep.name = "hand";
  const char* paths[] = {"search.devices",          "search.data_parallel",
                         "search.tensor_parallel",  "search.pipeline_parallel",
                         "search.micro_batch_size", "search.schedule",
                         "search.zero_stage",       "search.recompute"};
  for (const char* p : paths) search.sweep.axes.push_back({p, {}, false, {}});
  const std::vector<std::vector<std::string>> plans = {
      {"4", "4", "1", "1", "16", "none", "0", "none"},
      {"8", "2", "2", "2", "8", "1f1b", "1", "selective"}};
  for (const auto& values : plans) {
    study::SweepPoint point;
    for (std::size_t a = 0; a < values.size(); ++a) {
      search.sweep.axes[a].values.push_back(values[a]);
      point.choice.push_back(search.sweep.axes[a].values.size() - 1);
    }
    search.sweep.points.push_back(point);
  }
  std::vector<study::PointResult> results(2);
  results[0].devices = 4;
  results[0].throughput_samples_per_s = 100;
  results[1].devices = 8;
  results[1].throughput_samples_per_s = 150;
  results[1].mfu = 0.5;
  EXPECT_EQ(PlanLabel(search, 1), "d=2 t=2 p=2 m=8 1f1b zero=1 recompute=selective");
  const std::string chart = PlotSearch(search, results);
  EXPECT_EQ(CheckXml(chart), "");
  const std::string page = SearchPageHtml(search, results, chart, 100);
  // The front (by device count) lists both, 4 devices first; the ranked
  // table after it lists the faster plan first.
  const auto front = page.find("Pareto front"), ranked = page.find("Ranked plans");
  ASSERT_NE(front, std::string::npos);
  ASSERT_NE(ranked, std::string::npos);
  EXPECT_LT(page.find("d=4 t=1 p=1", front), page.find("d=2 t=2 p=2", front));
  EXPECT_LT(page.find("d=2 t=2 p=2", ranked), page.find("d=4 t=1 p=1", ranked));
  EXPECT_LT(page.find("d=4 t=1 p=1", ranked), std::string::npos);
  EXPECT_NE(page.find("3 plans enumerated, 1 dropped"), std::string::npos);
  EXPECT_NE(page.find("<td>50.0</td>"), std::string::npos);  // MFU in percent
}

}  // namespace
}  // namespace dtsim::report
