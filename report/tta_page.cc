#include "report/tta_page.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "report/svg_plot.h"
#include "report/sweep_page.h"
#include "report/tensorboard.h"
#include "study/tta_text.h"

namespace dtsim::report {

TtaPlots PlotTta(const study::Sweep& sweep, const study::TtaStudy& study) {
  LineChart chart;
  chart.title = sweep.name + ": time to " + study.proxy.target.Describe();
  chart.y.label = "time to target (s)";
  chart.x.include_zero = false;
  const std::size_t x_axis = study::TtaXAxis(sweep);
  chart.x.label = x_axis < sweep.axes.size() ? sweep.axes[x_axis].path : "point";
  chart.x.scale = Scale::kLog2;
  chart.x.integer = true;
  LineChart speed = chart;
  speed.title = sweep.name + ": simulated throughput";
  speed.y.label = "throughput (samples/s)";
  std::map<std::vector<std::size_t>, std::size_t> series_of;
  for (const study::TtaRow& row : study.table.rows) {
    auto [it, added] =
        series_of.emplace(study::OtherAxes(sweep, x_axis, row.point), chart.series.size());
    if (added) {
      std::string name;
      for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
        if (a == x_axis) continue;
        name += (name.empty() ? "" : ", ") + ShortAxisName(sweep, a) + "=" +
                sweep.axes[a].values[sweep.points[row.point].choice[a]];
      }
      chart.series.push_back({name, {}});
      speed.series.push_back({name, {}});
    }
    const double x = study::TtaX(sweep, x_axis, row.point);
    chart.series[it->second].points.push_back({x, row.time});
    speed.series[it->second].points.push_back({x, study.points[row.point].throughput});
  }
  return {RenderLineChart(chart), RenderLineChart(speed)};
}

std::string TtaEvents(const study::TtaStudy& study) {
  EventFile events;
  const bool grid = !study.proxy.grid.empty();
  for (const study::TtaRun& r : study.runs) {
    std::string run = r.family.Name() + " W=" + std::to_string(r.workers) +
                      (grid ? " lr=" + study::Shortest(r.lr) : "") +
                      " seed=" + std::to_string(r.seed);
    std::replace(run.begin(), run.end(), ' ', '_');
    for (std::size_t k = 0; k < r.curve.loss.size(); ++k) {
      events.AddScalar(run + "/loss", r.curve.steps[k], 0, static_cast<float>(r.curve.loss[k]));
      if (!std::isnan(r.curve.accuracy[k]))
        events.AddScalar(run + "/accuracy", r.curve.steps[k], 0,
                         static_cast<float>(r.curve.accuracy[k]));
    }
  }
  for (const auto& [family, m] : study.estimates) {
    for (std::size_t k = 0; k < m.workers.size(); ++k) {
      if (!m.steps[k].valid()) continue;
      std::string tag = "updates_to_" + study.proxy.target.Slug() + "/" + family.Name() +
                        " W=" + std::to_string(m.workers[k]);
      std::replace(tag.begin(), tag.end(), ' ', '_');
      events.AddScalar(tag, 0, 0, static_cast<float>(m.steps[k].mean));
    }
  }
  return events.bytes();
}

namespace {

// `csv` (a header line and rows) as HTML table rows.
std::string CsvTableRows(const std::string& csv) {
  std::string html;
  bool header = true;
  std::size_t at = 0;
  while (at < csv.size()) {
    const std::size_t end = csv.find('\n', at);
    const std::string line = csv.substr(at, end - at);
    at = end + 1;
    html += "<tr>";
    for (const std::string& f : SplitCsvLine(line)) {
      html += (header ? "<th>" : "<td>") + EscapeXml(f) + (header ? "</th>" : "</td>");
    }
    html += "</tr>\n";
    header = false;
  }
  return html;
}

}  // namespace

std::string TtaLeadHtml(const study::TtaStudy& study, const TtaPlots& plots,
                        const std::string& best, const std::string& evaluated, int seeds) {
  const study::Proxy& p = study.proxy;
  return "<h2>Time to " + EscapeXml(p.target.Describe()) + "</h2>\n<p>Updates to the target (" +
         EscapeXml(p.target.Condition()) + ", " + EscapeXml(evaluated) + ") measured on " +
         EscapeXml(study.model) + " (batch " + std::to_string(p.batch) + " per worker, " +
         std::to_string(seeds) + " seeds, trained with " + EscapeXml(study::RuleText(p.rule)) +
         " as dtsim exec trains, learning rate " + EscapeXml(study.lr_rule) +
         "), times the simulated seconds per update (docs/tta.md). Files: "
         "<a href=\"tta.csv\">tta.csv</a>, <a href=\"curves.csv\">curves.csv</a>, "
         "<a href=\"tta.svg\">tta.svg</a>.</p>\n<pre>" +
         EscapeXml(best) + "</pre>\n<figure>\n" + plots.time + "</figure>\n<figure>\n" +
         plots.throughput + "</figure>\n<table>\n" + CsvTableRows(study.table.csv) + "</table>\n";
}

}  // namespace dtsim::report
