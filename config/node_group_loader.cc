// Reader of `cluster.node_groups:` (format: docs/scenario.md): a cluster of
// nodes that differ in device, intra-node link or NICs, in named groups.
// Each group takes the cluster's keys for what it leaves out; ranks are
// numbered group by group, node by node.
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "config/section_readers.h"

namespace dtsim::config {
namespace {

const std::vector<std::string> kNodeGroupKeys = {"name", "nodes", "devices_per_node", "device",
                                                 "intra_node_link", "nics_per_node", "link"};

NodeGroup ReadNodeGroup(const YamlValue& v, const hw::HardwareCatalog& catalog,
                        const ClusterConfig& defaults) {
  const YamlMap m = v.AsMap(kNodeGroupKeys);
  NodeGroup g;
  g.where = v.where();
  g.name = m.Require("name", "a name for the report, e.g. a100").AsString();
  g.nodes = m.Require("nodes", "how many nodes the group has, e.g. 8").AsInt(1);
  g.devices_per_node = defaults.devices_per_node;
  if (auto x = m.Get("devices_per_node")) g.devices_per_node = x->AsInt(1);
  g.device = defaults.device;
  if (auto x = m.Get("device")) g.device = ResolveDevice(*x, catalog);
  g.intra_node_link = defaults.intra_node_link;
  if (auto x = m.Get("intra_node_link")) g.intra_node_link = ResolveLink(*x, catalog);
  g.nics_per_node = defaults.network.nics_per_node;
  if (auto x = m.Get("nics_per_node")) g.nics_per_node = x->AsInt(1);
  g.link = defaults.network.link;
  if (auto x = m.Get("link")) g.link = ResolveLink(*x, catalog);
  const hw::DeviceSpec* device = catalog.FindDevice(g.device);
  if (device != nullptr && device->kind != "gpu")
    (m.Get("device") ? *m.Get("device") : v)
        .Fail("node group '" + g.name + "' holds workers, and device '" + g.device +
                  "' is a " + device->kind + ": dtsim places no workers on CPU-only nodes",
              "parameter servers on CPU-only nodes are parallelism.parameter_server with "
              "device: cpu-host and placement: dedicated (their own nodes, on "
              "cluster.network.link)");
  return g;
}

}  // namespace

void ReadNodeGroups(const YamlValue& v, const std::optional<YamlValue>& nodes,
                    const hw::HardwareCatalog& catalog, ClusterConfig* c) {
  if (nodes)
    nodes->Fail("cluster.nodes and cluster.node_groups are exclusive: the groups give the nodes",
                "remove cluster.nodes, or give each group its nodes");
  const std::vector<YamlValue> items = v.AsSequence();
  if (items.empty()) v.Fail("expected at least one node group", "e.g. - {name: a100, nodes: 8}");
  std::vector<NodeGroup> groups;
  std::int64_t total = 0;
  for (const YamlValue& item : items) {
    NodeGroup g = ReadNodeGroup(item, catalog, *c);
    for (const NodeGroup& other : groups)
      if (EqualsIgnoreCase(other.name, g.name))
        item.Fail("node group '" + g.name + "' is defined twice", "give each group its own name");
    // Ranks are numbered node-major with one devices_per_node (plan and
    // network: rank r is on node r / devices_per_node).
    if (!groups.empty() && g.devices_per_node != groups.front().devices_per_node) {
      const YamlMap m = item.AsMap(kNodeGroupKeys);
      (m.Get("devices_per_node") ? *m.Get("devices_per_node") : item)
          .Fail("node group '" + g.name + "' has " + std::to_string(g.devices_per_node) +
                    " devices per node and group '" + groups.front().name + "' " +
                    std::to_string(groups.front().devices_per_node) +
                    ": groups with different devices_per_node are not simulated yet",
                "give every group the same devices_per_node");
    }
    total += std::int64_t{g.nodes} * g.devices_per_node;
    if (total > INT_MAX)
      item.Fail("the node groups hold " + std::to_string(total) +
                " devices, more than dtsim can number");
    groups.push_back(std::move(g));
  }
  c->nodes = 0;
  for (const NodeGroup& g : groups) c->nodes += g.nodes;
  c->devices_per_node = groups.front().devices_per_node;
  c->device = groups.front().device;
  c->intra_node_link = groups.front().intra_node_link;
  c->node_groups = std::move(groups);
}

}  // namespace dtsim::config
