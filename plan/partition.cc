#include "plan/partition.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>

#include "common/error.h"

namespace dtsim::plan {

namespace {

// Exact min-max contiguous partition by dynamic programming; `allowed(k, a,
// b)` says whether units [a, b) may form chunk k. Returns false when no
// split is allowed.
bool MinMaxSplit(const std::vector<LayerUnit>& units, const std::vector<double>& unit_cost,
                 int parts, const std::function<bool(int, int, int)>& allowed,
                 std::vector<OpRange>* chunks) {
  const int n = static_cast<int>(units.size());
  DTSIM_CHECK(parts >= 1 && parts <= n, "need 1 <= parts <= units");
  DTSIM_CHECK(unit_cost.size() == units.size(), "one cost per unit");
  std::vector<double> prefix(static_cast<std::size_t>(n) + 1, 0.0);
  for (int i = 0; i < n; ++i)
    prefix[static_cast<std::size_t>(i) + 1] = prefix[static_cast<std::size_t>(i)] + unit_cost[static_cast<std::size_t>(i)];
  const auto cost = [&](int a, int b) { return prefix[static_cast<std::size_t>(b)] - prefix[static_cast<std::size_t>(a)]; };
  // best[k][i]: the smallest possible largest chunk when the first i units
  // form k chunks; cut[k][i]: where the last of those chunks starts.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(static_cast<std::size_t>(parts) + 1,
                                        std::vector<double>(static_cast<std::size_t>(n) + 1, inf));
  std::vector<std::vector<int>> cut(best.size(), std::vector<int>(static_cast<std::size_t>(n) + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= parts; ++k)
    for (int i = k; i <= n - (parts - k); ++i)
      for (int j = k - 1; j < i; ++j) {
        if (best[static_cast<std::size_t>(k - 1)][static_cast<std::size_t>(j)] == inf) continue;
        if (allowed && !allowed(k - 1, j, i)) continue;
        const double c = std::max(best[static_cast<std::size_t>(k - 1)][static_cast<std::size_t>(j)], cost(j, i));
        if (c < best[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)]) {
          best[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)] = c;
          cut[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)] = j;
        }
      }
  if (best[static_cast<std::size_t>(parts)][static_cast<std::size_t>(n)] == inf) return false;
  chunks->assign(static_cast<std::size_t>(parts), {});
  int end = n;
  for (int k = parts; k >= 1; --k) {
    const int start = cut[static_cast<std::size_t>(k)][static_cast<std::size_t>(end)];
    (*chunks)[static_cast<std::size_t>(k - 1)] = {units[static_cast<std::size_t>(start)].begin,
                                                   units[static_cast<std::size_t>(end - 1)].end};
    end = start;
  }
  return true;
}

}  // namespace

std::vector<OpRange> BalancedChunks(const std::vector<LayerUnit>& units,
                                    const std::vector<double>& unit_cost, int parts) {
  std::vector<OpRange> chunks;
  MinMaxSplit(units, unit_cost, parts, {}, &chunks);
  return chunks;
}

std::vector<OpRange> BalancedChunksWithinMemory(const std::vector<LayerUnit>& units,
                                                const std::vector<double>& unit_cost,
                                                const std::vector<double>& static_bytes,
                                                const std::vector<double>& activation_bytes,
                                                const std::vector<int>& in_flight,
                                                double capacity_bytes, int parts, bool* fits,
                                                const std::vector<double>& working_bytes) {
  DTSIM_CHECK(static_bytes.size() == units.size() && activation_bytes.size() == units.size() &&
                  in_flight.size() == static_cast<std::size_t>(parts) &&
                  (working_bytes.empty() || working_bytes.size() == units.size()),
              "memory per unit and micro-batches in flight per chunk");
  const std::size_t n = units.size();
  std::vector<double> st(n + 1, 0.0), act(n + 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    st[i + 1] = st[i] + static_bytes[i];
    act[i + 1] = act[i] + activation_bytes[i];
  }
  // most[a * n + b - 1]: the largest working set of units [a, b).
  std::vector<double> most(working_bytes.empty() ? 0 : n * n, 0.0);
  for (std::size_t a = 0; a < n && !working_bytes.empty(); ++a) {
    double m = 0;
    for (std::size_t b = a; b < n; ++b) most[a * n + b] = m = std::max(m, working_bytes[b]);
  }
  const auto allowed = [&](int k, int a, int b) {
    const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
    const double working = most.empty() || ub == ua ? 0.0 : most[ua * n + ub - 1];
    return st[ub] - st[ua] + in_flight[static_cast<std::size_t>(k)] * (act[ub] - act[ua]) +
               working <=
           capacity_bytes;
  };
  std::vector<OpRange> chunks;
  *fits = MinMaxSplit(units, unit_cost, parts, allowed, &chunks);
  if (!*fits) MinMaxSplit(units, unit_cost, parts, {}, &chunks);
  return chunks;
}

std::vector<OpRange> EvenLayerChunks(const std::vector<LayerUnit>& units, int parts) {
  std::vector<int> blocks;  // indices of the repeated blocks "layerN"
  for (std::size_t i = 0; i < units.size(); ++i) {
    const std::string& name = units[i].name;
    if (name.size() > 5 && name.starts_with("layer") &&
        std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      blocks.push_back(static_cast<int>(i));
  }
  const int l = static_cast<int>(blocks.size());
  if (l == 0 || l % parts != 0)
    throw UserError("cannot split " + std::to_string(l) + " transformer layers evenly over " +
                        std::to_string(parts) + " pipeline chunks",
                    "choose pipeline_parallel x virtual_stages dividing the layers, or give "
                    "parallelism.stage_layers");
  std::vector<int> counts(static_cast<std::size_t>(parts), l / parts);
  counts.front() += blocks.front();                                            // embeddings
  counts.back() += static_cast<int>(units.size()) - 1 - blocks.back();          // head
  return ChunksFromCounts(units, counts);
}

std::vector<OpRange> ChunksFromCounts(const std::vector<LayerUnit>& units,
                                      const std::vector<int>& counts) {
  int total = 0;
  for (int c : counts) {
    if (c < 1) throw UserError("every pipeline chunk needs at least one layer unit");
    total += c;
  }
  if (total != static_cast<int>(units.size()))
    throw UserError("parallelism.stage_layers adds up to " + std::to_string(total) +
                        " layer units, the model has " + std::to_string(units.size()),
                    "`dtsim model NAME` lists the ops; units are layers like 'layer3' or "
                    "'embed'");
  std::vector<OpRange> chunks;
  std::size_t u = 0;
  for (int c : counts) {
    chunks.push_back({units[u].begin, units[u + static_cast<std::size_t>(c) - 1].end});
    u += static_cast<std::size_t>(c);
  }
  return chunks;
}

}  // namespace dtsim::plan
