// Reader of the `link_events:` section (format: docs/scenario.md): links
// whose bandwidth drops, or that go down, during the run. Each event is
// checked against the cluster: the node, device or leaf must exist, a
// reroute needs a node's NIC with another NIC beside it, and waiting for a
// link that never comes back would never end.
#include <string>
#include <vector>

#include "config/section_readers.h"

namespace dtsim::config {
namespace {

const std::vector<std::string> kLinkEventKeys = {"at",        "duration", "node", "device",
                                                 "leaf",      "bandwidth", "when_down"};

// An index in [0, count) of a thing the cluster has `count` of.
int ReadIndex(const YamlValue& v, int count, const std::string& what) {
  const int i = v.AsInt(0);
  if (i >= count)
    v.Fail("the cluster has " + std::to_string(count) + " " + what + "s (0-" +
               std::to_string(count - 1) + "), got " + std::to_string(i),
           what + "s are numbered from 0");
  return i;
}

LinkEvent ReadLinkEvent(const YamlValue& v, const ClusterConfig& c) {
  const YamlMap m = v.AsMap(kLinkEventKeys);
  LinkEvent e;
  e.where = v.where();
  e.at_s = m.Require("at", "the simulated time it starts, e.g. 1.5s").AsQuantity(Dimension::kTime);
  if (auto x = m.Get("duration")) e.duration_s = x->AsPositiveQuantity(Dimension::kTime);
  const auto node = m.Get("node");
  const auto leaf = m.Get("leaf");
  if (node.has_value() == leaf.has_value())
    m.self().Fail("expected either node (its NICs; with device: that device's port) or leaf "
                  "(a fat-tree leaf's uplinks)",
                  "e.g. node: 3");
  if (node) e.node = ReadIndex(*node, c.nodes, "node");
  if (auto x = m.Get("device")) {
    if (!node) x->Fail("device needs node: the device's port into that node's switch");
    e.device = ReadIndex(*x, c.devices_per_node, "device per node");
  }
  if (leaf) {
    if (c.network.topology != Topology::kFatTree)
      leaf->Fail("leaf needs cluster.network.topology: fat_tree", "or name a node's NICs: node: N");
    const int leaves = (c.nodes + c.network.nodes_per_leaf - 1) / c.network.nodes_per_leaf;
    e.leaf = ReadIndex(*leaf, leaves, "leaf");
  }
  const YamlValue bw = m.Require("bandwidth", "the fraction left while it lasts: 0 (down) to 0.99");
  e.bandwidth = bw.AsNumber();
  if (!(e.bandwidth >= 0 && e.bandwidth < 1))
    bw.Fail("expected a fraction of the nominal bandwidth in [0, 1), got " + bw.Describe(),
            "0 is a link that is down, 0.5 half its bandwidth");
  if (auto x = m.Get("when_down")) {
    if (e.bandwidth != 0) x->Fail("when_down is for a link that is down (bandwidth: 0)");
    e.when_down = x->AsChoice({"wait", "reroute"}, "policy") == 0 ? LinkDownPolicy::kWait
                                                                  : LinkDownPolicy::kReroute;
  }
  if (e.bandwidth == 0 && e.when_down == LinkDownPolicy::kReroute &&
      (e.node < 0 || e.device >= 0 || c.NicsOfNode(e.node) < 2))
    m.Require("when_down")
        .Fail("reroute moves a node's traffic to its other NICs, and this link has no other beside "
              "it",
              "reroute a node's NICs with cluster.network.nics_per_node >= 2, or when_down: wait");
  if (e.bandwidth == 0 && e.when_down == LinkDownPolicy::kWait && e.duration_s == 0)
    m.self().Fail("a link that is down and never repaired stalls the run forever",
                  "give the time to repair it: duration: 30s");
  return e;
}

}  // namespace

const char* LinkDownPolicyName(LinkDownPolicy p) {
  return p == LinkDownPolicy::kWait ? "wait" : "reroute";
}

std::vector<LinkEvent> ReadLinkEvents(const YamlValue& v, const ClusterConfig& cluster) {
  std::vector<LinkEvent> events;
  for (const YamlValue& item : v.AsSequence()) events.push_back(ReadLinkEvent(item, cluster));
  return events;
}

}  // namespace dtsim::config
