#include "study/tta_table.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/report.h"
#include "study/tta_text.h"

namespace dtsim::study {
namespace {

// A point's estimate, why it has none or how it was had, and its rate
// (NaN: none).
struct PointEstimate {
  sim::StepsEstimate steps;
  std::string note;
  double lr = std::numeric_limits<double>::quiet_NaN();
};

// The note of a measured setting that missed the target: seeds that did not
// reach it and those that diverged.
std::string MissedNote(const TtaPoint& p, const sim::StepsEstimate& e,
                       const std::vector<TtaRun>& runs, bool grid, std::int64_t steps) {
  std::string note = std::to_string(e.seeds - e.reached) + " of " + std::to_string(e.seeds) +
                     " seeds did not reach the target in " + std::to_string(steps) + " updates" +
                     (grid ? " at any rate of the grid (the closest rate's count)" : "");
  for (const TtaRun& r : runs) {
    if (r.family.Key() == p.family.Key() && r.workers == p.workers && r.curve.diverged_at >= 0) {
      note += "; seed " + std::to_string(r.seed) + " diverged (loss not finite at update " +
              std::to_string(r.curve.diverged_at) + ")";
    }
  }
  return note;
}

// Measured where p's worker count was, else fitted across the family's
// measured counts that reached the target.
PointEstimate EstimatePoint(const TtaPoint& p, const Measured& m, const std::vector<TtaRun>& runs,
                            const Proxy& proxy, const TtaOptions& o) {
  const std::vector<int>& ws = m.workers;
  const std::vector<sim::StepsEstimate>& es = m.steps;
  std::vector<int> ok_w;
  std::vector<sim::StepsEstimate> ok_e;
  bool missed_below = false;
  for (std::size_t k = 0; k < ws.size(); ++k) {
    if (es[k].valid()) {
      ok_w.push_back(ws[k]);
      ok_e.push_back(es[k]);
    }
    missed_below = missed_below || (ws[k] <= p.workers && !es[k].valid());
  }
  PointEstimate r;
  const bool grid = !proxy.grid.empty();
  // The rate of the point: the grid's choice where measured (none where no
  // rate reached the target), else the scaled --lr.
  if (!grid) r.lr = ScaledLr(o, p.family, p.workers, proxy.batch, proxy.rule);
  const auto at = std::find(ws.begin(), ws.end(), p.workers);
  if (at != ws.end()) {
    const auto k = static_cast<std::size_t>(at - ws.begin());
    r.steps = es[k];
    if (grid) r.lr = m.lr[k];
    if (!r.steps.valid()) r.note = MissedNote(p, r.steps, runs, grid, o.steps);
  } else if (missed_below) {
    // Fewer workers already missed the target: more are not predicted.
    r.note = "fewer measured workers did not reach the target: not extrapolated";
  } else if (ok_w.size() >= 2) {
    r.steps = sim::WorkersFit(ok_w, ok_e).At(p.workers);
    if (r.steps.extrapolated) r.note = "extrapolated from the measured worker counts";
  } else {
    r.note = "fewer than 2 measured worker counts reached the target: no fit";
  }
  return r;
}

}  // namespace

TtaTable TabulateTta(const Sweep& sweep, const std::vector<TtaPoint>& points,
                     const std::map<Family, Measured>& estimates, const std::vector<TtaRun>& runs,
                     const Proxy& proxy, const TtaOptions& o) {
  TtaTable t;
  std::string& csv = t.csv;
  for (const SweepAxis& a : sweep.axes) csv += sim::CsvField(a.path) + ',';
  csv +=
      "point,setting,workers,throughput_samples_per_s,seconds_per_update,lr,target,"
      "updates_to_target,updates_low,updates_high,estimate,time_to_target_s,time_low_s,"
      "time_high_s,note\n";
  for (std::size_t i = 0; i < points.size(); ++i) {
    const TtaPoint& p = points[i];
    for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
      csv += sim::CsvField(sweep.axes[a].values[sweep.points[i].choice[a]]) + ',';
    }
    csv += sim::CsvField(sweep.points[i].name) + ',';
    if (!p.infeasible.empty()) {
      csv += ",,,,,,,,,,,,," + sim::CsvField("infeasible: " + p.infeasible) + "\n";
      continue;
    }
    csv += sim::CsvField(p.family.Name()) + ',' + std::to_string(p.workers) + ',' +
           Fixed(p.throughput, 3) + ',' + Fixed(p.seconds_per_update, 9) + ',';
    const PointEstimate pe = EstimatePoint(p, estimates.at(p.family), runs, proxy, o);
    const sim::StepsEstimate& e = pe.steps;
    csv += (std::isnan(pe.lr) ? std::string() : Shortest(pe.lr)) + ',' +
           sim::CsvField(proxy.target.Condition()) + ',';
    if (!e.valid()) {
      csv += ",,,none,,,," + sim::CsvField(pe.note) + "\n";
      continue;
    }
    const double time = e.mean * p.seconds_per_update;
    t.rows.push_back({i, e, time});
    csv += Fixed(e.mean, 2) + ',' + Fixed(e.low, 2) + ',' + Fixed(e.high, 2) + ',' +
           (e.fitted ? "fitted" : "measured") + ',' + Fixed(time, 6) + ',' +
           Fixed(e.low * p.seconds_per_update, 6) + ',' + Fixed(e.high * p.seconds_per_update, 6) +
           ',' + sim::CsvField(pe.note) + "\n";
  }
  return t;
}

}  // namespace dtsim::study
