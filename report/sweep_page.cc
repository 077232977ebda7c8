#include "report/sweep_page.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>

namespace dtsim::report {
namespace {

bool IsDeviceAxis(const sim::SweepAxis& axis) {
  return axis.path == "cluster.nodes" || axis.path == "cluster.devices_per_node";
}

double ParseNumber(const std::string& text) {
  double v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

std::string LastKey(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

// Escapes text for HTML content and attribute values.
std::string EscapeHtml(const std::string& text) { return EscapeXml(text); }

// The values of `point` on `axes`: "a=1, b=x".
std::string Combination(const sim::Sweep& sweep, const sim::SweepPoint& point,
                        const std::vector<std::size_t>& axes) {
  std::string s;
  for (std::size_t a : axes) {
    if (!s.empty()) s += ", ";
    s += ShortAxisName(sweep, a) + "=" + sweep.axes[a].values[point.choice[a]];
  }
  return s;
}

// One line chart of `value(result)` against the chosen x, one series per
// combination of the series axes (in order of first appearance).
template <typename Value>
LineChart SweepLineChart(const sim::Sweep& sweep, const std::vector<sim::PointResult>& results,
                         const SweepPlotAxes& axes, Value value) {
  LineChart chart;
  chart.x.label = axes.x_label;
  chart.x.scale = axes.x_scale;
  chart.x.include_zero = false;
  std::map<std::vector<std::size_t>, std::size_t> series_of;
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    // An infeasible point has no figures to draw (sweep.csv says why).
    if (!results[i].feasible) continue;
    const sim::SweepPoint& point = sweep.points[i];
    std::vector<std::size_t> key;
    for (std::size_t a : axes.series_axes) key.push_back(point.choice[a]);
    auto [it, added] = series_of.emplace(key, chart.series.size());
    if (added) chart.series.push_back({Combination(sweep, point, axes.series_axes), {}});
    const double x = axes.x_is_devices
                         ? results[i].devices
                         : ParseNumber(sweep.axes[axes.x_axis].values[point.choice[axes.x_axis]]);
    chart.series[it->second].points.push_back({x, value(results[i])});
  }
  return chart;
}

// Seconds per step shown in a unit that suits `max_s`.
struct TimeUnit {
  const char* name;
  double per_second;
};
TimeUnit UnitFor(double max_s) {
  if (max_s < 1e-3) return {"us", 1e6};
  if (max_s < 1) return {"ms", 1e3};
  return {"s", 1};
}

StackedBarChart BreakdownChart(const sim::Sweep& sweep,
                               const std::vector<sim::PointResult>& results) {
  StackedBarChart chart;
  chart.title = sweep.name + ": time per step";
  double max_total = 0;
  for (const sim::PointResult& r : results) {
    max_total = std::max(max_total, r.compute_s + r.exposed_comm_s + r.idle_s);
  }
  const TimeUnit unit = UnitFor(max_total);
  chart.y_label = std::string("time per step, mean over devices (") + unit.name + ")";
  chart.segments = {"compute", "exposed communication", "idle"};
  chart.colours = {Colour(0), Colour(2), Colour(9)};
  std::vector<std::size_t> all;
  std::string names;
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    all.push_back(a);
    names += (a ? ", " : "") + ShortAxisName(sweep, a);
  }
  chart.x_label = names.empty() ? sweep.name : "point (" + names + ")";
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    std::string label;
    for (std::size_t a : all) {
      label += (a ? ", " : "") + sweep.axes[a].values[sweep.points[i].choice[a]];
    }
    if (label.empty()) label = sweep.points[i].name;
    const sim::PointResult& r = results[i];
    if (!r.feasible) label += " (infeasible)";
    chart.bars.push_back({label,
                          {r.compute_s * unit.per_second, r.exposed_comm_s * unit.per_second,
                           r.idle_s * unit.per_second}});
  }
  return chart;
}

}  // namespace

std::string ShortAxisName(const sim::Sweep& sweep, std::size_t axis) {
  const std::string key = LastKey(sweep.axes[axis].path);
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    if (a != axis && LastKey(sweep.axes[a].path) == key) return sweep.axes[axis].path;
  }
  return key;
}

