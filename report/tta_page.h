// Time to accuracy for people: its plots, its TensorBoard scalars and the
// section that leads the sweep's page (study/tta.h measured them).
#pragma once

#include <string>

#include "study/sweep.h"
#include "study/tta.h"

namespace dtsim::report {

// Time to the target, and beside it the simulated throughput, against the
// study's x axis (study::TtaXAxis), one line per combination of the other
// axes; SVG.
struct TtaPlots {
  std::string time;
  std::string throughput;
};
TtaPlots PlotTta(const study::Sweep& sweep, const study::TtaStudy& study);

// A TensorBoard event file's bytes: each run's loss and accuracy per
// update (one run per setting, rate and seed), and per measured setting its
// updates to the target under a tag naming the target.
std::string TtaEvents(const study::TtaStudy& study);

// The section that leads the sweep's page: the best settings (`best`,
// study::BestSettingsText), the plots and tta.csv as a table. `evaluated`
// says what the loss was evaluated on ("held out: ...").
std::string TtaLeadHtml(const study::TtaStudy& study, const TtaPlots& plots,
                        const std::string& best, const std::string& evaluated, int seeds);

}  // namespace dtsim::report
