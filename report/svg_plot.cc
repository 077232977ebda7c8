#include "report/svg_plot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "common/error.h"

namespace dtsim::report {
namespace {

constexpr int kTargetTicks = 6;        // a linear axis gets about this many ticks
constexpr int kMaxLog2Ticks = 12;      // beyond, every k-th power of two
constexpr double kCharWidth = 0.6;     // of the font size: average glyph width estimate
constexpr double kLegendRow = 18;      // pixels per legend entry
constexpr double kLegendSwatch = 22;   // sample line, pixels
constexpr double kLegendGap = 14;      // between the plot and the legend, pixels
constexpr double kMaxLegendWidth = 420;
constexpr std::size_t kMaxLegendEntries = 60;
constexpr double kMinPlotWidth = 480;   // the image widens to keep it
constexpr double kMinBarSlot = 12;     // pixels per bar at least
constexpr std::size_t kMaxBarLabelChars = 40;

// "%.2f": coordinates in SVG output, locale-independent for the C locale
// programs start in.
std::string Px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

double TextWidth(std::size_t chars, int font_size) {
  return static_cast<double>(chars) * kCharWidth * font_size;
}

std::string Truncate(const std::string& s, std::size_t max_chars) {
  if (s.size() <= max_chars) return s;
  return s.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
}

// 1, 2 or 5 times a power of ten, about span / target.
double NiceStep(double span, int target) {
  const double raw = span / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * magnitude;
}

struct ResolvedAxis {
  Range range;
  std::vector<double> ticks;
};

ResolvedAxis ResolveLinear(const AxisSpec& spec, const std::vector<double>& data) {
  double lo = 0, hi = 1;
  if (!data.empty()) {
    lo = *std::min_element(data.begin(), data.end());
    hi = *std::max_element(data.begin(), data.end());
  }
  if (spec.include_zero) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  if (spec.min) lo = *spec.min;
  if (spec.max) hi = *spec.max;
  if (hi <= lo) {  // one value: centre it
    const double d = lo != 0 ? std::abs(lo) * 0.5 : 1;
    if (!spec.min) lo -= d;
    if (!spec.max) hi += d;
    if (hi <= lo) hi = lo + 1;
  }
  double step = NiceStep(hi - lo, kTargetTicks);
  if (spec.integer) step = std::max(1.0, step);  // 1-2-5 steps are whole from 1 up
  if (!spec.min) lo = std::floor(lo / step + 1e-9) * step;
  if (!spec.max) hi = std::ceil(hi / step - 1e-9) * step;
  ResolvedAxis r{{lo, hi}, {}};
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (int k = 0;; ++k) {
    double t = first + k * step;
    if (t > hi + step * 1e-9) break;
    if (std::abs(t) < step * 1e-9) t = 0;
    r.ticks.push_back(t);
  }
  return r;
}

ResolvedAxis ResolveLog2(const AxisSpec& spec, const std::vector<double>& data) {
  double data_lo = std::numeric_limits<double>::infinity(), data_hi = 0;
  for (double v : data) {
    if (v > 0) {
      data_lo = std::min(data_lo, v);
      data_hi = std::max(data_hi, v);
    }
  }
  if (data_hi == 0) data_lo = 1, data_hi = 2;
  double lo = spec.min ? *spec.min : std::ldexp(1.0, static_cast<int>(std::floor(std::log2(data_lo))));
  double hi = spec.max ? *spec.max : std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(data_hi))));
  if (hi <= lo) {  // one value: centre it
    if (!spec.min) lo /= 2;
    if (!spec.max) hi *= 2;
    if (hi <= lo) hi = lo * 2;
  }
  DTSIM_CHECK(lo > 0, "a log2 axis starts above 0");
  ResolvedAxis r{{lo, hi}, {}};
  const int first = static_cast<int>(std::ceil(std::log2(lo) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log2(hi) + 1e-9));
  const int count = last - first + 1;
  const int stride = std::max(1, (count + kMaxLog2Ticks - 1) / kMaxLog2Ticks);
  for (int e = first; e <= last; e += stride) r.ticks.push_back(std::ldexp(1.0, e));
  return r;
}

