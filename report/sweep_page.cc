#include "report/sweep_page.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace dtsim::report {
namespace {

bool IsDeviceAxis(const study::SweepAxis& axis) {
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
std::string Combination(const study::Sweep& sweep, const study::SweepPoint& point,
                        const std::vector<std::size_t>& axes) {
  std::string s;
  for (std::size_t a : axes) {
    if (!s.empty()) s += ", ";
    s += ShortAxisName(sweep, a) + "=" + sweep.axes[a].values[point.choice[a]];
  }
  return s;
}

// The value of the chosen x for point i.
double XValue(const study::Sweep& sweep, const std::vector<study::PointResult>& results,
              const SweepPlotAxes& axes, std::size_t i) {
  if (axes.x_is_devices) return results[i].devices;
  const std::size_t k = sweep.points[i].choice[axes.x_axis];
  if (axes.x_categorical) return static_cast<double>(k);
  return ParseNumber(sweep.axes[axes.x_axis].values[k]);
}

// Line charts of `value(result)` against the chosen x: one per value of the
// facet axis (one in all without it), one series per combination of the
// other series axes (in order of first appearance).
template <typename Value>
std::vector<LineChart> SweepLineCharts(const study::Sweep& sweep,
                                       const std::vector<study::PointResult>& results,
                                       const SweepPlotAxes& axes, Value value) {
  LineChart base;
  base.x.label = axes.x_label;
  base.x.scale = axes.x_scale;
  base.x.include_zero = false;
  base.x.integer = axes.x_integer;
  if (axes.x_categorical) base.x.categories = sweep.axes[axes.x_axis].values;
  std::vector<std::size_t> line_axes;
  for (std::size_t a : axes.series_axes) {
    if (a != axes.facet_axis) line_axes.push_back(a);
  }
  const std::size_t panels =
      axes.facet_axis ? sweep.axes[*axes.facet_axis].values.size() : std::size_t{1};
  std::vector<LineChart> charts(panels, base);
  std::vector<std::map<std::vector<std::size_t>, std::size_t>> series_of(panels);
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    // An infeasible point has no figures to draw (sweep.csv says why).
    if (!results[i].feasible) continue;
    const study::SweepPoint& point = sweep.points[i];
    const std::size_t panel = axes.facet_axis ? point.choice[*axes.facet_axis] : 0;
    std::vector<std::size_t> key;
    for (std::size_t a : line_axes) key.push_back(point.choice[a]);
    LineChart& chart = charts[panel];
    auto [it, added] = series_of[panel].emplace(key, chart.series.size());
    if (added) chart.series.push_back({Combination(sweep, point, line_axes), {}});
    chart.series[it->second].points.push_back({XValue(sweep, results, axes, i), value(results[i])});
  }
  if (axes.facet_axis) {
    for (std::size_t k = 0; k < panels; ++k) {
      charts[k].title = ShortAxisName(sweep, *axes.facet_axis) + "=" +
                        sweep.axes[*axes.facet_axis].values[k];
    }
  }
  return charts;
}

// One chart, or a grid of panels under `title` (two columns).
std::string RenderSweepCharts(std::vector<LineChart> charts, const std::string& title,
                              const std::string& y_label, std::optional<double> y_min,
                              std::optional<double> y_max) {
  for (LineChart& c : charts) {
    c.y.label = y_label;
    c.y.min = y_min;
    c.y.max = y_max;
  }
  if (charts.size() == 1) {
    charts[0].title = title;
    return RenderLineChart(charts[0]);
  }
  ChartStyle panel;
  panel.width = 560;
  panel.height = 360;
  return RenderLineChartGrid(title, charts, 2, panel);
}

// The number of distinct combinations of `axes` among the points.
std::size_t Combinations(const study::Sweep& sweep, const std::vector<std::size_t>& axes) {
  std::set<std::vector<std::size_t>> seen;
  for (const study::SweepPoint& point : sweep.points) {
    std::vector<std::size_t> key;
    for (std::size_t a : axes) key.push_back(point.choice[a]);
    seen.insert(std::move(key));
  }
  return seen.size();
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

StackedBarChart BreakdownChart(const study::Sweep& sweep,
                               const std::vector<study::PointResult>& results) {
  StackedBarChart chart;
  chart.title = sweep.name + ": time per step";
  double max_total = 0;
  for (const study::PointResult& r : results) {
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
    const study::PointResult& r = results[i];
    if (!r.feasible) label += " (infeasible)";
    chart.bars.push_back({label,
                          {r.compute_s * unit.per_second, r.exposed_comm_s * unit.per_second,
                           r.idle_s * unit.per_second}});
  }
  return chart;
}

}  // namespace

std::string ShortAxisName(const study::Sweep& sweep, std::size_t axis) {
  const std::string key = LastKey(sweep.axes[axis].path);
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    if (a != axis && LastKey(sweep.axes[a].path) == key) return sweep.axes[axis].path;
  }
  return key;
}

