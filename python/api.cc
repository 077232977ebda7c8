#include "python/api.h"

#include <algorithm>
#include <cstddef>

#include "common/error.h"
#include "config/scenario.h"
#include "models/zoo.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "study/search.h"
#include "study/sweep.h"

namespace dtsim::python {
namespace {

config::Scenario LoadSource(const ScenarioSource& s, bool check_plan_shape = true) {
  return s.text.empty() ? config::LoadScenario(s.path, check_plan_shape)
                        : config::ParseScenario(s.text, s.path, check_plan_shape);
}

study::Sweep LoadSweepSource(const ScenarioSource& s, int jobs) {
  return s.text.empty() ? study::LoadSweep(s.path, jobs) : study::ParseSweep(s.text, s.path, jobs);
}

// A figure, or null where the point has none.
nlohmann::ordered_json Figure(bool known, double value) {
  return known ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json PointJson(const study::Sweep& sweep, std::size_t i,
                                 const study::PointResult& r) {
  const study::SweepPoint& point = sweep.points[i];
  nlohmann::ordered_json axes = nlohmann::ordered_json::object();
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    const bool unused = !point.unused_axes.empty() && point.unused_axes[a];
    const std::string& value = sweep.axes[a].values[point.choice[a]];
    if (unused) {
      axes[sweep.axes[a].path] = nullptr;
    } else if (sweep.axes[a].numeric) {
      axes[sweep.axes[a].path] = std::stod(value);
    } else {
      axes[sweep.axes[a].path] = value;
    }
  }
  const bool f = r.feasible;
  nlohmann::ordered_json j;
  j["name"] = point.name;
  j["axes"] = std::move(axes);
  j["feasible"] = f;
  j["infeasible"] = f ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.infeasible);
  j["devices"] = r.devices;
  j["throughput_samples_per_s"] = Figure(f, r.throughput_samples_per_s);
  j["step_time_s"] = Figure(f, r.step_time_s);
  j["scaling_efficiency"] = Figure(f, r.scaling_efficiency);
  j["compute_s"] = Figure(f, r.compute_s);
  j["exposed_comm_s"] = Figure(f, r.exposed_comm_s);
  j["idle_s"] = Figure(f, r.idle_s);
  j["mfu"] = Figure(f, r.mfu);
  j["memory_per_device_bytes"] = Figure(r.memory_per_device_bytes > 0, r.memory_per_device_bytes);
  j["extrapolated"] = r.extrapolated;
  return j;
}

}  // namespace

RunResult Run(const ScenarioSource& source, const std::string& engine) {
  config::Scenario scenario = LoadSource(source);
  // As the CLI's --engine: one of the two names, exactly (a misspelt
  // engine ran the analytic one while the report named it).
  if (!engine.empty() && engine != "analytic" && engine != "simgrid")
    throw UserError("engine '" + engine + "' is not an engine", "use engine=\"analytic\" or \"simgrid\"");
  if (!engine.empty()) scenario.engine = engine;
  const sim::Prediction p = sim::Simulate(scenario);
  RunResult out;
  out.report = sim::ReportJson(scenario, p);
  out.infeasible = p.does_not_fit;
  return out;
}

nlohmann::ordered_json Sweep(const ScenarioSource& source, int jobs) {
  const study::Sweep sweep = LoadSweepSource(source, jobs);
  study::SweepRunOptions options;
  options.jobs = jobs;
  const std::vector<study::PointResult> results = study::RunSweep(sweep, options);
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < results.size(); ++i) points.push_back(PointJson(sweep, i, results[i]));
  return points;
}

nlohmann::ordered_json Search(const ScenarioSource& source, const SearchArgs& args) {
  // The scenario's own split is replaced: it need not divide the cluster.
  const config::Scenario base = LoadSource(source, false);
  const models::ModelGraph graph = config::BuildWorkloadModel(base);
  study::SearchSpace space;
  space.devices = args.devices;
  if (!args.micro_batch_sizes.empty()) space.micro_batch_sizes = args.micro_batch_sizes;
  if (!args.zero_stages.empty()) space.zero_stages = args.zero_stages;
  if (!args.tensor_parallel.empty()) space.tensor_parallel = args.tensor_parallel;
  const study::Search search = study::BuildSearch(base, graph, space);
  study::SweepRunOptions options;
  options.jobs = args.jobs;
  std::vector<study::PointResult> results = study::RunSweep(search.sweep, options);
  // Every plan returned is a full simulation, as `dtsim search` recommends.
  const std::size_t top = args.top > 0 ? static_cast<std::size_t>(args.top) : results.size();
  study::RecheckSearch(search, &results, top, options);
  std::vector<std::size_t> ranked = study::RankSearch(results);
  if (ranked.empty())
    throw InfeasiblePlan("no plan fits: " + study::WhatWouldFit(base, graph, space, search, results),
                         "give more devices, a smaller global batch, or a device with more memory");
  const std::vector<std::size_t> front = study::ParetoFront(results);
  if (ranked.size() > top) ranked.resize(top);
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < ranked.size(); ++k) {
    nlohmann::ordered_json j = PointJson(search.sweep, ranked[k], results[ranked[k]]);
    j["rank"] = k + 1;
    j["pareto"] = std::find(front.begin(), front.end(), ranked[k]) != front.end();
    plans.push_back(std::move(j));
  }
  return plans;
}

nlohmann::ordered_json Model(const std::string& name_or_path) {
  const models::ModelGraph g = models::BuildModel(name_or_path);
  const models::GraphTotals t = g.Totals();
  nlohmann::ordered_json j;
  j["name"] = g.name();
  j["params"] = t.params;
  j["fwd_flops_per_sample"] = t.fwd_flops;
  j["bwd_flops_per_sample"] = t.bwd_flops;
  j["ops"] = g.num_ops();
  j["warnings"] = g.warnings();
  j["table"] = models::FormatModelTable(g);
  return j;
}

}  // namespace dtsim::python
