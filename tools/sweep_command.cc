// `dtsim sweep`: every point of a scenario with list-valued keys.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <thread>

#include "report/sweep_page.h"
#include "sim/sweep.h"
#include "tools/commands.h"
#include "tools/output_set.h"
#include "tools/progress_bar.h"

namespace dtsim::tools {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::vector<sim::PointResult> RunSweepWithProgress(const sim::Sweep& sweep, int jobs, bool quiet,
                                                   bool err_is_terminal, const char* unit,
                                                   std::ostream& err, double* seconds) {
  ProgressBar bar(err, err_is_terminal, unit);
  sim::SweepRunOptions run;
  run.jobs = jobs;
  if (!quiet) run.progress = [&bar](int done, int total) { bar.Update(done, total); };
  std::vector<sim::PointResult> results;
  try {
    results = sim::RunSweep(sweep, run);
  } catch (...) {
    bar.Finish();
    throw;
  }
  bar.Finish();
  *seconds = bar.Elapsed();
  return results;
}

void SweepCommand(const SweepOptions& o, std::ostream& out, std::ostream& err) {
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const sim::Sweep sweep = sim::LoadSweep(o.scenario_path, jobs);

  double seconds = 0;
  const std::vector<sim::PointResult> results =
      RunSweepWithProgress(sweep, jobs, o.quiet, o.err_is_terminal, "points", err, &seconds);

  const std::string csv = sim::SweepCsv(sweep, results);
  const report::SweepPlots plots = report::PlotSweep(sweep, results);
  OutputSet files(o.out_dir.empty() ? fs::path(sweep.out_dir) : fs::path(o.out_dir));
  WriteOutput(files, "sweep.csv", csv);
  WriteOutput(files, "throughput.svg", plots.throughput);
  WriteOutput(files, "scaling_efficiency.svg", plots.scaling_efficiency);
  WriteOutput(files, "breakdown.svg", plots.breakdown);
  WriteOutput(files, "index.html", report::SweepPageHtml(sweep, plots, csv));
  const auto written = files.Commit();

  if (o.quiet) return;
  char line[160];
  std::snprintf(line, sizeof line, "%s: %zu points in %.1f s (%.0f points/s, %d jobs)\n",
                sweep.name.c_str(), sweep.points.size(), seconds,
                seconds > 0 ? static_cast<double>(sweep.points.size()) / seconds : 0.0,
                std::min<int>(jobs, static_cast<int>(sweep.points.size())));
  err << line;
  // Infeasible points are rows of sweep.csv with their reason; say how many.
  const auto infeasible = std::count_if(results.begin(), results.end(),
                                        [](const sim::PointResult& r) { return !r.feasible; });
  if (infeasible > 0) {
    err << infeasible << " of " << results.size()
        << " points are infeasible (fits = false in sweep.csv, with the reason), e.g. "
        << std::find_if(results.begin(), results.end(),
                        [](const sim::PointResult& r) { return !r.feasible; })
               ->infeasible
        << "\n";
  }
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

}  // namespace dtsim::tools
