#include "sim/async_figures.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace dtsim::sim {

AsyncFigures ComputeAsyncFigures(const plan::Plan& plan, const EngineResult& r, int first) {
  AsyncFigures f;
  int workers = 0;
  for (plan::RankId x = 0; x < plan.num_ranks(); ++x) workers += !plan.IsServer(x);
  // Per server: the start times of its applies; per (worker, server,
  // iteration): when the worker pulled.
  std::map<plan::RankId, std::vector<SimTime>> applies;
  std::map<std::tuple<int, int, int>, SimTime> pulled;
  std::vector<SimTime> worker_first(static_cast<std::size_t>(workers), -1);
  std::vector<SimTime> worker_last(static_cast<std::size_t>(workers), 0);
  std::vector<int> steps(static_cast<std::size_t>(workers), 0);
  for (std::size_t t = 0; t < plan.num_tasks(); ++t) {
    const plan::Task& task = plan.tasks()[t];
    if (task.kind == plan::TaskKind::kOptimizer && plan.IsServer(task.rank))
      applies[task.rank].push_back(r.timing[t].start);
    if (task.kind == plan::TaskKind::kSend && plan.IsServer(task.rank))
      pulled[{task.peer, task.rank, task.iteration}] = r.timing[t].start;
    if (!plan.IsServer(task.rank)) {
      auto w = static_cast<std::size_t>(task.rank);
      worker_last[w] = std::max(worker_last[w], r.timing[t].end);
    }
  }
  for (auto& [server, times] : applies) std::sort(times.begin(), times.end());
  std::vector<double> staleness;
  for (std::size_t t = 0; t < plan.num_tasks(); ++t) {
    const plan::Task& task = plan.tasks()[t];
    if (task.kind != plan::TaskKind::kOptimizer || !plan.IsServer(task.rank)) continue;
    const auto deps = plan.deps(static_cast<plan::TaskId>(t));
    const plan::Task& push = plan.task(deps[0]);
    auto it = pulled.find({push.rank, task.rank, push.iteration});
    if (it == pulled.end()) continue;
    const auto& times = applies[task.rank];
    const SimTime applied = r.timing[t].start;
    const auto lo = std::lower_bound(times.begin(), times.end(), it->second);
    const auto hi = std::lower_bound(times.begin(), times.end(), applied);
    staleness.push_back(static_cast<double>(std::max<std::ptrdiff_t>(0, hi - lo)));
  }
  if (!staleness.empty()) f.staleness = Summarize(staleness);
  // Pace: each worker's iterations after the first, over the time they took.
  std::vector<SimTime> end_of_first(static_cast<std::size_t>(workers), 0);
  for (std::size_t t = 0; t < plan.num_tasks(); ++t) {
    const plan::Task& task = plan.tasks()[t];
    if (plan.IsServer(task.rank) || task.iteration >= first) continue;
    auto w = static_cast<std::size_t>(task.rank);
    end_of_first[w] = std::max(end_of_first[w], r.timing[t].end);
  }
  for (int w = 0; w < workers; ++w) {
    const auto i = static_cast<std::size_t>(w);
    const int measured = plan.iterations - first;
    const double secs = NsToSeconds(worker_last[i] - end_of_first[i]);
    const double rate = secs > 0 ? measured / secs : 0;
    f.worker_steps.push_back(plan.iterations);
    f.worker_steps_per_s.push_back(rate);
    f.global_steps_per_s += rate;
  }
  return f;
}

}  // namespace dtsim::sim
