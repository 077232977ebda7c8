// `dtsim sweep`: every point of a scenario with list-valued keys.
#include <algorithm>
#include <CLI/CLI.hpp>
#include <memory>
#include "tools/cli.h"
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#include "report/sweep_page.h"
#include "report/tensorboard.h"
#include "study/sweep.h"
#include "tools/commands.h"
#include "tools/output_set.h"
#include "tools/progress_bar.h"

namespace dtsim::tools {
namespace {

namespace fs = std::filesystem;

}  // namespace
}  // namespace dtsim::tools

namespace dtsim::study {
// A point's result as JSON, for the ranks of a sweep to send to rank 0.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PointResult, csv_row, feasible, infeasible,
                                   memory_per_device_bytes, devices, throughput_samples_per_s,
                                   step_time_s, scaling_efficiency, compute_s, exposed_comm_s,
                                   idle_s, mfu, extrapolated)
}  // namespace dtsim::study

namespace dtsim::tools {

std::vector<study::PointResult> RunSweepWithProgress(const study::Sweep& sweep, int jobs, bool quiet,
                                                   bool err_is_terminal, const char* unit,
                                                   exec::MpiWorld* mpi, std::ostream& err,
                                                   double* seconds) {
  const int rank = mpi != nullptr ? mpi->communicator().rank() : 0;
  const int ranks = mpi != nullptr ? mpi->communicator().size() : 1;
  ProgressBar bar(err, err_is_terminal, unit);
  study::SweepRunOptions run;
  run.jobs = jobs;
  run.shard = rank;
  run.shards = ranks;
  if (!quiet && rank == 0) run.progress = [&bar](int done, int total) { bar.Update(done, total); };
  std::vector<study::PointResult> results;
  try {
    results = study::RunSweep(sweep, run);
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

namespace {

// Removes the sessions of an earlier, larger sweep from `dir`: folders
// pNNNN numbered `points` or more that hold nothing but what dtsim writes
// there (the events file and the folder's lock), so TensorBoard never shows
// two sweeps as one. Links, and folders holding anything else, stay.
void RemoveStaleSessions(const fs::path& dir, std::size_t points) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 5 || name[0] != 'p' ||
        name.find_first_not_of("0123456789", 1) != std::string::npos ||
        e.symlink_status(ec).type() != fs::file_type::directory)
      continue;
    if (name.size() <= 20 && std::stoull(name.substr(1)) < points) continue;
    bool ours = true;
    for (const fs::directory_entry& f : fs::directory_iterator(e.path(), ec)) {
      const std::string file = f.path().filename().string();
      ours = ours && (file == report::kEventFileName || file == ".dtsim-lock") &&
             f.symlink_status(ec).type() == fs::file_type::regular;
    }
    if (ours && !ec) fs::remove_all(e.path(), ec);
  }
}

// The sweep for TensorBoard's HParams dashboard (report/tensorboard.h): the
// experiment in `dir`, each point a session in `dir`/pNNNN with its axis
// values and its figures as scalars at step 0. Wall times are 0: the same
// sweep gives the same bytes.
std::vector<fs::path> WriteHParams(const study::Sweep& sweep,
                                   const std::vector<study::PointResult>& results,
                                   const fs::path& dir) {
  std::vector<report::EventFile::HParam> hparams;
  for (const study::SweepAxis& axis : sweep.axes) {
    hparams.push_back({axis.path, axis.values, axis.numeric});
  }
  const std::vector<std::pair<std::string, double (*)(const study::PointResult&)>> metrics = {
      {"throughput_samples_per_s", [](const study::PointResult& r) { return r.throughput_samples_per_s; }},
      {"step_time_s", [](const study::PointResult& r) { return r.step_time_s; }},
      {"scaling_efficiency", [](const study::PointResult& r) { return r.scaling_efficiency; }},
      {"mfu", [](const study::PointResult& r) { return r.mfu; }},
      {"memory_per_device_gib",
       [](const study::PointResult& r) { return r.memory_per_device_bytes / (1024.0 * 1024 * 1024); }},
  };
  std::vector<std::string> tags;
  for (const auto& m : metrics) tags.push_back(m.first);
  std::vector<fs::path> written;
  {
    report::EventFile experiment;
    experiment.AddHParamsExperiment(hparams, tags, 0);
    OutputSet set(dir);
    WriteOutput(set, report::kEventFileName, experiment.bytes());
    for (const fs::path& p : set.Commit()) written.push_back(p);
  }
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    const study::SweepPoint& point = sweep.points[i];
    std::vector<std::size_t> choice = point.choice;
    for (std::size_t a = 0; a < choice.size() && a < point.unused_axes.size(); ++a) {
      if (point.unused_axes[a]) choice[a] = sweep.axes[a].values.size();  // left out
    }
    report::EventFile session;
    session.AddHParamsSessionStart(hparams, choice, 0);
    if (results[i].feasible) {
      for (const auto& [tag, value] : metrics) {
        session.AddScalar(tag, 0, 0, static_cast<float>(value(results[i])));
      }
    }
    session.AddHParamsSessionEnd(results[i].feasible, 0);
    char name[32];
    std::snprintf(name, sizeof name, "p%04zu", i);
    OutputSet set(dir / name);
    WriteOutput(set, report::kEventFileName, session.bytes());
    for (const fs::path& p : set.Commit()) written.push_back(p);
  }
  RemoveStaleSessions(dir, sweep.points.size());
  return written;
}

}  // namespace

