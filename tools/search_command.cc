// `dtsim search`: the fastest plans of a scenario's model on its cluster.
#include <algorithm>
#include <CLI/CLI.hpp>
#include <memory>
#include "sim/plan_size.h"
#include "tools/cli.h"
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <thread>

#include "common/error.h"
#include "config/scenario.h"
#include "report/search_page.h"
#include "study/search.h"
#include "tools/commands.h"
#include "tools/output_set.h"

namespace dtsim::tools {
namespace {

namespace fs = std::filesystem;

void PrintPlans(const study::Search& search, const std::vector<study::PointResult>& results,
                const std::vector<std::size_t>& rows, const std::vector<std::size_t>& ranked,
                std::ostream& out) {
  out << "| rank | devices | plan | samples/s | step (s) | memory/device (GiB) | MFU |\n"
         "|---:|---:|---|---:|---:|---:|---:|\n";
  for (const std::size_t i : rows) {
    const study::PointResult& r = results[i];
    const auto rank = std::find(ranked.begin(), ranked.end(), i) - ranked.begin() + 1;
    char line[320];
    std::snprintf(line, sizeof line, "| %td | %d | %s | %.1f | %.4f | %.2f | %.1f%% |\n", rank,
                  r.devices, report::PlanLabel(search, i).c_str(), r.throughput_samples_per_s,
                  r.step_time_s, r.memory_per_device_bytes / (1024.0 * 1024 * 1024),
                  100 * r.mfu);
    out << line;
  }
}

// `values` without repeats, in the order first given: a value named twice
// is one plan to search, listed once.
std::vector<int> Distinct(const std::vector<int>& values) {
  std::vector<int> out;
  for (const int v : values)
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

}  // namespace

void SearchCommand(const SearchOptions& o, exec::MpiWorld* mpi, std::ostream& out,
                   std::ostream& err) {
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // The scenario's own split is replaced: it need not divide the cluster.
  const config::Scenario base = config::LoadScenario(o.scenario_path, false);
  const models::ModelGraph graph = config::BuildWorkloadModel(base);
  study::SearchSpace space;
  space.devices = Distinct(o.devices);
  if (!o.micro_batch_sizes.empty()) space.micro_batch_sizes = Distinct(o.micro_batch_sizes);
  if (!o.zero_stages.empty()) space.zero_stages = Distinct(o.zero_stages);
  if (!o.tensor_parallel.empty()) space.tensor_parallel = Distinct(o.tensor_parallel);
  const study::Search search = study::BuildSearch(base, graph, space);

  double seconds = 0;
  std::vector<study::PointResult> results = RunSweepWithProgress(
      search.sweep, jobs, o.quiet, o.err_is_terminal, "plans", mpi, err, &seconds);
  if (mpi != nullptr && mpi->communicator().rank() != 0) return;  // rank 0 writes
  // The rows recommended (those printed, the first 10 at least, and the
  // Pareto front) come from full simulations, never from the fast path.
  study::SweepRunOptions recheck;
  recheck.jobs = jobs;
  const std::size_t resimulated = study::RecheckSearch(
      search, &results, static_cast<std::size_t>(std::max(10, o.top)), recheck);

  const std::vector<std::size_t> ranked = study::RankSearch(results);
  const std::vector<std::size_t> front = study::ParetoFront(results);
  std::string pareto = study::SweepCsvHeader(search.sweep) + "\n";
  for (const std::size_t i : front) pareto += results[i].csv_row + "\n";
  const std::string chart = report::PlotSearch(search, results);
  const fs::path dir = o.out_dir.empty() ? fs::path(search.sweep.out_dir) : fs::path(o.out_dir);
  OutputSet files(dir);
  WriteOutput(files, "search.csv", study::SweepCsv(search.sweep, results));
  WriteOutput(files, "pareto.csv", pareto);
  WriteOutput(files, "throughput.svg", chart);
  const std::string no_fit =
      ranked.empty() ? study::WhatWouldFit(base, graph, space, search, results) : "";
  WriteOutput(files, "index.html", report::SearchPageHtml(search, results, chart, 100, no_fit));
  const auto written = files.Commit();
  // Nothing to recommend: valid input, infeasible plans (exit status 3),
  // after the files that say why for each plan.
  if (ranked.empty())
    throw InfeasiblePlan("dtsim search: no plan fits: " + no_fit +
                             " (search.csv in " + dir.string() + " gives each plan's reason)",
                         "give more devices (--devices), a smaller global batch, or a device with "
                         "more memory");
  if (o.quiet) return;

  const long long simulated =
      static_cast<long long>(results.size()) - search.counts.pruned_by_memory;
  char line[400];
  std::snprintf(line, sizeof line,
                "%s: global batch %lld; %lld plans enumerated, %lld dropped by memory, %lld "
                "simulated in %.1f s (%.0f plans/s, %d jobs; %zu recommended re-simulated in "
                "full), %zu fit\n",
                search.sweep.name.c_str(), static_cast<long long>(search.global_batch),
                static_cast<long long>(search.counts.candidates),
                static_cast<long long>(search.counts.pruned_by_memory), simulated, seconds,
                seconds > 0 ? static_cast<double>(simulated) / seconds : 0.0, jobs, resimulated,
                ranked.size());
  err << line;
  out << "\nPareto front (the fastest plan per device count, when faster than with fewer "
         "devices):\n";
  PrintPlans(search, results, front, ranked, out);
  out << "\nfastest plans:\n";
  const std::vector<std::size_t> top(
      ranked.begin(), ranked.begin() + std::min<std::ptrdiff_t>(o.top, ranked.size()));
  PrintPlans(search, results, top, ranked, out);
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

Command AddSearchCommand(CLI::App& app) {
  auto o = std::make_shared<SearchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "search",
      "Find the fastest plans for a scenario's model on its cluster at its global "
      "batch: data/tensor/pipeline degrees, micro-batch size, schedule, ZeRO stage and "
      "recomputation; prints the Pareto front of throughput against devices and the "
      "ranked plans, writes search.csv, pareto.csv, throughput.svg and index.html");
  cmd->add_option("scenario", o->scenario_path,
                  "Scenario YAML file: model, cluster and global batch "
                  "(parallelism.global_batch, else batch_per_device x devices)")
      ->required();
  cmd->add_option("-o,--out", o->out_dir,
                  "Output folder (default: <the scenario's outputs.dir>/search)");
  cmd->add_option("--devices", o->devices,
                  "Device counts to try (default: the cluster's, halved down to one node)")
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, sim::kMaxDevices));
  cmd->add_option("--micro-batch-sizes", o->micro_batch_sizes,
                  "Micro-batch sizes to try (default: the powers of two dividing a replica's "
                  "batch, and that batch)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  cmd->add_option("--zero-stages", o->zero_stages, "ZeRO stages to try (default 0,1)")
      ->delimiter(',')
      ->check(CLI::Range(0, 3));
  cmd->add_option("--tensor-parallel", o->tensor_parallel,
                  "Tensor-parallel degrees to try (default 1,2,4,8; those dividing a "
                  "node's devices)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  cmd->add_option("--top", o->top, "Plans printed (default 10)")->check(CLI::PositiveNumber);
  AddJobsOption(cmd, &o->jobs, "Plans");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress bar and no tables");
  return {cmd,
          [o](CommandEnv& env) {
            // Started by an MPI launcher, the ranks split the plans.
            o->err_is_terminal = ::isatty(STDERR_FILENO) != 0;
            SearchCommand(*o, env.StartMpiIfLaunched(), env.out, env.err);
          },
          {},
          true};
}

}  // namespace dtsim::tools
