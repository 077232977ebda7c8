#include "sim/contention_note.h"

#include <map>
#include <set>

namespace dtsim::sim {

std::string ContentionNote(const config::Scenario& s, const plan::Plan& plan) {
  if (s.engine != "analytic") return "";
  std::map<std::int32_t, std::int32_t> crossing_group_of_node;  // node -> a group crossing it
  std::set<std::int32_t> seen;
  bool contends = false;
  for (const plan::Collective& c : plan.collectives()) {
    if (contends) break;
    if (!seen.insert(c.group).second && c.copies <= 1) continue;
    std::set<std::int32_t> nodes;
    for (plan::RankId r : plan.groups()[static_cast<std::size_t>(c.group)])
      nodes.insert(plan.ranks[static_cast<std::size_t>(r)].node);
    if (nodes.size() < 2) continue;
    if (c.copies > 1) contends = true;
    for (std::int32_t node : nodes) {
      const auto [it, added] = crossing_group_of_node.emplace(node, c.group);
      if (!added && it->second != c.group) contends = true;
    }
  }
  if (!contends) return "";
  return "analytic engine: collectives that run at once over the same node's links are priced "
         "each alone (contention not modelled); run with engine: simgrid to share the links";
}

}  // namespace dtsim::sim
