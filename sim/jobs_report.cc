#include "sim/jobs_report.h"

#include <cstdio>

#include "plan/plan_export.h"

namespace dtsim::sim {

nlohmann::ordered_json JobsJson(const Prediction& p) {
  nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
  for (const JobRun& run : p.jobs) {
    const RunMetrics& m = run.shared.metrics;
    nlohmann::ordered_json j;
    j["name"] = run.name;
    j["model"] = run.shared.graph.name();
    j["start_s"] = run.start_s;
    j["nodes"] = run.nodes;
    j["devices"] = run.ranks.size();
    j["step_time_shared_s"] = m.step_time_s;
    j["step_time_alone_s"] = run.alone.step_time_s;
    j["slowdown"] = run.slowdown;
    j["throughput_shared_samples_per_s"] = m.throughput_samples_per_s;
    j["throughput_alone_samples_per_s"] = run.alone.throughput_samples_per_s;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

std::string JobsLog(const Prediction& p) {
  std::string out;
  char line[512];
  for (const JobRun& run : p.jobs) {
    std::snprintf(line, sizeof line,
                  "job %s (%s, %zu devices, start %g s): step %.4g ms shared, %.4g ms alone "
                  "(slowdown %.3fx), %.6g samples/s shared\n",
                  run.name.c_str(), run.shared.graph.name().c_str(), run.ranks.size(),
                  run.start_s, 1e3 * run.shared.metrics.step_time_s,
                  1e3 * run.alone.step_time_s, run.slowdown,
                  run.shared.metrics.throughput_samples_per_s);
    out += line;
  }
  return out;
}

void WriteJobsChromeTrace(std::ostream& out, const Prediction& p, int max_ranks) {
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const nlohmann::ordered_json& e) {
    if (!first) out << ",\n";
    first = false;
    out << e.dump();
  };
  for (const JobRun& run : p.jobs) {
    const Prediction& q = run.shared;
    const int ranks = std::min(max_ranks, q.plan.num_ranks());
    for (int r = 0; r < ranks; ++r) {
      const plan::RankId pid = run.ranks[static_cast<std::size_t>(r)];
      const plan::RankPlacement& at = q.plan.ranks[static_cast<std::size_t>(r)];
      const int node = run.nodes[static_cast<std::size_t>(at.node)];
      emit({{"name", "process_name"}, {"ph", "M"}, {"pid", pid},
            {"args", {{"name", "job " + run.name + " rank " + std::to_string(r) + " (node " +
                                   std::to_string(node) + ", " + q.device.name + " " +
                                   std::to_string(at.local) + ")"}}}});
      emit({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
      for (int s = 0; s < plan::kNumStreams; ++s)
        emit({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", s},
              {"args", {{"name", plan::StreamKindName(static_cast<plan::StreamKind>(s))}}}});
    }
    const double start_us = run.start_s * 1e6;
    for (std::size_t t = 0; t < q.plan.num_tasks(); ++t) {
      const plan::Task& task = q.plan.tasks()[t];
      if (task.rank >= ranks) continue;
      const TaskTiming& tm = q.engine.timing[t];
      if (tm.end == tm.start) continue;
      emit({{"name", plan::TaskLabel(q.plan, q.graph, task)},
            {"cat", plan::TaskKindName(task.kind)},
            {"ph", "X"},
            {"pid", run.ranks[static_cast<std::size_t>(task.rank)]},
            {"tid", static_cast<int>(task.stream)},
            {"ts", start_us + static_cast<double>(tm.start) / 1000.0},
            {"dur", static_cast<double>(tm.end - tm.start) / 1000.0},
            {"args", {{"job", run.name}, {"iteration", task.iteration}}}});
    }
  }
  out << "\n]}\n";
}

}  // namespace dtsim::sim
