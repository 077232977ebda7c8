#include "report/search_page.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <sstream>

#include "report/svg_plot.h"

namespace dtsim::report {
namespace {

const std::string& Value(const study::Search& search, std::size_t point, std::size_t axis) {
  const study::SweepPoint& p = search.sweep.points[point];
  return search.sweep.axes[axis].values[p.choice[axis]];
}

std::string Format(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

void Row(std::ostringstream& o, const study::Search& search,
         const std::vector<study::PointResult>& results, std::size_t i, std::size_t rank) {
  const study::PointResult& r = results[i];
  o << "<tr><td>" << rank << "</td><td>" << r.devices << "</td><td>"
    << EscapeXml(PlanLabel(search, i)) << "</td><td>"
    << Format("%.1f", r.throughput_samples_per_s) << "</td><td>" << Format("%.4f", r.step_time_s)
    << "</td><td>" << Format("%.2f", r.memory_per_device_bytes / (1024.0 * 1024 * 1024))
    << "</td><td>" << Format("%.1f", 100 * r.mfu) << "</td></tr>\n";
}

const char kHead[] =
    "<tr><th>rank</th><th>devices</th><th>plan</th><th>throughput (samples/s)</th>"
    "<th>step time (s)</th><th>memory per device (GiB)</th><th>MFU (%)</th></tr>\n";

}  // namespace

std::string PlanLabel(const study::Search& search, std::size_t point) {
  return "d=" + Value(search, point, 1) + " t=" + Value(search, point, 2) +
         " p=" + Value(search, point, 3) + " m=" + Value(search, point, 4) + " " +
         Value(search, point, 5) + " zero=" + Value(search, point, 6) +
         " recompute=" + Value(search, point, 7);
}

std::string PlotSearch(const study::Search& search, const std::vector<study::PointResult>& results) {
  ScatterChart chart;
  chart.title = search.sweep.name + ": plans found (global batch " +
                std::to_string(search.global_batch) + ")";
  chart.x.label = "devices";
  chart.x.scale = Scale::kLog2;
  chart.y.label = "throughput (samples/s)";
  Series all{"feasible plans", {}}, front{"Pareto front", {}};
  for (const std::size_t i : study::RankSearch(results))
    all.points.push_back({static_cast<double>(results[i].devices),
                          results[i].throughput_samples_per_s});
  for (const std::size_t i : study::ParetoFront(results))
    front.points.push_back({static_cast<double>(results[i].devices),
                            results[i].throughput_samples_per_s});
  chart.series = {all, front};
  return RenderScatterChart(chart);
}

std::string SearchPageHtml(const study::Search& search, const std::vector<study::PointResult>& results,
                           const std::string& chart, std::size_t top, const std::string& no_fit) {
  const std::vector<std::size_t> ranked = study::RankSearch(results);
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
    << EscapeXml(search.sweep.name) << ": dtsim search</title>\n"
    << "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
       "td:nth-child(3){text-align:left}</style></head><body>\n"
    << "<h1>" << EscapeXml(search.sweep.name) << ": dtsim search</h1>\n<p>Global batch "
    << search.global_batch << ". " << search.counts.candidates << " plans enumerated, "
    << search.counts.pruned_by_memory
    << " dropped because their parameters, gradients and optimizer state alone exceed the "
       "device's memory, "
    << static_cast<std::int64_t>(results.size()) - search.counts.pruned_by_memory
    << " simulated, " << ranked.size()
    << " fit and run. d, t, p: data, tensor and pipeline parallelism; m: micro-batch size.</p>\n";
  if (ranked.empty()) {
    o << "<h2>No plan fits</h2>\n<p>" << EscapeXml(no_fit)
      << ".</p>\n<p>Every plan, with why it does not fit: <a href=\"search.csv\">search.csv</a>."
         "</p>\n</body></html>\n";
    return o.str();
  }
  o << chart << "\n<h2>Pareto front: the fastest plan per device count</h2>\n<table>\n" << kHead;
  std::size_t k = 0;
  for (const std::size_t i : study::ParetoFront(results)) {
    const auto at = std::find(ranked.begin(), ranked.end(), i);
    Row(o, search, results, i, static_cast<std::size_t>(at - ranked.begin()) + 1);
    ++k;
  }
  o << "</table>\n<h2>Ranked plans (the first " << std::min(top, ranked.size())
    << ")</h2>\n<table>\n" << kHead;
  for (std::size_t r = 0; r < ranked.size() && r < top; ++r) Row(o, search, results, ranked[r], r + 1);
  o << "</table>\n<p>Every simulated plan, with those that do not fit and why: "
       "<a href=\"search.csv\">search.csv</a>.</p>\n</body></html>\n";
  return o.str();
}

}  // namespace dtsim::report
