#include "sim/server_loads.h"

#include <algorithm>
#include <utility>

#include "common/units.h"

namespace dtsim::sim {

std::vector<ServerLoad> ComputeServerLoads(const plan::Plan& plan, const EngineResult& r,
                                           int first, int last) {
  std::vector<ServerLoad> loads;
  std::vector<int> index(static_cast<std::size_t>(plan.num_ranks()), -1);
  for (plan::RankId x = 0; x < plan.num_ranks(); ++x) {
    if (!plan.IsServer(x)) continue;
    const auto s = loads.size();
    index[static_cast<std::size_t>(x)] = static_cast<int>(s);
    ServerLoad load;
    load.rank = x;
    if (s < plan.server_params.size())
      for (const plan::ParamSpan& span : plan.server_params[s]) load.params += span.count;
    loads.push_back(load);
  }
  if (loads.empty() || last < first) return loads;
  std::vector<std::vector<std::pair<SimTime, SimTime>>> spans(loads.size());
  for (std::size_t t = 0; t < plan.num_tasks(); ++t) {
    const plan::Task& task = plan.tasks()[t];
    if (task.kind != plan::TaskKind::kSend || task.iteration < first || task.iteration > last)
      continue;
    for (plan::RankId end : {task.rank, task.peer}) {
      if (end < 0 || end >= plan.num_ranks()) continue;
      const int s = index[static_cast<std::size_t>(end)];
      if (s < 0) continue;
      loads[static_cast<std::size_t>(s)].bytes_per_step += task.bytes;
      spans[static_cast<std::size_t>(s)].push_back({r.timing[t].start, r.timing[t].end});
    }
  }
  const double steps = last - first + 1;
  for (std::size_t s = 0; s < loads.size(); ++s) {
    auto& v = spans[s];
    std::sort(v.begin(), v.end());
    SimTime busy = 0, open = 0, close = -1;
    for (const auto& [b, e] : v) {
      if (b > close) {
        busy += close > open ? close - open : 0;
        open = b;
        close = e;
      } else {
        close = std::max(close, e);
      }
    }
    busy += close > open ? close - open : 0;
    loads[s].bytes_per_step /= steps;
    loads[s].busy_s = NsToSeconds(busy) / steps;
  }
  return loads;
}

}  // namespace dtsim::sim
