#include "sim/jobs.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "plan/merge.h"
#include "sim/engine/simgrid_engine.h"

namespace dtsim::sim {
namespace {

// Whether the job's ranks route on the whole cluster as on a cluster of its
// own nodes (its scenario's run): a single switch joins any nodes alike; on
// a fat tree, consecutive nodes from the first node of a leaf on sit on
// whole leaves of their own, as on the job's own cluster.
bool RoutesAsAlone(const std::vector<int>& nodes, const NetworkSpec& whole) {
  if (!whole.fat_tree) return true;
  if (nodes.front() % whole.nodes_per_leaf != 0) return false;
  for (std::size_t a = 0; a < nodes.size(); ++a)
    if (nodes[a] != nodes.front() + static_cast<int>(a)) return false;
  return true;
}

SimgridOptions OptionsOf(const config::Scenario& s) {
  SimgridOptions o;
  o.config = s.simgrid.config;
  o.max_step_repeats = s.simgrid.max_step_repeats;
  o.log_threshold = s.simgrid.log_threshold;
  return o;
}

// The merged plan's costs: each part's delay tasks take its start time,
// then its own tasks their priced time (MergePlans' task order).
TaskCosts MergedCosts(const std::vector<const Prediction*>& jobs,
                      const std::vector<double>& starts) {
  TaskCosts c;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const Prediction& p = *jobs[j];
    if (starts[j] > 0)
      c.task_ns.insert(c.task_ns.end(), static_cast<std::size_t>(p.plan.num_ranks()),
                       SecondsToNs(starts[j]));
    c.task_ns.insert(c.task_ns.end(), p.costs.task_ns.begin(), p.costs.task_ns.end());
    c.collective_ns.insert(c.collective_ns.end(), p.costs.collective_ns.begin(),
                           p.costs.collective_ns.end());
    DTSIM_CHECK(p.costs.host_ns.empty() && p.costs.input_ns.empty(),
                "the SimGrid engine runs no host model");
  }
  return c;
}

// The part of `merged` that is the job's: its tasks' timings from
// `first_task` on, counted from `start`.
EngineResult JobPart(const EngineResult& merged, plan::TaskId first_task, std::size_t tasks,
                     SimTime start) {
  EngineResult r;
  r.events = merged.events;
  r.timing.reserve(tasks);
  for (std::size_t t = 0; t < tasks; ++t) {
    TaskTiming x = merged.timing[static_cast<std::size_t>(first_task) + t];
    x.start = std::max<SimTime>(0, x.start - start);
    x.end = std::max<SimTime>(0, x.end - start);
    x.ready = std::max<SimTime>(0, x.ready - start);
    r.makespan = std::max(r.makespan, x.end);
    r.timing.push_back(x);
  }
  return r;
}

// The job's metrics over the iterations its own run measured.
RunMetrics JobMetrics(const Prediction& alone, const EngineResult& part) {
  const RunMetrics& m = alone.metrics;
  const MetricsWindow window{m.first_measured_iteration,
                             m.first_measured_iteration + m.measured_iterations - 1};
  return ComputeMetrics(alone.plan, part, window);
}

}  // namespace

Prediction SimulateJobs(const config::Scenario& s) {
  DTSIM_CHECK(!s.jobs.empty(), "SimulateJobs needs jobs");
  const auto wall_start = std::chrono::steady_clock::now();
  if (s.engine != "simgrid")
    throw UserError(s.Where("engine"),
                    "jobs sharing a fabric are simulated by engine: simgrid only (the analytic "
                    "engine prices each collective alone, so the jobs' flows would not share "
                    "the links), got engine '" + s.engine + "'",
                    "use engine: simgrid");
  const NetworkSpec whole = MakeNetworkSpec(s, config::ScenarioCatalog(s));
  const int dpn = s.cluster.devices_per_node;
  std::vector<plan::RankPlacement> placement(static_cast<std::size_t>(s.cluster.num_devices()));
  for (std::size_t r = 0; r < placement.size(); ++r) {
    placement[r].node = static_cast<int>(r) / dpn;
    placement[r].local = static_cast<int>(r) % dpn;
  }
  const SimgridOptions options = OptionsOf(s);

  std::vector<JobRun> runs;
  for (const config::Job& job : s.jobs) {
    config::Scenario own = job.scenario;
    own.engine = s.engine;
    JobRun run;
    run.name = job.name;
    run.start_s = job.start_s;
    run.nodes = job.nodes;
    run.shared = Simulate(own);
    if (!run.shared.does_not_fit.empty()) {
      Prediction p = std::move(run.shared);
      p.does_not_fit = "job '" + job.name + "': " + p.does_not_fit;
      return p;
    }
    const plan::Plan& plan = run.shared.plan;
    for (plan::RankId r = 0; r < plan.num_ranks(); ++r) {
      const plan::RankPlacement& at = plan.ranks[static_cast<std::size_t>(r)];
      run.ranks.push_back(job.nodes[static_cast<std::size_t>(at.node)] * dpn + at.local);
    }
    if (RoutesAsAlone(job.nodes, whole)) {
      run.alone = run.shared.metrics;
    } else {
      const plan::MergedPlan m = plan::MergePlans({{&plan, run.ranks, 0}}, placement);
      const EngineResult e =
          RunSimgridEngine(m.plan, MergedCosts({&run.shared}, {0}), whole, options);
      run.alone = JobMetrics(run.shared, JobPart(e, m.first_task[0], plan.num_tasks(), 0));
    }
    runs.push_back(std::move(run));
  }

  std::vector<plan::PlanPart> parts;
  std::vector<const Prediction*> jobs;
  std::vector<double> starts;
  for (const JobRun& run : runs) {
    parts.push_back({&run.shared.plan, run.ranks, run.start_s});
    jobs.push_back(&run.shared);
    starts.push_back(run.start_s);
  }
  const plan::MergedPlan merged = plan::MergePlans(parts, placement);
  const EngineResult e = RunSimgridEngine(merged.plan, MergedCosts(jobs, starts), whole, options);
  for (std::size_t j = 0; j < runs.size(); ++j) {
    JobRun& run = runs[j];
    EngineResult part = JobPart(e, merged.first_task[j], run.shared.plan.num_tasks(),
                                SecondsToNs(run.start_s));
    run.shared.metrics = JobMetrics(run.shared, part);
    run.shared.engine = std::move(part);
    run.slowdown = run.alone.step_time_s > 0 ? run.shared.metrics.step_time_s / run.alone.step_time_s : 0;
  }
  Prediction p = runs.front().shared;
  p.jobs = std::move(runs);
  p.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return p;
}

}  // namespace dtsim::sim
