// The analytic network model: the cluster's links as directed capacities, and
// the time a set of simultaneous transfers takes on them.
//
//                  spine (fat_tree only)
//             /                     |
//   leaf_up / leaf_down      leaf_up / leaf_down    leaf uplink = nodes_per_leaf x NIC bw / oversub
//             |                     |
//   nic_up / nic_down  ...   nic_up / nic_down      one per node (all NICs of the node together)
//             |                     |
//   node: dev_up / dev_down per device to the node's switch (NVLink, NVSwitch, PCIe)
//
// Intra-node transfers use dev_up[src] and dev_down[dst]; inter-node
// transfers use nic_up[src node], nic_down[dst node] and, across leaves,
// leaf_up and leaf_down. Every link is full duplex: "up" and "down" are
// separate capacities.
#pragma once

#include <span>
#include <vector>

namespace dtsim::sim {

struct NetworkSpec {
  int nodes = 1;
  int devices_per_node = 1;
  double intra_bw_bytes_per_s = 0;  // per device port, per direction
  double intra_latency_s = 0;       // device to device in a node
  double nic_bw_bytes_per_s = 0;    // per node (all its NICs), per direction
  double net_latency_s = 0;         // node to node through one switch
  bool fat_tree = false;
  int nodes_per_leaf = 1;
  double oversubscription = 1.0;
  double spine_latency_s = 0;       // added on leaf-spine-leaf paths
};

struct Transfer {
  int src = 0;  // rank
  int dst = 0;  // rank
  double bytes = 0;
};

class Network {
 public:
  // REQUIRES: bandwidths > 0, nodes and devices_per_node >= 1.
  explicit Network(const NetworkSpec& spec);

  // Seconds until the last of `transfers` finishes when all start together.
  // Each link must carry the bytes of every transfer routed over it, so a
  // transfer takes its path latency plus the drain time of its most loaded
  // link: max over links l on its path of (bytes over l) / bw(l). For
  // equal-sized transfers this is the max-min fair completion time.
  // Transfers with src == dst cost nothing.
  double StepSeconds(std::span<const Transfer> transfers);

  const NetworkSpec& spec() const { return spec_; }
  int num_ranks() const { return spec_.nodes * spec_.devices_per_node; }
  int NodeOf(int rank) const { return rank / spec_.devices_per_node; }

 private:
  struct Path {
    int links[4];
    int num_links = 0;
    double latency_s = 0;
  };
  Path Route(int src, int dst) const;

  NetworkSpec spec_;
  std::vector<double> bw_;       // per link, bytes/s
  std::vector<double> load_;     // scratch: bytes per link in the current step
  std::vector<int> touched_;     // scratch: links with non-zero load
};

}  // namespace dtsim::sim
