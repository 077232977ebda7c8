// What the Python module (python/module.cc, imported as `dtsim`) does, in
// plain C++: each call takes a scenario as a file path or as the text of a
// document (JSON or YAML, as a Python dict is written), and returns JSON,
// which the module hands to Python as dicts and lists. Errors are the
// library's own: UserError with file:line:column, InfeasiblePlan.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dtsim::python {

// A scenario given either as a file (path) or as a document's text; `path`
// names the text's source in error messages ("<dict>") and is the base
// that relative paths in the text resolve against.
struct ScenarioSource {
  std::string path;
  std::string text;  // "" = read `path`
};

struct RunResult {
  nlohmann::ordered_json report;  // report.json's content (sim::ReportJson)
  // Not "" when the plan cannot run (it does not fit in memory): why, as
  // `dtsim run` states it before exiting with status 3.
  std::string infeasible;
};
// `dtsim run` without writing files; `engine` "" = the scenario's.
RunResult Run(const ScenarioSource& source, const std::string& engine = "");

// `dtsim sweep` without writing files: one object per point, in point
// order: {name, axes: {path: value}, feasible, infeasible, devices,
// throughput_samples_per_s, step_time_s, scaling_efficiency, compute_s,
// exposed_comm_s, idle_s, mfu, memory_per_device_bytes, extrapolated};
// the figures are null for infeasible points and for axes the point's
// strategy does not use. `jobs` 0 = one per core.
nlohmann::ordered_json Sweep(const ScenarioSource& source, int jobs = 0);

struct SearchArgs {
  std::vector<int> devices;             // empty = the cluster's, halved to one node
  std::vector<int> micro_batch_sizes;   // empty = the search's default
  std::vector<int> zero_stages;         // empty = the search's default (0, 1)
  std::vector<int> tensor_parallel;     // empty = the search's default (1, 2, 4, 8)
  int jobs = 0;                         // 0 = one per core
  int top = 10;                         // plans returned; 0 = every plan that fits
};
// `dtsim search` without writing files: the `top` fastest plans that fit,
// fastest first, each as a sweep point's object (Sweep above) with `rank`
// (1-based) and `pareto` (on the front of throughput against devices), every
// one from a full simulation (re-simulated without shortcuts as the command
// does for the rows it recommends). Throws InfeasiblePlan,
// saying what would fit, when no plan does.
nlohmann::ordered_json Search(const ScenarioSource& source, const SearchArgs& args);

// A zoo model or a model file (as `dtsim model NAME`): {name, params,
// fwd_flops_per_sample, bwd_flops_per_sample, ops, warnings, table}, with
// `table` the per-layer table `dtsim model` prints.
nlohmann::ordered_json Model(const std::string& name_or_path);

}  // namespace dtsim::python