// A categorical axis: one slot per category, centred on 0, 1, ...; a tick
// on every category (LayOutLineChart thins them where labels would overlap).
ResolvedAxis ResolveCategorical(const AxisSpec& spec) {
  ResolvedAxis r{{-0.5, static_cast<double>(spec.categories.size()) - 0.5}, {}};
  for (std::size_t k = 0; k < spec.categories.size(); ++k) {
    r.ticks.push_back(static_cast<double>(k));
  }
  return r;
}

ResolvedAxis Resolve(const AxisSpec& spec, const std::vector<double>& data) {
  if (!spec.categories.empty()) return ResolveCategorical(spec);
  return spec.scale == Scale::kLog2 ? ResolveLog2(spec, data) : ResolveLinear(spec, data);
}

// The scale values are mapped with: a categorical axis is linear in the
// category's index.
Scale ScaleOf(const AxisSpec& spec) {
  return spec.categories.empty() ? spec.scale : Scale::kLinear;
}

// How a value of `spec` reads in a tooltip: its category, or the number.
std::string ValueText(const AxisSpec& spec, double v) {
  if (!spec.categories.empty()) {
    const double k = std::round(v);
    if (k >= 0 && k < static_cast<double>(spec.categories.size()) && k == v) {
      return spec.categories[static_cast<std::size_t>(k)];
    }
  }
  return FormatTick(v);
}

// The points of `s` that can be drawn on `x`/`y`, in x order.
std::vector<Series::Point> Drawable(const Series& s, Scale x, Scale y) {
  std::vector<Series::Point> points;
  for (const Series::Point& p : s.points) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
    if ((x == Scale::kLog2 && p.x <= 0) || (y == Scale::kLog2 && p.y <= 0)) continue;
    points.push_back(p);
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const Series::Point& a, const Series::Point& b) { return a.x < b.x; });
  return points;
}

// Legend entries (names), at most kMaxLegendEntries with the last one
// saying how many were left out; empty when no entry has a name.
std::vector<std::string> LegendEntries(const std::vector<std::string>& names) {
  std::vector<std::string> entries;
  for (const std::string& n : names) {
    if (!n.empty()) entries.push_back(n);
  }
  if (entries.size() > kMaxLegendEntries) {
    const std::size_t more = entries.size() - (kMaxLegendEntries - 1);
    entries.resize(kMaxLegendEntries - 1);
    entries.push_back("... and " + std::to_string(more) + " more");
  }
  return entries;
}

double LegendWidth(const std::vector<std::string>& entries, int font_size) {
  if (entries.empty()) return 0;
  std::size_t chars = 0;
  for (const std::string& e : entries) chars = std::max(chars, e.size());
  return std::min(kMaxLegendWidth, kLegendSwatch + 8 + TextWidth(chars, font_size));
}

std::size_t LegendChars(double legend_width, int font_size) {
  // + 1e-9: LegendWidth's product of the same numbers may round below a
  // whole count (3 x 0.6 x 12 = 21.599...), which truncated 3-character
  // names to "...".
  return static_cast<std::size_t>((legend_width - kLegendSwatch - 8) / (kCharWidth * font_size) +
                                  1e-9);
}

std::vector<std::string> SeriesNames(const LineChart& chart) {
  std::vector<std::string> names;
  for (const Series& s : chart.series) names.push_back(s.name);
  return names;
}

// Labels of an axis's ticks, formatted alike: on a linear axis that reaches
// 10,000, all in k/M/G (50k, 100k rather than 50000, 100k); powers of two
// on a log2 axis as whole numbers up to 1,000,000.
std::vector<std::string> TickLabels(const std::vector<double>& ticks, const AxisSpec& spec) {
  if (!spec.categories.empty()) {
    std::vector<std::string> labels;
    for (double t : ticks) labels.push_back(ValueText(spec, t));
    return labels;
  }
  const Scale scale = spec.scale;
  double max = 0;
  for (double t : ticks) max = std::max(max, std::abs(t));
  std::vector<std::string> labels;
  for (double t : ticks) {
    char buf[32];
    if (t == 0) {
      labels.emplace_back("0");
    } else if (scale == Scale::kLog2 && t == std::round(t) && max < 1e6) {
      std::snprintf(buf, sizeof buf, "%.0f", t);
      labels.emplace_back(buf);
    } else if (scale == Scale::kLinear && max >= 1e4 && std::abs(t) < 1e6) {
      std::snprintf(buf, sizeof buf, "%.3gk", t / 1e3);
      labels.emplace_back(buf);
    } else {
      labels.push_back(FormatTick(t));
    }
  }
  return labels;
}

