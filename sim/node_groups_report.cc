// The per-group part of the reports (sim/report.h) of a mixed cluster.
#include <cstdio>
#include <sstream>

#include "common/units.h"
#include "sim/node_groups.h"

namespace dtsim::sim {

namespace {
constexpr const char* kPlacement = "ranks numbered group by group, node by node";
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

nlohmann::ordered_json NodeGroupsJson(const config::Scenario& s,
                                      const std::vector<GroupFigures>& groups) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const GroupFigures& g : groups) {
    list.push_back({{"name", g.name},
                    {"device", g.device},
                    {"first_node", g.first_node},
                    {"nodes", g.nodes},
                    {"first_rank", g.first_rank},
                    {"ranks", g.ranks},
                    {"batch_per_device_min", g.min_batch_per_device},
                    {"batch_per_device_max", g.max_batch_per_device},
                    {"samples_per_step", g.samples_per_step},
                    {"single_device_step_s", g.single_device_step_s},
                    {"compute_s", g.compute_s},
                    {"exposed_comm_s", g.exposed_comm_s},
                    {"idle_s", g.idle_s},
                    {"memory_bytes", g.memory_bytes},
                    {"capacity_bytes", g.capacity_bytes}});
  }
  return {{"placement", kPlacement},
          {"balance_batch", config::BatchBalanceName(s.parallelism.balance_batch)},
          {"groups", std::move(list)}};
}

std::string NodeGroupsText(const config::Scenario& s, const std::vector<GroupFigures>& groups) {
  std::ostringstream o;
  o << "node groups (" << kPlacement << "; batch "
    << (s.parallelism.balance_batch == config::BatchBalance::kBySpeed ? "balanced by speed"
                                                                       : "even")
    << "), per step:\n";
  char line[512];
  for (const GroupFigures& g : groups) {
    const std::string batch =
        g.min_batch_per_device == g.max_batch_per_device
            ? std::to_string(g.min_batch_per_device)
            : std::to_string(g.min_batch_per_device) + "-" + std::to_string(g.max_batch_per_device);
    std::snprintf(line, sizeof line,
                  "  %s: %d x %s, nodes %d-%d, ranks %d-%d, batch %s per device (alone %s per "
                  "step at batch %d); compute %s, exposed comm %s, idle %s; memory %.1f of "
                  "%.1f GiB\n",
                  g.name.c_str(), g.ranks, g.device.c_str(), g.first_node,
                  g.first_node + g.nodes - 1, g.first_rank, g.first_rank + g.ranks - 1,
                  batch.c_str(), FormatSeconds(g.single_device_step_s).c_str(),
                  s.workload.batch_per_device, FormatSeconds(g.compute_s).c_str(),
                  FormatSeconds(g.exposed_comm_s).c_str(), FormatSeconds(g.idle_s).c_str(),
                  g.memory_bytes / kGiB, g.capacity_bytes / kGiB);
    o << line;
  }
  return o.str();
}

std::string NodeGroupsDevices(const std::vector<GroupFigures>& groups) {
  std::string text;
  for (const GroupFigures& g : groups)
    text += (text.empty() ? "" : " + ") + std::to_string(g.ranks) + " x " + g.device;
  return text;
}

}  // namespace dtsim::sim
