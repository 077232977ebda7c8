#include "study/sweep_unused.h"

#include <string>
#include <utility>

#include "common/error.h"

namespace dtsim::study {
namespace {

// Whether the axis at `axis_path` lies at or under the key `key_path`
// ("parallelism.parameter_server.servers" under "parallelism.parameter_server").
bool Under(const std::string& axis_path, const std::string& key_path) {
  if (!axis_path.starts_with(key_path)) return false;
  return axis_path.size() == key_path.size() || axis_path[key_path.size()] == '.' ||
         axis_path[key_path.size()] == '[';
}

bool Lists(const std::vector<config::UnusedKey>& keys, const std::string& path) {
  for (const config::UnusedKey& k : keys) {
    if (k.path == path) return true;
  }
  return false;
}

// "<scenario>/<axis>=<value>,..." over the axes the point uses (sweep.h's
// point names, without the unused axes).
std::string NameWithoutUnused(const SweepPoint& p, const std::vector<SweepAxis>& axes) {
  std::string name = p.scenario.name;
  bool first = true;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (p.unused_axes[a]) continue;
    name += (first ? "/" : ",") + axes[a].path + "=" + axes[a].values[p.choice[a]];
    first = false;
  }
  return name;
}

}  // namespace

void ApplyUnusedKeys(const std::vector<std::vector<config::UnusedKey>>& unused, bool all_loaded,
                     Sweep* sweep) {
  DTSIM_CHECK(unused.size() == sweep->points.size(), "one list of unused keys per point");
  if (all_loaded && !unused.empty()) {
    // The keys are the same in every point (axes replace values only).
    for (const config::UnusedKey& k : unused.front()) {
      bool used = false;
      for (std::size_t i = 1; i < unused.size() && !used; ++i) used = !Lists(unused[i], k.path);
      if (!used) {
        throw UserError(k.where, k.reason,
                        "no point of the sweep uses it: remove the key, or sweep a strategy "
                        "that uses it (docs/scenario.md)");
      }
    }
  }
  std::vector<SweepPoint> kept;
  kept.reserve(sweep->points.size());
  for (std::size_t i = 0; i < sweep->points.size(); ++i) {
    SweepPoint& p = sweep->points[i];
    p.unused_axes.assign(sweep->axes.size(), false);
    bool repeats = false;
    for (std::size_t a = 0; a < sweep->axes.size(); ++a) {
      for (const config::UnusedKey& k : unused[i]) {
        if (!Under(sweep->axes[a].path, k.path)) continue;
        p.unused_axes[a] = true;
        repeats = repeats || p.choice[a] != 0;
      }
    }
    if (repeats) continue;  // the same simulation as the point with the first values
    if (!unused[i].empty()) p.name = NameWithoutUnused(p, sweep->axes);
    kept.push_back(std::move(p));
  }
  sweep->points = std::move(kept);
}

}  // namespace dtsim::study
