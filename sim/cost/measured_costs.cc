#include "sim/cost/measured_costs.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "common/error.h"
#include "config/torch_trace.h"

namespace dtsim::sim {
namespace {

int PassIndex(MeasuredPass p) { return p == MeasuredPass::kForward ? 0 : 1; }

// An op's work for a pass at `batch`: FLOPs (basis 0) or bytes (basis 1).
double OpWork(const models::Op& op, MeasuredPass pass, std::int64_t batch, int basis) {
  const double b = static_cast<double>(batch);
  if (basis == 0) {
    return b * (pass == MeasuredPass::kForward ? op.fwd_flops
                                                : op.bwd_input_flops + op.bwd_weight_flops);
  }
  return pass == MeasuredPass::kForward ? op.FwdBytes(b) : op.BwdBytes(b);
}

// Linear interpolation at x through (x0, y0), (x1, y1).
double Line(double x, double x0, double y0, double x1, double y1) {
  return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

}  // namespace

const char* CostSourceName(CostSource s) {
  switch (s) {
    case CostSource::kMeasured: return "measured";
    case CostSource::kInterpolated: return "interpolated";
    case CostSource::kModelled: return "modelled";
  }
  return "?";
}

MeasuredCosts::MeasuredCosts(config::OpCostTable table) : table_(std::move(table)) {
  for (const config::OpCostEntry& e : table_.entries) {
    for (MeasuredPass pass : {MeasuredPass::kForward, MeasuredPass::kBackward}) {
      const std::optional<config::OpTiming>& t =
          pass == MeasuredPass::kForward ? e.forward : e.backward;
      if (!t) continue;
      const int p = PassIndex(pass);
      by_signature_[{e.signature, p}].push_back(
          {static_cast<double>(e.batch), t->Expected(), 0, e.backward_input});
      const double flops = pass == MeasuredPass::kForward ? e.forward_flops : e.backward_flops;
      const double bytes = pass == MeasuredPass::kForward ? e.forward_bytes : e.backward_bytes;
      const double work[2] = {flops, bytes};
      for (int basis = 0; basis < 2; ++basis) {
        if (work[basis] > 0) {
          by_kind_[{e.kind, p, basis}].push_back(
              {std::log2(work[basis]), t->Expected(), work[basis] / t->Expected(), e.backward_input});
        }
      }
    }
  }
  for (auto& [key, points] : by_signature_) {
    std::sort(points.begin(), points.end(),
              [](const Point& a, const Point& b) { return a.x < b.x; });
  }
  // Entries of one kind at the same work: one point at their mean rate.
  for (auto& [key, points] : by_kind_) {
    std::sort(points.begin(), points.end(),
              [](const Point& a, const Point& b) { return a.x < b.x; });
    std::vector<Point> merged;
    for (std::size_t i = 0; i < points.size();) {
      std::size_t j = i;
      double sum = 0;
      for (; j < points.size() && points[j].x == points[i].x; ++j) sum += points[j].rate;
      Point p = points[i];
      p.rate = sum / static_cast<double>(j - i);
      merged.push_back(p);
      i = j;
    }
    points = std::move(merged);
  }
}

std::optional<MeasuredTime> MeasuredCosts::Seconds(const models::Op& op, MeasuredPass pass,
                                                   std::int64_t batch) const {
  DTSIM_CHECK(batch >= 1, "batch must be >= 1");
  const int p = PassIndex(pass);
  const double b = static_cast<double>(batch);
  if (auto it = by_signature_.find({config::OpSignature(op), p}); it != by_signature_.end()) {
    const std::vector<Point>& pts = it->second;
    // Rule 1: this batch measured.
    for (const Point& pt : pts) {
      if (pt.x == b) return MeasuredTime{pt.seconds, CostSource::kMeasured, pt.backward_input};
    }
    // Rule 2: the two measured batches around b, or the two nearest.
    const bool input = pts.front().backward_input;
    if (pts.size() >= 2) {
      auto hi = std::upper_bound(pts.begin(), pts.end(), b,
                                 [](double x, const Point& q) { return x < q.x; });
      if (hi == pts.begin()) hi = pts.begin() + 1;
      if (hi == pts.end()) hi = pts.end() - 1;
      const Point& a = *(hi - 1);
      const Point& c = *hi;
      const double t = Line(b, a.x, a.seconds, c.x, c.seconds);
      if (t > 0 && std::isfinite(t)) return MeasuredTime{t, CostSource::kInterpolated, input};
    }
    // One batch (or a line through zero): the nearest one's time per sample.
    const Point* nearest = &pts.front();
    for (const Point& pt : pts) {
      if (std::abs(std::log(pt.x / b)) < std::abs(std::log(nearest->x / b))) nearest = &pt;
    }
    return MeasuredTime{nearest->seconds * b / nearest->x, CostSource::kInterpolated, input};
  }
  // Rule 3: the kind's rates, by FLOPs where the op has them, else bytes.
  for (int basis = 0; basis < 2; ++basis) {
    const double work = OpWork(op, pass, batch, basis);
    if (!(work > 0)) continue;
    auto it = by_kind_.find({op.kind, p, basis});
    if (it == by_kind_.end()) continue;
    const std::vector<Point>& pts = it->second;
    const double x = std::log2(work);
    double rate;
    if (x <= pts.front().x) {
      rate = pts.front().rate;
    } else if (x >= pts.back().x) {
      rate = pts.back().rate;
    } else {
      auto hi = std::upper_bound(pts.begin(), pts.end(), x,
                                 [](double v, const Point& q) { return v < q.x; });
      rate = Line(x, (hi - 1)->x, (hi - 1)->rate, hi->x, hi->rate);
    }
    return MeasuredTime{work / rate, CostSource::kInterpolated, true};
  }
  return std::nullopt;
}

std::optional<double> MeasuredCosts::OptimizerSecondsPerParam() const {
  if (!table_.optimizer) return std::nullopt;
  return table_.optimizer->seconds.Expected() / static_cast<double>(table_.optimizer->params);
}

std::shared_ptr<const MeasuredCosts> WorkloadMeasuredCosts(const config::WorkloadConfig& w,
                                                           const models::ModelGraph& graph) {
  if (w.cost_model != config::CostModelKind::kMeasured) return nullptr;
  if (w.cost_table_data != nullptr) return std::make_shared<MeasuredCosts>(*w.cost_table_data);
  config::OpCostTable table = config::LoadTorchTrace(w.cost_table, graph, nullptr);
  if (table.precision != hw::PrecisionName(w.precision)) {
    throw UserError(w.cost_table_where,
                    "the trace '" + w.cost_table + "' was measured in " + table.precision +
                        ", and the workload runs in " + hw::PrecisionName(w.precision),
                    "record the trace at the workload's precision");
  }
  return std::make_shared<MeasuredCosts>(std::move(table));
}

}  // namespace dtsim::sim
