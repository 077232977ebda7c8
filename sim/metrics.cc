#include "sim/metrics.h"

#include <algorithm>

#include "common/error.h"

namespace dtsim::sim {
namespace {

struct Interval {
  SimTime begin, end;
};

// Total length of the intersection of two sorted lists of disjoint intervals.
SimTime Overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  SimTime total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const SimTime lo = std::max(a[i].begin, b[j].begin);
    const SimTime hi = std::min(a[i].end, b[j].end);
    if (hi > lo) total += hi - lo;
    if (a[i].end < b[j].end) ++i; else ++j;
  }
  return total;
}

SimTime Length(const std::vector<Interval>& v) {
  SimTime total = 0;
  for (const Interval& x : v) total += x.end - x.begin;
  return total;
}

}  // namespace

RunMetrics ComputeMetrics(const plan::Plan& plan, const EngineResult& result) {
  RunMetrics m;
  const int iterations = plan.iterations;
  const auto ranks = static_cast<std::size_t>(plan.num_ranks());
  std::vector<SimTime> iter_end(static_cast<std::size_t>(iterations), 0);
  std::vector<int> optimizer_count(ranks, 0);
  for (std::size_t t = 0; t < plan.num_tasks(); ++t) {
    const plan::Task& task = plan.tasks()[t];
    if (task.kind != plan::TaskKind::kOptimizer) continue;
    ++optimizer_count[static_cast<std::size_t>(task.rank)];
    auto& e = iter_end[static_cast<std::size_t>(task.iteration)];
    e = std::max(e, result.timing[t].end);
  }
  for (int c : optimizer_count) DTSIM_CHECK(c == iterations, "one optimizer task per iteration");

  m.first_measured_iteration = iterations >= 2 ? 1 : 0;
  m.measured_iterations = iterations - m.first_measured_iteration;
  const SimTime window_begin =
      m.first_measured_iteration == 0 ? 0 : iter_end[static_cast<std::size_t>(m.first_measured_iteration - 1)];
  const SimTime window_end = iter_end.back();
  for (SimTime e : iter_end) m.iteration_end_s.push_back(NsToSeconds(e));
  m.step_time_s = NsToSeconds(window_end - window_begin) / m.measured_iterations;
  if (m.step_time_s > 0)
    m.throughput_samples_per_s = static_cast<double>(plan.samples_per_iteration) / m.step_time_s;

  // Busy intervals per rank and stream inside the measured window. Stream
  // tasks run one at a time in order, so each list is sorted and disjoint.
  std::vector<std::vector<Interval>> compute(ranks), comm(ranks);
  for (std::size_t t = 0; t < plan.num_tasks(); ++t) {
    const plan::Task& task = plan.tasks()[t];
    const TaskTiming& tm = result.timing[t];
    const SimTime b = std::max(tm.start, window_begin), e = std::min(tm.end, window_end);
    if (e <= b) continue;
    auto& list = task.stream == plan::StreamKind::kCompute ? compute : comm;
    list[static_cast<std::size_t>(task.rank)].push_back({b, e});
  }
  const double per_iter = 1.0 / m.measured_iterations;
  const SimTime window = window_end - window_begin;
  for (std::size_t r = 0; r < ranks; ++r) {
    // Whole nanoseconds first, so that the three parts add up exactly.
    const SimTime busy = Length(compute[r]);
    const SimTime comm_busy = Length(comm[r]);
    const SimTime exposed = comm_busy - Overlap(compute[r], comm[r]);
    const SimTime idle = std::max<SimTime>(0, window - busy - exposed);
    Breakdown b;
    b.compute_s = NsToSeconds(busy) * per_iter;
    b.comm_s = NsToSeconds(comm_busy) * per_iter;
    b.exposed_comm_s = NsToSeconds(exposed) * per_iter;
    b.idle_s = NsToSeconds(idle) * per_iter;
    m.per_rank.push_back(b);
    m.compute_utilization.push_back(window > 0 ? static_cast<double>(busy) / window : 0.0);
    m.breakdown.compute_s += b.compute_s / static_cast<double>(ranks);
    m.breakdown.exposed_comm_s += b.exposed_comm_s / static_cast<double>(ranks);
    m.breakdown.idle_s += b.idle_s / static_cast<double>(ranks);
    m.breakdown.comm_s += b.comm_s / static_cast<double>(ranks);
  }
  return m;
}

}  // namespace dtsim::sim
