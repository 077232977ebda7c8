// `dtsim sweep`: every point of a scenario with list-valued keys.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
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
}  // namespace dtsim::tools

namespace dtsim::sim {
// A point's result as JSON, for the ranks of a sweep to send to rank 0.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PointResult, csv_row, feasible, infeasible,
                                   memory_per_device_bytes, devices, throughput_samples_per_s,
                                   step_time_s, scaling_efficiency, compute_s, exposed_comm_s,
                                   idle_s, mfu)
}  // namespace dtsim::sim

namespace dtsim::tools {

std::vector<sim::PointResult> RunSweepWithProgress(const sim::Sweep& sweep, int jobs, bool quiet,
                                                   bool err_is_terminal, const char* unit,
                                                   exec::MpiWorld* mpi, std::ostream& err,
                                                   double* seconds) {
  const int rank = mpi != nullptr ? mpi->communicator().rank() : 0;
  const int ranks = mpi != nullptr ? mpi->communicator().size() : 1;
  ProgressBar bar(err, err_is_terminal, unit);
  sim::SweepRunOptions run;
  run.jobs = jobs;
  run.shard = rank;
  run.shards = ranks;
  if (!quiet && rank == 0) run.progress = [&bar](int done, int total) { bar.Update(done, total); };
  std::vector<sim::PointResult> results;
  try {
    results = sim::RunSweep(sweep, run);
  } catch (...) {
    bar.Finish();
    throw;
  }
  if (ranks > 1) {
    // Every rank's points to rank 0, as JSON (doubles round-trip exactly).
    nlohmann::json mine = nlohmann::json::array();
    for (std::size_t i = static_cast<std::size_t>(rank); i < results.size();
         i += static_cast<std::size_t>(ranks))
      mine.push_back(results[i]);
    const std::vector<std::string> all = mpi->GatherToRoot(mine.dump());
    for (std::size_t from = 1; from < all.size(); ++from) {
      std::size_t i = from;
      for (const nlohmann::json& p : nlohmann::json::parse(all[from])) {
        p.get_to(results.at(i));
        i += static_cast<std::size_t>(ranks);
      }
    }
    if (rank != 0) results.clear();
  }
  if (!quiet && rank == 0)
    bar.Update(static_cast<int>(results.size()), static_cast<int>(results.size()));
  bar.Finish();
  *seconds = bar.Elapsed();
  return results;
}

void SweepCommand(const SweepOptions& o, exec::MpiWorld* mpi, std::ostream& out,
                  std::ostream& err) {
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const sim::Sweep sweep = sim::LoadSweep(o.scenario_path, jobs);

  double seconds = 0;
  const std::vector<sim::PointResult> results =
      RunSweepWithProgress(sweep, jobs, o.quiet, o.err_is_terminal, "points", mpi, err, &seconds);
  if (mpi != nullptr && mpi->communicator().rank() != 0) return;  // rank 0 writes

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
