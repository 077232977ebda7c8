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

// Sorts `v` and merges overlapping intervals, leaving a sorted disjoint list.
void MergeIntervals(std::vector<Interval>* v) {
  std::sort(v->begin(), v->end(), [](const Interval& a, const Interval& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::size_t out = 0;
  for (const Interval& x : *v) {
    if (out > 0 && x.begin <= (*v)[out - 1].end) {
      (*v)[out - 1].end = std::max((*v)[out - 1].end, x.end);
    } else {
      (*v)[out++] = x;
    }
  }
  v->resize(out);
}

SimTime Length(const std::vector<Interval>& v) {
  SimTime total = 0;
  for (const Interval& x : v) total += x.end - x.begin;
  return total;
}

}  // namespace

RunMetrics ComputeMetrics(const plan::Plan& plan, const EngineResult& result,
                          MetricsWindow measured) {
  RunMetrics m;
  const int iterations = plan.iterations;
  const auto ranks = static_cast<std::size_t>(plan.num_ranks());
  std::vector<SimTime> iter_end(static_cast<std::size_t>(iterations), 0);
  for (std::size_t t = 0; t < plan.num_tasks(); ++t) {
    const plan::Task& task = plan.tasks()[t];
    if (plan.IsServer(task.rank)) continue;
    DTSIM_CHECK(task.iteration >= 0 && task.iteration < iterations, "task iteration out of range");
    auto& e = iter_end[static_cast<std::size_t>(task.iteration)];
    e = std::max(e, result.timing[t].end);
  }
  // Iteration ends are monotone even if a worker finished an iteration early.
  for (std::size_t i = 1; i < iter_end.size(); ++i) iter_end[i] = std::max(iter_end[i], iter_end[i - 1]);

  const int last = measured.last_iteration >= 0 ? measured.last_iteration : iterations - 1;
  const int first = measured.first_iteration >= 0 ? measured.first_iteration : (last >= 1 ? 1 : 0);
  DTSIM_CHECK(0 <= first && first <= last && last < iterations, "bad metrics window");
  m.first_measured_iteration = first;
  m.measured_iterations = last - first + 1;
  const SimTime window_begin = first == 0 ? 0 : iter_end[static_cast<std::size_t>(first - 1)];
  const SimTime window_end = iter_end[static_cast<std::size_t>(last)];
  for (SimTime e : iter_end) m.iteration_end_s.push_back(NsToSeconds(e));
  m.step_time_s = NsToSeconds(window_end - window_begin) / m.measured_iterations;
  if (m.step_time_s > 0)
    m.throughput_samples_per_s = static_cast<double>(plan.samples_per_iteration) / m.step_time_s;
  std::vector<double> steps;
  for (int i = first; i <= last; ++i)
    steps.push_back(NsToSeconds(iter_end[static_cast<std::size_t>(i)] -
                                (i == 0 ? 0 : iter_end[static_cast<std::size_t>(i - 1)])));
  m.step_times = Summarize(steps);

  // Busy intervals per worker inside the measured window: its compute
  // stream, and communication (its comm stream, plus transfers it sends or
  // receives, which may overlap each other and are merged).
  std::vector<std::vector<Interval>> compute(ranks), comm(ranks);
  std::vector<SimTime> all_to_all(ranks, 0);  // one comm stream: no overlaps
  for (std::size_t t = 0; t < plan.num_tasks(); ++t) {
    const plan::Task& task = plan.tasks()[t];
    const TaskTiming& tm = result.timing[t];
    const SimTime b = std::max(tm.start, window_begin), e = std::min(tm.end, window_end);
    if (e <= b) continue;
    if (task.kind == plan::TaskKind::kSend) {
      for (plan::RankId r : {task.rank, task.peer})
        if (r >= 0 && static_cast<std::size_t>(r) < ranks && !plan.IsServer(r))
          comm[static_cast<std::size_t>(r)].push_back({b, e});
      continue;
    }
    if (plan.IsServer(task.rank)) continue;
    if (task.kind == plan::TaskKind::kCollective &&
        plan.collectives()[static_cast<std::size_t>(task.collective)].op ==
            plan::CollectiveOp::kAllToAll)
      all_to_all[static_cast<std::size_t>(task.rank)] += e - b;
    auto& list = task.stream == plan::StreamKind::kCompute ? compute : comm;
    list[static_cast<std::size_t>(task.rank)].push_back({b, e});
  }
  for (auto& list : comm) MergeIntervals(&list);
  // Waits for the host and for input, by the iteration of the waiting task.
  std::vector<SimTime> host_wait(ranks, 0), input_wait(ranks, 0);
  if (!result.host_wait_ns.empty() || !result.input_wait_ns.empty()) {
    for (std::size_t t = 0; t < plan.num_tasks(); ++t) {
      const plan::Task& task = plan.tasks()[t];
      if (task.stream != plan::StreamKind::kCompute || task.kind == plan::TaskKind::kSend ||
          task.iteration < first || task.iteration > last)
        continue;
      const auto r = static_cast<std::size_t>(task.rank);
      if (!result.host_wait_ns.empty()) host_wait[r] += result.host_wait_ns[t];
      if (!result.input_wait_ns.empty()) input_wait[r] += result.input_wait_ns[t];
    }
  }
  const double per_iter = 1.0 / m.measured_iterations;
  const SimTime window = window_end - window_begin;
  const auto counted = [&](std::size_t r) {
    return plan.IsMaterialized(static_cast<plan::RankId>(r)) &&
           !plan.IsServer(static_cast<plan::RankId>(r));
  };
  std::size_t workers = 0;
  for (std::size_t r = 0; r < ranks; ++r) workers += counted(r);
  for (std::size_t r = 0; r < ranks; ++r) {
    if (!counted(r)) continue;
    // Whole nanoseconds first, so that the three parts add up exactly.
    const SimTime busy = Length(compute[r]);
    const SimTime comm_busy = Length(comm[r]);
    const SimTime exposed = comm_busy - Overlap(compute[r], comm[r]);
    const SimTime idle = std::max<SimTime>(0, window - busy - exposed);
    Breakdown b;
    b.compute_s = NsToSeconds(busy) * per_iter;
    b.comm_s = NsToSeconds(comm_busy) * per_iter;
    b.all_to_all_s = NsToSeconds(all_to_all[r]) * per_iter;
    b.exposed_comm_s = NsToSeconds(exposed) * per_iter;
    b.idle_s = NsToSeconds(idle) * per_iter;
    b.host_wait_s = NsToSeconds(host_wait[r]) * per_iter;
    b.input_wait_s = NsToSeconds(input_wait[r]) * per_iter;
    m.per_rank.push_back(b);
    m.ranks.push_back(static_cast<plan::RankId>(r));
    m.compute_utilization.push_back(window > 0 ? static_cast<double>(busy) / window : 0.0);
    m.breakdown.compute_s += b.compute_s / static_cast<double>(workers);
    m.breakdown.exposed_comm_s += b.exposed_comm_s / static_cast<double>(workers);
    m.breakdown.idle_s += b.idle_s / static_cast<double>(workers);
    m.breakdown.comm_s += b.comm_s / static_cast<double>(workers);
    m.breakdown.all_to_all_s += b.all_to_all_s / static_cast<double>(workers);
    m.breakdown.host_wait_s += b.host_wait_s / static_cast<double>(workers);
    m.breakdown.input_wait_s += b.input_wait_s / static_cast<double>(workers);
  }
  return m;
}

std::vector<double> StepTimesPerWorker(const plan::Plan& plan, const EngineResult& result, int first) {
  DTSIM_CHECK(first >= 1, "StepTimesPerWorker needs a previous iteration");
  const auto ranks = static_cast<std::size_t>(plan.num_ranks());
  const auto iterations = static_cast<std::size_t>(plan.iterations);
  std::vector<SimTime> end(ranks * iterations, -1);
  for (std::size_t t = 0; t < plan.num_tasks(); ++t) {
    const plan::Task& task = plan.tasks()[t];
    if (plan.IsServer(task.rank) || task.kind == plan::TaskKind::kSend) continue;
    SimTime& e = end[static_cast<std::size_t>(task.rank) * iterations +
                     static_cast<std::size_t>(task.iteration)];
    e = std::max(e, result.timing[t].end);
  }
  std::vector<double> steps;
  for (std::size_t r = 0; r < ranks; ++r) {
    if (!plan.IsMaterialized(static_cast<plan::RankId>(r)) || plan.IsServer(static_cast<plan::RankId>(r)))
      continue;
    for (std::size_t i = static_cast<std::size_t>(first); i < iterations; ++i) {
      const SimTime prev = end[r * iterations + i - 1], cur = end[r * iterations + i];
      if (prev >= 0 && cur >= prev) steps.push_back(NsToSeconds(cur - prev));
    }
  }
  return steps;
}

}  // namespace dtsim::sim