// What both kinds of chart share: the frame, the title, the y axis (ticks,
// grid, label) and the legend.
class SvgWriter {
 public:
  SvgWriter(int width, int height, const ChartStyle& style, const std::string& title)
      : style_(style) {
    o_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
       << height << "\" viewBox=\"0 0 " << width << ' ' << height
       << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"" << style.font_size
       << "\">\n";
    o_ << "<title>" << EscapeXml(title) << "</title>\n";
    o_ << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height
       << "\" fill=\"#ffffff\"/>\n";
    o_ << "<text x=\"" << Px(width / 2.0) << "\" y=\"" << Px(style.margin_top * 0.6)
       << "\" text-anchor=\"middle\" font-size=\"" << style.font_size + 3
       << "\" font-weight=\"bold\">" << EscapeXml(title) << "</text>\n";
  }

  std::ostringstream& out() { return o_; }

  // Horizontal grid lines and labels at `ticks`, and the y axis label.
  void YAxis(const Box& plot, const AxisTransform& y, const AxisSpec& spec,
             const std::vector<double>& ticks, const std::string& label) {
    o_ << "<g class=\"y-axis\">\n";
    const std::vector<std::string> labels = TickLabels(ticks, spec);
    for (std::size_t i = 0; i < ticks.size(); ++i) {
      const std::string py = Px(y(ticks[i]));
      o_ << "<line x1=\"" << Px(plot.left) << "\" y1=\"" << py << "\" x2=\"" << Px(plot.right)
         << "\" y2=\"" << py << "\" stroke=\"#e3e3e3\"/>\n";
      o_ << "<text x=\"" << Px(plot.left - 6) << "\" y=\""
         << Px(y(ticks[i]) + style_.font_size * 0.35) << "\" text-anchor=\"end\">"
         << EscapeXml(labels[i]) << "</text>\n";
    }
    const double cy = (plot.top + plot.bottom) / 2;
    o_ << "<text transform=\"translate(" << Px(style_.font_size + 4) << "," << Px(cy)
       << ") rotate(-90)\" text-anchor=\"middle\">" << EscapeXml(label) << "</text>\n";
    o_ << "</g>\n";
  }

  // Vertical grid lines and labels at `ticks`, and the x axis label at the
  // bottom of an image `height` pixels high.
  void XAxis(const Box& plot, const AxisTransform& x, const AxisSpec& spec,
             const std::vector<double>& ticks, const std::string& label, int height) {
    o_ << "<g class=\"x-axis\">\n";
    const std::vector<std::string> labels = TickLabels(ticks, spec);
    for (std::size_t i = 0; i < ticks.size(); ++i) {
      const std::string px = Px(x(ticks[i]));
      o_ << "<line x1=\"" << px << "\" y1=\"" << Px(plot.top) << "\" x2=\"" << px << "\" y2=\""
         << Px(plot.bottom) << "\" stroke=\"#e3e3e3\"/>\n";
      o_ << "<text x=\"" << px << "\" y=\"" << Px(plot.bottom + style_.font_size + 6)
         << "\" text-anchor=\"middle\">" << EscapeXml(labels[i]) << "</text>\n";
    }
    o_ << "<text x=\"" << Px((plot.left + plot.right) / 2) << "\" y=\"" << Px(height - 12)
       << "\" text-anchor=\"middle\">" << EscapeXml(label) << "</text>\n";
    o_ << "</g>\n";
  }

  void Frame(const Box& plot) {
    o_ << "<rect x=\"" << Px(plot.left) << "\" y=\"" << Px(plot.top) << "\" width=\""
       << Px(plot.right - plot.left) << "\" height=\"" << Px(plot.bottom - plot.top)
       << "\" fill=\"none\" stroke=\"#808080\"/>\n";
  }