SweepPlotAxes ChooseSweepPlotAxes(const study::Sweep& sweep) {
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
    if (p.x_is_devices && !sweep.axes.empty()) {  // names only: the first axis as categories
      p.x_is_devices = false;
      p.x_categorical = true;
      p.x_axis = 0;
      on_x[0] = true;
    }
  }
  if (p.x_is_devices) {
    p.x_label = "devices";
    p.x_scale = Scale::kLog2;
  } else if (p.x_categorical) {
    p.x_label = sweep.axes[p.x_axis].path;
    p.x_scale = Scale::kLinear;
    p.x_integer = false;
  } else {
    const study::SweepAxis& axis = sweep.axes[p.x_axis];
    p.x_label = axis.path;
    double lo = 0, hi = 0;
    p.x_integer = true;
    for (std::size_t k = 0; k < axis.values.size(); ++k) {
      const double v = ParseNumber(axis.values[k]);
      lo = k == 0 ? v : std::min(lo, v);
      hi = k == 0 ? v : std::max(hi, v);
      p.x_integer = p.x_integer && v == std::floor(v);
    }
    p.x_scale = lo > 0 && hi >= 8 * lo ? Scale::kLog2 : Scale::kLinear;
  }
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    if (!on_x[a]) p.series_axes.push_back(a);
  }
  // Too many lines for one chart: panels by the series axis with the
  // fewest values among those that leave at most kMaxLinesPerPanel lines
  // per panel (the first on a tie; fewer, fuller panels), else by the one
  // that leaves the fewest lines.
  if (p.series_axes.size() >= 2 && Combinations(sweep, p.series_axes) > kMaxLinesPerPanel) {
    std::size_t best_lines = 0, best_values = 0;
    bool fits = false;
    for (std::size_t a : p.series_axes) {
      std::vector<std::size_t> rest;
      for (std::size_t b : p.series_axes) {
        if (b != a) rest.push_back(b);
      }
      const std::size_t lines = Combinations(sweep, rest);
      const std::size_t values = sweep.axes[a].values.size();
      const bool a_fits = lines <= kMaxLinesPerPanel;
      const bool better = !p.facet_axis || (a_fits && !fits) ||
                          (a_fits && fits && values < best_values) ||
                          (!a_fits && !fits && lines < best_lines);
      if (better) {
        p.facet_axis = a;
        best_lines = lines;
        best_values = values;
        fits = a_fits;
      }
    }
  }
  return p;
}

