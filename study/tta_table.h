// tta.csv: per sweep point, its updates to the target (measured, or fitted
// across the measured worker counts) times its simulated seconds per
// update.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "sim/time_to_accuracy.h"
#include "study/sweep.h"
#include "study/tta_proxy.h"
#include "study/tta_setting.h"

namespace dtsim::study {

// A point with an estimate.
struct TtaRow {
  std::size_t point = 0;     // index into the sweep's points
  sim::StepsEstimate steps;  // updates to the target
  double time = 0;           // seconds to the target: steps.mean x seconds per update
};

// tta.csv's text and the points that have an estimate.
struct TtaTable {
  std::string csv;  // header and one line per point, each ending in '\n'
  std::vector<TtaRow> rows;
};

// The table of every point of `sweep` (`points` simulated from it), from
// the families' measured updates `estimates` of `runs`.
TtaTable TabulateTta(const Sweep& sweep, const std::vector<TtaPoint>& points,
                     const std::map<Family, Measured>& estimates, const std::vector<TtaRun>& runs,
                     const Proxy& proxy, const TtaOptions& o);

}  // namespace dtsim::study
