#include "sim/context_figures.h"

#include <algorithm>
#include <vector>

namespace dtsim::sim {
namespace {

struct Interval {
  SimTime begin, end;
};

std::vector<Interval> Merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  for (const Interval& x : v) {
    if (!out.empty() && x.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, x.end);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

SimTime Length(const std::vector<Interval>& v) {
  SimTime total = 0;
  for (const Interval& x : v) total += x.end - x.begin;
  return total;
}

// Length of the intersection of two merged lists.
SimTime Overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  SimTime total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const SimTime lo = std::max(a[i].begin, b[j].begin), hi = std::min(a[i].end, b[j].end);
    if (hi > lo) total += hi - lo;
    if (a[i].end < b[j].end) ++i; else ++j;
  }
  return total;
}

}  // namespace

ContextComm ComputeContextComm(const plan::Plan& plan, const EngineResult& result,
                               const RunMetrics& metrics, int t, int c) {
  ContextComm out;
  if (c <= 1) return out;
  out.degree = c;
  const int block = t * c;
  const int first = metrics.first_measured_iteration;
  const int last = first + std::max(1, metrics.measured_iterations) - 1;
  const auto in_block = [&](plan::RankId a, plan::RankId b) { return a / block == b / block; };
  std::vector<std::vector<Interval>> comm(static_cast<std::size_t>(plan.num_ranks()));
  std::vector<std::vector<Interval>> compute(comm.size());
  std::vector<double> bytes(comm.size(), 0);
  for (std::size_t i = 0; i < plan.num_tasks(); ++i) {
    const plan::Task& task = plan.tasks()[i];
    if (task.iteration < first || task.iteration > last) continue;
    const auto r = static_cast<std::size_t>(task.rank);
    const Interval span{result.timing[i].start, result.timing[i].end};
    if (task.kind == plan::TaskKind::kSend) {
      if (task.peer == task.rank || !in_block(task.rank, task.peer)) continue;
      comm[r].push_back(span);
      bytes[r] += task.bytes;
    } else if (task.kind == plan::TaskKind::kCollective) {
      const plan::Collective& col = plan.collectives()[static_cast<std::size_t>(task.collective)];
      if (col.op != plan::CollectiveOp::kAllToAll) continue;
      const auto& group = plan.groups()[static_cast<std::size_t>(col.group)];
      if (group.size() != static_cast<std::size_t>(c) ||
          !std::all_of(group.begin(), group.end(),
                       [&](plan::RankId x) { return in_block(x, task.rank); }))
        continue;
      comm[r].push_back(span);
      bytes[r] += col.bytes * (c - 1) / c;  // the pieces for the c - 1 others
    } else if (task.stream == plan::StreamKind::kCompute) {
      compute[r].push_back(span);
    }
  }
  int workers = 0;
  const double iterations = last - first + 1;
  for (std::size_t r = 0; r < comm.size(); ++r) {
    if (!plan.IsMaterialized(static_cast<plan::RankId>(r)) ||
        plan.IsServer(static_cast<plan::RankId>(r)))
      continue;
    ++workers;
    const std::vector<Interval> cm = Merged(comm[r]), cp = Merged(compute[r]);
    out.comm_s += NsToSeconds(Length(cm)) / iterations;
    out.exposed_s += NsToSeconds(Length(cm) - Overlap(cm, cp)) / iterations;
    out.bytes += bytes[r] / iterations;
  }
  if (workers > 0) {
    out.comm_s /= workers;
    out.exposed_s /= workers;
    out.bytes /= workers;
  }
  return out;
}

}  // namespace dtsim::sim