SweepPlots PlotSweep(const study::Sweep& sweep, const std::vector<study::PointResult>& results) {
  const SweepPlotAxes axes = ChooseSweepPlotAxes(sweep);
  SweepPlots plots;

  plots.throughput = RenderSweepCharts(
      SweepLineCharts(sweep, results, axes,
                      [](const study::PointResult& r) { return r.throughput_samples_per_s; }),
      sweep.name + ": throughput", "throughput (samples/s)", std::nullopt, std::nullopt);

  double max_efficiency = 0;
  for (const study::PointResult& r : results) {
    max_efficiency = std::max(max_efficiency, r.scaling_efficiency * 100);
  }
  // 0 to 100%, whatever the data, unless a point is above 100%.
  const bool percent = max_efficiency <= 100;
  plots.scaling_efficiency = RenderSweepCharts(
      SweepLineCharts(sweep, results, axes,
                      [](const study::PointResult& r) { return r.scaling_efficiency * 100; }),
      sweep.name + ": scaling efficiency", "scaling efficiency (%)",
      percent ? std::optional<double>(0) : std::nullopt,
      percent ? std::optional<double>(100) : std::nullopt);

  plots.breakdown = RenderWrappedStackedBarChart(BreakdownChart(sweep, results), kBarsPerRow);
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

std::string ColumnUnit(const std::string& column) {
  static const std::map<std::string, std::string> kUnits = {
      {"batch_per_device", "samples"},
      {"global_batch", "samples"},
      {"throughput_samples_per_s", "samples/s"},
      {"step_time_s", "s"},
      {"step_time_p50_s", "s"},
      {"step_time_p95_s", "s"},
      {"step_time_p99_s", "s"},
      {"compute_s", "s"},
      {"exposed_comm_s", "s"},
      {"idle_s", "s"},
      {"scaling_efficiency", "fraction"},
      {"goodput", "fraction"},
      {"mfu", "fraction"},
      {"averaging_period", "steps"},
      {"network_bytes_per_sample", "bytes"},
      {"memory_per_device_bytes", "GiB"},
      {"tokens_per_s", "tokens/s"},
      {"model_tflops_per_device", "TFLOP/s"},
  };
  const auto it = kUnits.find(column);
  return it == kUnits.end() ? "" : it->second;
}

namespace {

// Sorts the table #points by a clicked heading (numbers as numbers, empty
// cells last in both directions) and, on load, by "#sort=COLUMN[:desc]".
constexpr const char* kSortScript = R"(<script>
(function () {
  var table = document.getElementById('points');
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  function key(cell) { return cell.hasAttribute('data-v') ? cell.getAttribute('data-v') : cell.textContent; }
  function sortBy(i, desc) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[i]), y = key(b.cells[i]);
      if (x === '' || y === '') return (x === '') - (y === '');
      var nx = Number(x), ny = Number(y);
      var c = !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
      return desc ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    heads.forEach(function (h, k) {
      h.setAttribute('aria-sort', k === i ? (desc ? 'descending' : 'ascending') : 'none');
    });
  }
  heads.forEach(function (h, i) {
    h.addEventListener('click', function () { sortBy(i, h.getAttribute('aria-sort') === 'ascending'); });
  });
  var m = /^#sort=([^:]+)(:desc)?$/.exec(decodeURIComponent(location.hash));
  if (m) {
    for (var i = 0; i < heads.length; ++i) {
      if (heads[i].getAttribute('data-col') === m[1]) { sortBy(i, !!m[2]); break; }
    }
  }
})();
</script>
)";

// A cell of the column `column`: memory shown in GiB, with the bytes kept
// as its sort key and tooltip.
std::string TableCell(const std::string& column, const std::string& field) {
  if (column == "memory_per_device_bytes" && !field.empty()) {
    char gib[32];
    std::snprintf(gib, sizeof gib, "%.2f", ParseNumber(field) / (1024.0 * 1024 * 1024));
    return "<td data-v=\"" + EscapeHtml(field) + "\" title=\"" + EscapeHtml(field) +
           " bytes\">" + gib + "</td>";
  }
  return "<td>" + EscapeHtml(field) + "</td>";
}

}  // namespace