  // Entries top-down from the plot's top right; `swatch(i)` writes entry i's
  // sample at (x, y) = its left end and middle.
  template <typename Swatch>
  void Legend(const Box& plot, double legend_width, const std::vector<std::string>& entries,
              Swatch swatch) {
    if (entries.empty()) return;
    const std::size_t chars = LegendChars(legend_width, style_.font_size);
    const double x = plot.right + kLegendGap;
    o_ << "<g class=\"legend\">\n";
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const double y = plot.top + 8 + kLegendRow * static_cast<double>(i);
      swatch(i, x, y);
      o_ << "<text x=\"" << Px(x + kLegendSwatch + 6) << "\" y=\""
         << Px(y + style_.font_size * 0.35) << "\">" << EscapeXml(Truncate(entries[i], chars))
         << "</text>\n";
    }
    o_ << "</g>\n";
  }

  std::string Finish() {
    o_ << "</svg>\n";
    return o_.str();
  }

 private:
  const ChartStyle& style_;
  std::ostringstream o_;
};

}  // namespace

const char* Colour(std::size_t i) {
  static constexpr std::array<const char*, 10> kPalette = {
      "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[i % kPalette.size()];
}

std::string SeriesColour(std::size_t i, std::size_t n) {
  if (n <= 10) return Colour(i);
  // HSL to RGB (CSS Color Module Level 3, section 4.2.4): hue i/n of the
  // circle, saturation 65%, lightness 42% or 62% by turns.
  const double h = static_cast<double>(i % n) / static_cast<double>(n);
  const double sat = 0.65, light = i % 2 == 0 ? 0.42 : 0.62;
  const double m2 = light <= 0.5 ? light * (1 + sat) : light + sat - light * sat;
  const double m1 = 2 * light - m2;
  auto channel = [&](double hh) {
    hh -= std::floor(hh);
    double v = m1;
    if (hh * 6 < 1) {
      v = m1 + (m2 - m1) * hh * 6;
    } else if (hh * 2 < 1) {
      v = m2;
    } else if (hh * 3 < 2) {
      v = m1 + (m2 - m1) * (2.0 / 3 - hh) * 6;
    }
    return static_cast<int>(std::lround(v * 255));
  };
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", channel(h + 1.0 / 3), channel(h),
                channel(h - 1.0 / 3));
  return buf;
}