void SweepCommand(const SweepOptions& o, exec::MpiWorld* mpi, std::ostream& out,
                  std::ostream& err) {
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const study::Sweep sweep = study::LoadSweep(o.scenario_path, jobs);

  double seconds = 0;
  const std::vector<study::PointResult> results =
      RunSweepWithProgress(sweep, jobs, o.quiet, o.err_is_terminal, "points", mpi, err, &seconds);
  if (mpi != nullptr && mpi->communicator().rank() != 0) return;  // rank 0 writes

  const std::string csv = study::SweepCsv(sweep, results);
  const report::SweepPlots plots = report::PlotSweep(sweep, results);
  const fs::path dir = o.out_dir.empty() ? fs::path(sweep.out_dir) : fs::path(o.out_dir);
  OutputSet files(dir);
  WriteOutput(files, "sweep.csv", csv);
  WriteOutput(files, "throughput.svg", plots.throughput);
  WriteOutput(files, "scaling_efficiency.svg", plots.scaling_efficiency);
  WriteOutput(files, "breakdown.svg", plots.breakdown);
  WriteOutput(files, "index.html", report::SweepPageHtml(sweep, plots, csv));
  auto written = files.Commit();
  if (o.tensorboard) {
    const auto more = WriteHParams(sweep, results, dir / "tensorboard");
    written.insert(written.end(), more.begin(), more.end());
  }

  if (o.quiet) return;
  char line[160];
  std::snprintf(line, sizeof line, "%s: %zu points in %.1f s (%.0f points/s, %d jobs)\n",
                sweep.name.c_str(), sweep.points.size(), seconds,
                seconds > 0 ? static_cast<double>(sweep.points.size()) / seconds : 0.0,
                std::min<int>(jobs, static_cast<int>(sweep.points.size())));
  err << line;
  // Infeasible points are rows of sweep.csv with their reason; say how many.
  const auto infeasible = std::count_if(results.begin(), results.end(),
                                        [](const study::PointResult& r) { return !r.feasible; });
  if (infeasible > 0) {
    err << infeasible << " of " << results.size()
        << " points are infeasible (fits = false in sweep.csv, with the reason), e.g. "
        << std::find_if(results.begin(), results.end(),
                        [](const study::PointResult& r) { return !r.feasible; })
               ->infeasible
        << "\n";
  }
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

Command AddSweepCommand(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Simulate every combination of the values a scenario lists (a sweep): writes "
      "sweep.csv, throughput.svg, scaling_efficiency.svg, breakdown.svg and index.html "
      "under results/<name>/ unless told otherwise");
  cmd->add_option("scenario", o->scenario_path, "Scenario YAML file with lists")->required();
  cmd->add_option("-o,--out", o->out_dir, "Output folder (default: the scenario's outputs.dir)");
  AddJobsOption(cmd, &o->jobs, "Points");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress bar and no summary");
  cmd->add_flag("--tensorboard", o->tensorboard,
                "Also write tensorboard/: the axes as TensorBoard HParams, one session "
                "folder per point with its figures (tensorboard --logdir OUT/tensorboard)");
  cmd->footer(
      "A list where the scenario expects a single value makes that key an axis of the sweep,\n"
      "and the sweep simulates every combination of the axes' values (the first axis in the\n"
      "file varies slowest). For example, 8 x 6 = 48 points:\n"
      "\n"
      "  cluster:\n"
      "    nodes: [1, 2, 4, 8, 16, 32, 64, 128]\n"
      "  parallelism:\n"
      "    strategy: local_sgd\n"
      "    averaging_period: [1, 2, 5, 10, 20, 50]\n"
      "\n"
      "Keys whose value is itself a list (the ranks under stragglers) are not axes: give a\n"
      "list of lists to sweep them. Lists of mappings (cluster.devices, cluster.links) are\n"
      "never axes, but a list inside one of their entries is. Errors name the file, line and\n"
      "column of the value at fault. See docs/scenario.md, section Sweeps.");
  return {cmd,
          [o](CommandEnv& env) {
            // Started by an MPI launcher, the ranks split the points.
            o->err_is_terminal = ::isatty(STDERR_FILENO) != 0;
            SweepCommand(*o, env.StartMpiIfLaunched(), env.out, env.err);
          },
          {},
          true};
}

}  // namespace dtsim::tools
