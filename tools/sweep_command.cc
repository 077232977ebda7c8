// `dtsim sweep`: every point of a scenario with list-valued keys.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <thread>

#include "report/sweep_page.h"
#include "sim/sweep.h"
#include "tools/commands.h"
#include "tools/output_set.h"

namespace dtsim::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// "[=====>     ] 120/200 points, 1.2 s" on one line of `err`, redrawn in
// place. Shown from the start on a terminal, otherwise once the sweep has
// run for kDelay (so quick sweeps in scripts stay silent). RunSweep calls
// Update about ten times a second at most; off a terminal it redraws once
// every kDelay.
class ProgressBar {
 public:
  ProgressBar(std::ostream& err, bool terminal) : err_(err), terminal_(terminal) {}

  void Update(int done, int total) {
    const double elapsed = Elapsed();
    if (!shown_ && !terminal_ && elapsed < kDelay) return;
    // Off a terminal (a log file) redraw once a second, and at the end.
    if (!terminal_ && shown_ && done < total && elapsed < last_ + kDelay) return;
    shown_ = true;
    last_ = elapsed;
    constexpr int kWidth = 30;
    const int filled = total > 0 ? done * kWidth / total : kWidth;
    std::string bar(static_cast<std::size_t>(kWidth), ' ');
    for (int i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i)] = '=';
    if (filled < kWidth) bar[static_cast<std::size_t>(filled)] = '>';
    char line[128];
    std::snprintf(line, sizeof line, "\r[%s] %d/%d points, %.1f s", bar.c_str(), done, total,
                  elapsed);
    err_ << line << std::flush;
  }

  // Ends the bar's line, if it was shown.
  void Finish() {
    if (shown_) err_ << "\n";
  }

  double Elapsed() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }

 private:
  static constexpr double kDelay = 1.0;  // seconds before a bar off a terminal
  std::ostream& err_;
  bool terminal_;
  bool shown_ = false;
  double last_ = 0;  // elapsed seconds at the last redraw
  Clock::time_point start_ = Clock::now();
};

void Write(OutputSet& files, const std::string& name, const std::string& content) {
  auto f = files.Open(name);
  f << content;
  CloseOutput(f, name);
}

}  // namespace

void SweepCommand(const SweepOptions& o, std::ostream& out, std::ostream& err) {
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const sim::Sweep sweep = sim::LoadSweep(o.scenario_path, jobs);

  ProgressBar bar(err, o.err_is_terminal);
  sim::SweepRunOptions run;
  run.jobs = jobs;
  if (!o.quiet) run.progress = [&bar](int done, int total) { bar.Update(done, total); };
  std::vector<sim::PointResult> results;
  try {
    results = sim::RunSweep(sweep, run);
  } catch (...) {
    bar.Finish();
    throw;
  }
  bar.Finish();
  const double seconds = bar.Elapsed();

  const std::string csv = sim::SweepCsv(sweep, results);
  const report::SweepPlots plots = report::PlotSweep(sweep, results);
  OutputSet files(o.out_dir.empty() ? fs::path(sweep.out_dir) : fs::path(o.out_dir));
  Write(files, "sweep.csv", csv);
  Write(files, "throughput.svg", plots.throughput);
  Write(files, "scaling_efficiency.svg", plots.scaling_efficiency);
  Write(files, "breakdown.svg", plots.breakdown);
  Write(files, "index.html", report::SweepPageHtml(sweep, plots, csv));
  const auto written = files.Commit();

  if (o.quiet) return;
  char line[160];
  std::snprintf(line, sizeof line, "%s: %zu points in %.1f s (%.0f points/s, %d jobs)\n",
                sweep.name.c_str(), sweep.points.size(), seconds,
                seconds > 0 ? static_cast<double>(sweep.points.size()) / seconds : 0.0,
                std::min<int>(jobs, static_cast<int>(sweep.points.size())));
  err << line;
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

}  // namespace dtsim::tools