std::string FormatTick(double v) {
  char buf[32];
  const double a = std::abs(v);
  if (v == 0) return "0";
  if (a < 1e5 && v == std::round(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (a >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.3gG", v / 1e9);
  } else if (a >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
  } else if (a >= 1e4) {
    std::snprintf(buf, sizeof buf, "%.3gk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  }
  return buf;
}

std::string EscapeXml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

AxisTransform::AxisTransform(Scale scale, Range range, double pixel_at_min, double pixel_at_max)
    : scale_(scale), pixel_at_min_(pixel_at_min), pixel_span_(pixel_at_max - pixel_at_min) {
  DTSIM_CHECK(range.min < range.max, "an axis range is not empty");
  DTSIM_CHECK(scale != Scale::kLog2 || range.min > 0, "a log2 axis starts above 0");
  t_min_ = scale == Scale::kLog2 ? std::log2(range.min) : range.min;
  t_span_ = (scale == Scale::kLog2 ? std::log2(range.max) : range.max) - t_min_;
}

double AxisTransform::operator()(double value) const {
  const double t = scale_ == Scale::kLog2 ? std::log2(value) : value;
  return pixel_at_min_ + (t - t_min_) / t_span_ * pixel_span_;
}

LineChartLayout LayOutLineChart(const LineChart& chart, const ChartStyle& style) {
  std::vector<double> xs, ys;
  for (const Series& s : chart.series) {
    for (const Series::Point& p : Drawable(s, ScaleOf(chart.x), ScaleOf(chart.y))) {
      xs.push_back(p.x);
      ys.push_back(p.y);
    }
  }
  const ResolvedAxis x = Resolve(chart.x, xs);
  const ResolvedAxis y = Resolve(chart.y, ys);
  const std::vector<std::string> entries = LegendEntries(SeriesNames(chart));

  LineChartLayout l;
  l.legend_width = LegendWidth(entries, style.font_size);
  const double legend_space = entries.empty() ? 0 : kLegendGap + l.legend_width;
  l.width = std::max(style.width, static_cast<int>(std::ceil(style.margin_left + kMinPlotWidth +
                                                             legend_space + style.margin_right)));
  const double legend_height = 16 + kLegendRow * static_cast<double>(entries.size());
  l.height = std::max(style.height, static_cast<int>(std::ceil(style.margin_top + legend_height +
                                                               style.margin_bottom)));
  l.plot = {static_cast<double>(style.margin_left), static_cast<double>(style.margin_top),
            l.width - style.margin_right - legend_space,
            static_cast<double>(l.height - style.margin_bottom)};
  l.x = x.range;
  l.y = y.range;
  l.x_ticks = x.ticks;
  l.y_ticks = y.ticks;
  if (!chart.x.categories.empty()) {
    // Every k-th category's label, so that labels (centred, one line) keep
    // a gap of two characters.
    std::size_t chars = 0;
    for (const std::string& c : chart.x.categories) chars = std::max(chars, c.size());
    const double slot = (l.plot.right - l.plot.left) / static_cast<double>(x.ticks.size());
    const auto stride = static_cast<std::size_t>(
        std::ceil(TextWidth(chars + 2, style.font_size) / std::max(slot, 1.0)));
    l.x_ticks.clear();
    for (std::size_t k = 0; k < x.ticks.size(); k += std::max<std::size_t>(1, stride)) {
      l.x_ticks.push_back(x.ticks[k]);
    }
  }
  return l;
}

// A point's circle with a tooltip naming its series and coordinates.
void WriteMarker(std::ostream& o, const std::string& series, const AxisSpec& x,
                 const AxisSpec& y, const Series::Point& p, double cx, double cy,
                 double radius) {
  o << "<circle cx=\"" << Px(cx) << "\" cy=\"" << Px(cy) << "\" r=\"" << radius << "\"><title>"
    << EscapeXml((series.empty() ? "" : series + ": ") + x.label + " " + ValueText(x, p.x) +
                 ", " + y.label + " " + ValueText(y, p.y))
    << "</title></circle>\n";
}

std::string RenderLineChart(const LineChart& chart, const ChartStyle& style) {
  const LineChartLayout l = LayOutLineChart(chart, style);
  const AxisTransform tx(ScaleOf(chart.x), l.x, l.plot.left, l.plot.right);
  const AxisTransform ty(ScaleOf(chart.y), l.y, l.plot.bottom, l.plot.top);
  SvgWriter svg(l.width, l.height, style, chart.title);
  std::ostringstream& o = svg.out();

  svg.YAxis(l.plot, ty, chart.y, l.y_ticks, chart.y.label);
  svg.XAxis(l.plot, tx, chart.x, l.x_ticks, chart.x.label, l.height);
  svg.Frame(l.plot);

  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    const std::vector<Series::Point> points = Drawable(s, ScaleOf(chart.x), ScaleOf(chart.y));
    const std::string colour = SeriesColour(i, chart.series.size());
    o << "<g class=\"series\" fill=\"" << colour << "\">\n";
    if (points.size() > 1) {
      o << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\"";
      for (std::size_t k = 0; k < points.size(); ++k) {
        o << (k ? " " : "") << Px(tx(points[k].x)) << ',' << Px(ty(points[k].y));
      }
      o << "\"/>\n";
    }
    for (const Series::Point& p : points) {
      WriteMarker(o, s.name, chart.x, chart.y, p, tx(p.x), ty(p.y), 3.5);
    }
    o << "</g>\n";
  }

  // Legend entries follow the series with a name, in order.
  std::vector<std::size_t> named;
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    if (!chart.series[i].name.empty()) named.push_back(i);
  }
  const std::vector<std::string> entries = LegendEntries(SeriesNames(chart));
  svg.Legend(l.plot, l.legend_width, entries, [&](std::size_t e, double x, double y) {
    if (e + 1 == entries.size() && entries.size() < named.size()) return;  // "... more"
    const std::size_t i = named[e];
    o << "<line x1=\"" << Px(x) << "\" y1=\"" << Px(y) << "\" x2=\"" << Px(x + kLegendSwatch)
      << "\" y2=\"" << Px(y) << "\" stroke=\"" << SeriesColour(i, chart.series.size())
      << "\" stroke-width=\"2\"/>\n<circle cx=\"" << Px(x + kLegendSwatch / 2) << "\" cy=\""
      << Px(y) << "\" r=\"3.5\" fill=\"" << SeriesColour(i, chart.series.size()) << "\"/>\n";
  });
  return svg.Finish();
}

namespace {

// The line chart a scatter chart is laid out as: its series, plus an empty
// one named after the diagonal so that the legend makes room for it.
LineChart ScatterAsLineChart(const ScatterChart& chart) {
  LineChart line{chart.title, chart.x, chart.y, chart.series};
  if (chart.diagonal) line.series.push_back({*chart.diagonal, {}});
  return line;
}

constexpr const char* kDiagonalColour = "#808080";

}  // namespace

LineChartLayout LayOutScatterChart(const ScatterChart& chart, const ChartStyle& style) {
  return LayOutLineChart(ScatterAsLineChart(chart), style);
}

std::string RenderScatterChart(const ScatterChart& chart, const ChartStyle& style) {
  DTSIM_CHECK(!chart.diagonal || chart.x.scale == chart.y.scale,
              "the diagonal of a scatter chart needs x and y on the same scale");
  const LineChart line = ScatterAsLineChart(chart);
  const LineChartLayout l = LayOutLineChart(line, style);
  const AxisTransform tx(ScaleOf(chart.x), l.x, l.plot.left, l.plot.right);
  const AxisTransform ty(ScaleOf(chart.y), l.y, l.plot.bottom, l.plot.top);
  SvgWriter svg(l.width, l.height, style, chart.title);
  std::ostringstream& o = svg.out();
  svg.YAxis(l.plot, ty, chart.y, l.y_ticks, chart.y.label);
  svg.XAxis(l.plot, tx, chart.x, l.x_ticks, chart.x.label, l.height);
  svg.Frame(l.plot);

  if (chart.diagonal) {
    // y = x between where it enters and leaves the plot: from the larger of
    // the two minima to the smaller of the two maxima.
    const double lo = std::max(l.x.min, l.y.min), hi = std::min(l.x.max, l.y.max);
    if (lo < hi) {
      o << "<line class=\"diagonal\" x1=\"" << Px(tx(lo)) << "\" y1=\"" << Px(ty(lo))
        << "\" x2=\"" << Px(tx(hi)) << "\" y2=\"" << Px(ty(hi)) << "\" stroke=\""
        << kDiagonalColour << "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n";
    }
  }
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    o << "<g class=\"series\" fill=\"" << SeriesColour(i, chart.series.size())
      << "\" fill-opacity=\"0.7\">\n";
    for (const Series::Point& p : Drawable(s, ScaleOf(chart.x), ScaleOf(chart.y))) {
      WriteMarker(o, s.name, chart.x, chart.y, p, tx(p.x), ty(p.y), 3);
    }
    o << "</g>\n";
  }

  // Legend entries follow the named series, then the diagonal.
  std::vector<std::size_t> named;
  for (std::size_t i = 0; i < line.series.size(); ++i) {
    if (!line.series[i].name.empty()) named.push_back(i);
  }
  const std::vector<std::string> entries = LegendEntries(SeriesNames(line));
  svg.Legend(l.plot, l.legend_width, entries, [&](std::size_t e, double x, double y) {
    if (e + 1 == entries.size() && entries.size() < named.size()) return;  // "... more"
    const std::size_t i = named[e];
    if (i == chart.series.size()) {  // the diagonal
      o << "<line x1=\"" << Px(x) << "\" y1=\"" << Px(y) << "\" x2=\"" << Px(x + kLegendSwatch)
        << "\" y2=\"" << Px(y) << "\" stroke=\"" << kDiagonalColour
        << "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n";
      return;
    }
    o << "<circle cx=\"" << Px(x + kLegendSwatch / 2) << "\" cy=\"" << Px(y)
      << "\" r=\"3.5\" fill=\"" << SeriesColour(i, chart.series.size()) << "\"/>\n";
  });
  return svg.Finish();
}

namespace {

// An SVG document and its size in pixels.
struct SizedSvg {
  std::string text;
  int width = 0;
  int height = 0;
};

SizedSvg StackedBarChartSvg(const StackedBarChart& chart, const ChartStyle& style) {
  const std::size_t n = chart.bars.size();
  std::vector<double> totals;
  std::size_t label_chars = 0;
  for (const StackedBarChart::Bar& b : chart.bars) {
    double total = 0;
    for (double v : b.values) total += std::max(0.0, v);
    totals.push_back(total);
    label_chars = std::max(label_chars, std::min(b.label.size(), kMaxBarLabelChars));
  }
  AxisSpec y_spec;
  y_spec.label = chart.y_label;
  y_spec.max = chart.y_max;
  const ResolvedAxis y = ResolveLinear(y_spec, totals);

  const std::vector<std::string> entries = LegendEntries(chart.segments);
  const double legend_width = LegendWidth(entries, style.font_size);
  const double legend_space = entries.empty() ? 0 : kLegendGap + legend_width;
  const std::size_t slots = std::max(n, chart.slots);
  const double min_plot = std::max(kMinPlotWidth, kMinBarSlot * static_cast<double>(slots));
  const int width = std::max(
      style.width,
      static_cast<int>(std::ceil(style.margin_left + min_plot + legend_space + style.margin_right)));
  // Labels are rotated 45 degrees: their height is about their length / sqrt(2).
  const double label_height = TextWidth(label_chars, style.font_size) * 0.71 + 10;
  const double margin_bottom = std::max<double>(style.margin_bottom, label_height + 34);
  const double legend_height = 16 + kLegendRow * static_cast<double>(entries.size());
  const int height = std::max(
      style.height, static_cast<int>(std::ceil(style.margin_top + std::max(legend_height, 160.0) +
                                               margin_bottom)));
  const Box plot{static_cast<double>(style.margin_left), static_cast<double>(style.margin_top),
                 width - style.margin_right - legend_space, height - margin_bottom};
  const AxisTransform ty(Scale::kLinear, y.range, plot.bottom, plot.top);

  SvgWriter svg(width, height, style, chart.title);
  std::ostringstream& o = svg.out();
  svg.YAxis(plot, ty, y_spec, y.ticks, chart.y_label);

  const double slot = slots == 0 ? 0 : (plot.right - plot.left) / static_cast<double>(slots);
  const double bar_width = std::max(1.0, slot * 0.7);
  // Every k-th label, so that labels are at least a line apart.
  const std::size_t stride =
      slot <= 0 ? 1 : std::max<std::size_t>(1, static_cast<std::size_t>(
                                                   std::ceil(style.font_size * 1.3 / slot)));
  auto colour = [&](std::size_t s) {
    return s < chart.colours.size() ? chart.colours[s].c_str() : Colour(s);
  };
  for (std::size_t b = 0; b < n; ++b) {
    const StackedBarChart::Bar& bar = chart.bars[b];
    const double cx = plot.left + slot * (static_cast<double>(b) + 0.5);
    o << "<g class=\"bar\">\n";
    double base = 0;
    for (std::size_t s = 0; s < bar.values.size(); ++s) {
      const double v = std::max(0.0, bar.values[s]);
      const double top = ty(base + v), bottom = ty(base);
      base += v;
      o << "<rect x=\"" << Px(cx - bar_width / 2) << "\" y=\"" << Px(top) << "\" width=\""
        << Px(bar_width) << "\" height=\"" << Px(bottom - top) << "\" fill=\"" << colour(s)
        << "\"><title>"
        << EscapeXml(bar.label + ": " + (s < chart.segments.size() ? chart.segments[s] : "") +
                     " " + FormatTick(v))
        << "</title></rect>\n";
    }
    if (b % stride == 0) {
      const double ly = plot.bottom + 10;
      o << "<text transform=\"translate(" << Px(cx + style.font_size * 0.3) << "," << Px(ly)
        << ") rotate(-45)\" text-anchor=\"end\">"
        << EscapeXml(Truncate(bar.label, kMaxBarLabelChars)) << "</text>\n";
    }
    o << "</g>\n";
  }
  o << "<text x=\"" << Px((plot.left + plot.right) / 2) << "\" y=\"" << Px(height - 12)
    << "\" text-anchor=\"middle\">" << EscapeXml(chart.x_label) << "</text>\n";
  svg.Frame(plot);
  svg.Legend(plot, legend_width, entries, [&](std::size_t s, double x, double yy) {
    o << "<rect x=\"" << Px(x + 4) << "\" y=\"" << Px(yy - 6) << "\" width=\"14\" height=\"12\" "
      << "fill=\"" << colour(s) << "\"/>\n";
  });
  return {svg.Finish(), width, height};
}

// One SVG of `panels` in a grid of `columns` under `title`: each panel a
// nested <svg> at its cell's top-left corner; a column as wide as its
// widest panel, a row as high as its highest.
std::string ComposeGrid(const std::string& title, const std::vector<SizedSvg>& panels,
                        int columns, const ChartStyle& style) {
  const std::size_t cols = static_cast<std::size_t>(std::max(1, columns));
  const std::size_t rows = (panels.size() + cols - 1) / cols;
  std::vector<int> col_width(std::min(cols, std::max<std::size_t>(1, panels.size())), 0);
  std::vector<int> row_height(rows, 0);
  for (std::size_t i = 0; i < panels.size(); ++i) {
    col_width[i % cols] = std::max(col_width[i % cols], panels[i].width);
    row_height[i / cols] = std::max(row_height[i / cols], panels[i].height);
  }
  int width = 0, height = style.margin_top;
  for (int w : col_width) width += w;
  for (int h : row_height) height += h;
  SvgWriter svg(std::max(width, 1), std::max(height, style.margin_top), style, title);
  std::ostringstream& o = svg.out();
  int y = style.margin_top;
  for (std::size_t r = 0; r < rows; ++r) {
    int x = 0;
    for (std::size_t c = 0; c < cols && r * cols + c < panels.size(); ++c) {
      const std::string& text = panels[r * cols + c].text;
      // "<svg " -> "<svg x=.. y=.. ": the nested panel's position.
      o << "<svg x=\"" << x << "\" y=\"" << y << "\" " << text.substr(5);
      x += col_width[c];
    }
    y += row_height[r];
  }
  return svg.Finish();
}

}  // namespace

std::string RenderStackedBarChart(const StackedBarChart& chart, const ChartStyle& style) {
  return StackedBarChartSvg(chart, style).text;
}

std::string RenderWrappedStackedBarChart(const StackedBarChart& chart, std::size_t bars_per_row,
                                         const ChartStyle& style) {
  DTSIM_CHECK(bars_per_row >= 1, "a row holds at least one bar");
  if (chart.bars.size() <= bars_per_row) return RenderStackedBarChart(chart, style);
  // All rows on the range the whole chart would have.
  std::vector<double> totals;
  for (const StackedBarChart::Bar& b : chart.bars) {
    double total = 0;
    for (double v : b.values) total += std::max(0.0, v);
    totals.push_back(total);
  }
  AxisSpec y_spec;
  y_spec.max = chart.y_max;
  const double y_max = ResolveLinear(y_spec, totals).range.max;
  std::vector<SizedSvg> rows;
  for (std::size_t first = 0; first < chart.bars.size(); first += bars_per_row) {
    const std::size_t last = std::min(chart.bars.size(), first + bars_per_row);
    StackedBarChart row = chart;
    row.title = "bars " + std::to_string(first + 1) + " to " + std::to_string(last) + " of " +
                std::to_string(chart.bars.size());
    row.bars.assign(chart.bars.begin() + static_cast<std::ptrdiff_t>(first),
                    chart.bars.begin() + static_cast<std::ptrdiff_t>(last));
    row.y_max = y_max;
    row.slots = bars_per_row;
    rows.push_back(StackedBarChartSvg(row, style));
  }
  return ComposeGrid(chart.title, rows, 1, style);
}

std::string RenderLineChartGrid(const std::string& title, const std::vector<LineChart>& panels,
                                int columns, const ChartStyle& style) {
  // The union of the panels' automatic y ranges, given to every panel
  // that does not fix its own.
  std::optional<Range> y;
  for (const LineChart& panel : panels) {
    const Range r = LayOutLineChart(panel, style).y;
    y = y ? Range{std::min(y->min, r.min), std::max(y->max, r.max)} : r;
  }
  std::vector<SizedSvg> svgs;
  for (LineChart panel : panels) {
    if (y && !panel.y.min) panel.y.min = y->min;
    if (y && !panel.y.max) panel.y.max = y->max;
    const LineChartLayout l = LayOutLineChart(panel, style);
    svgs.push_back({RenderLineChart(panel, style), l.width, l.height});
  }
  return ComposeGrid(title, svgs, columns, style);
}

}  // namespace dtsim::report