std::string SweepPageHtml(const study::Sweep& sweep, const SweepPlots& plots,
                          const std::string& csv, const std::string& lead) {
  std::ostringstream o;
  const std::string title = "dtsim sweep: " + sweep.name;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
    << EscapeHtml(title) << "</title>\n<style>\n"
    << "body { font-family: Helvetica, Arial, sans-serif; margin: 24px; color: #222; }\n"
    << "figure { margin: 24px 0; } svg { max-width: 100%; height: auto; }\n"
    << "table { border-collapse: collapse; font-size: 12px; }\n"
    << "th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; "
       "white-space: nowrap; }\n"
    << "th { background: #f0f0f0; position: sticky; top: 0; cursor: pointer; }\n"
    << "th small { font-weight: normal; color: #666; }\n"
    << "th[aria-sort=ascending]::after { content: \" \\25B2\"; }\n"
    << "th[aria-sort=descending]::after { content: \" \\25BC\"; }\n"
    << "tr.infeasible td { background: #fdecea; color: #8a1c1c; }\n"
    << "</style>\n</head>\n<body>\n<h1>" << EscapeHtml(title) << "</h1>\n<p>"
    << sweep.points.size() << (sweep.points.size() == 1 ? " point" : " points");
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    o << (a == 0 ? ": " : " x ") << "<code>" << EscapeHtml(sweep.axes[a].path) << "</code> ("
      << sweep.axes[a].values.size() << (sweep.axes[a].values.size() == 1 ? " value)" : " values)");
  }
  o << ". Files: <a href=\"sweep.csv\">sweep.csv</a>, <a href=\"throughput.svg\">throughput.svg"
    << "</a>, <a href=\"scaling_efficiency.svg\">scaling_efficiency.svg</a>, "
    << "<a href=\"breakdown.svg\">breakdown.svg</a>.</p>\n"
    << lead;
  const std::pair<const char*, const std::string*> figures[] = {
      {"Throughput", &plots.throughput},
      {"Scaling efficiency", &plots.scaling_efficiency},
      {"Time per step", &plots.breakdown}};
  for (const auto& [caption, svg] : figures) {
    o << "<h2>" << caption << "</h2>\n<figure>\n" << *svg << "</figure>\n";
  }
  o << "<h2>Points</h2>\n<p>Click a column's heading to sort by it. Rows in red do not fit in "
       "memory or cannot be built; the <code>infeasible</code> column says why.</p>\n"
    << "<table id=\"points\">\n";
  std::istringstream lines(csv);
  std::vector<std::string> columns;
  std::size_t fits = 0, infeasible = 0;
  bool header = true;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const std::vector<std::string> fields = SplitCsvLine(line);
    if (header) {
      columns = fields;
      fits = std::find(columns.begin(), columns.end(), "fits") - columns.begin();
      infeasible = std::find(columns.begin(), columns.end(), "infeasible") - columns.begin();
      o << "<thead><tr>";
      for (const std::string& c : columns) {
        const std::string unit = ColumnUnit(c);
        // The bytes column shows GiB: its name loses "_bytes" on the page.
        const std::string shown = c == "memory_per_device_bytes" ? "memory_per_device" : c;
        o << "<th data-col=\"" << EscapeHtml(c) << "\">" << EscapeHtml(shown);
        if (!unit.empty()) o << "<br><small>" << EscapeHtml(unit) << "</small>";
        o << "</th>";
      }
      o << "</tr></thead>\n<tbody>\n";
      header = false;
      continue;
    }
    const bool bad = (fits < fields.size() && fields[fits] == "false") ||
                     (infeasible < fields.size() && !fields[infeasible].empty());
    o << (bad ? "<tr class=\"infeasible\">" : "<tr>");
    for (std::size_t k = 0; k < fields.size(); ++k) {
      o << TableCell(k < columns.size() ? columns[k] : "", fields[k]);
    }
    o << "</tr>\n";
  }
  o << "</tbody>\n</table>\n" << kSortScript << "</body>\n</html>\n";
  return o.str();
}

}  // namespace dtsim::report