SweepPlotAxes ChooseSweepPlotAxes(const sim::Sweep& sweep) {
  SweepPlotAxes p;
  std::vector<bool> on_x(sweep.axes.size(), false);
  bool device_axis = false;
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    if (IsDeviceAxis(sweep.axes[a])) on_x[a] = device_axis = true;
  }
  if (!device_axis) {
    for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
      if (!sweep.axes[a].numeric) continue;
      p.x_is_devices = false;
      p.x_axis = a;
      on_x[a] = true;
      break;
    }
  }
  if (p.x_is_devices) {
    p.x_label = "devices";
    p.x_scale = Scale::kLog2;
  } else {
    const sim::SweepAxis& axis = sweep.axes[p.x_axis];
    p.x_label = axis.path;
    double lo = 0, hi = 0;
    for (std::size_t k = 0; k < axis.values.size(); ++k) {
      const double v = ParseNumber(axis.values[k]);
      lo = k == 0 ? v : std::min(lo, v);
      hi = k == 0 ? v : std::max(hi, v);
    }
    p.x_scale = lo > 0 && hi >= 8 * lo ? Scale::kLog2 : Scale::kLinear;
  }
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    if (!on_x[a]) p.series_axes.push_back(a);
  }
  return p;
}

SweepPlots PlotSweep(const sim::Sweep& sweep, const std::vector<sim::PointResult>& results) {
  const SweepPlotAxes axes = ChooseSweepPlotAxes(sweep);
  SweepPlots plots;

  LineChart throughput = SweepLineChart(
      sweep, results, axes, [](const sim::PointResult& r) { return r.throughput_samples_per_s; });
  throughput.title = sweep.name + ": throughput";
  throughput.y.label = "throughput (samples/s)";
  plots.throughput = RenderLineChart(throughput);

  double max_efficiency = 0;
  for (const sim::PointResult& r : results) {
    max_efficiency = std::max(max_efficiency, r.scaling_efficiency * 100);
  }
  LineChart efficiency = SweepLineChart(
      sweep, results, axes, [](const sim::PointResult& r) { return r.scaling_efficiency * 100; });
  efficiency.title = sweep.name + ": scaling efficiency";
  efficiency.y.label = "scaling efficiency (%)";
  if (max_efficiency <= 100) {  // 0 to 100%, whatever the data
    efficiency.y.min = 0;
    efficiency.y.max = 100;
  }
  plots.scaling_efficiency = RenderLineChart(efficiency);

  plots.breakdown = RenderStackedBarChart(BreakdownChart(sweep, results));
  return plots;
}

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::string SweepPageHtml(const sim::Sweep& sweep, const SweepPlots& plots,
                          const std::string& csv) {
  std::ostringstream o;
  const std::string title = "dtsim sweep: " + sweep.name;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
    << EscapeHtml(title) << "</title>\n<style>\n"
    << "body { font-family: Helvetica, Arial, sans-serif; margin: 24px; color: #222; }\n"
    << "figure { margin: 24px 0; } svg { max-width: 100%; height: auto; }\n"
    << "table { border-collapse: collapse; font-size: 12px; }\n"
    << "th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; "
       "white-space: nowrap; }\n"
    << "th { background: #f0f0f0; position: sticky; top: 0; }\n"
    << "</style>\n</head>\n<body>\n<h1>" << EscapeHtml(title) << "</h1>\n<p>"
    << sweep.points.size() << (sweep.points.size() == 1 ? " point" : " points");
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    o << (a == 0 ? ": " : " x ") << "<code>" << EscapeHtml(sweep.axes[a].path) << "</code> ("
      << sweep.axes[a].values.size() << (sweep.axes[a].values.size() == 1 ? " value)" : " values)");
  }
  o << ". Files: <a href=\"sweep.csv\">sweep.csv</a>, <a href=\"throughput.svg\">throughput.svg"
    << "</a>, <a href=\"scaling_efficiency.svg\">scaling_efficiency.svg</a>, "
    << "<a href=\"breakdown.svg\">breakdown.svg</a>.</p>\n";
  const std::pair<const char*, const std::string*> figures[] = {
      {"Throughput", &plots.throughput},
      {"Scaling efficiency", &plots.scaling_efficiency},
      {"Time per step", &plots.breakdown}};
  for (const auto& [caption, svg] : figures) {
    o << "<h2>" << caption << "</h2>\n<figure>\n" << *svg << "</figure>\n";
  }
  o << "<h2>Points</h2>\n<table>\n";
  std::istringstream lines(csv);
  bool header = true;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    o << "<tr>";
    for (const std::string& field : SplitCsvLine(line)) {
      o << (header ? "<th>" : "<td>") << EscapeHtml(field) << (header ? "</th>" : "</td>");
    }
    o << "</tr>\n";
    header = false;
  }
  o << "</table>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace dtsim::report
