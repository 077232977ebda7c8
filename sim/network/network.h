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

#include "common/units.h"

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
  double collective_latency_s = 0;  // fixed cost of each collective call (plan_costs.h)
  // Device to host memory (PCIe), per device and direction: collectives
  // summed on the host (plan::Collective::via_host).
  double host_link_bw_bytes_per_s = 0;
  double host_link_latency_s = 0;
  // The host CPU summing buffers in memory (bytes streamed per second).
  double host_memory_bytes_per_s = 0;
  // NCCL's protocols instead of collective_latency_s (sim/cost/nccl_protocols.h),
  // and whether LL128 is on (NCCL enables it only on Volta, Ampere and
  // Hopper with NVLink).
  bool nccl_protocols = false;
  bool nccl_ll128 = false;
  // Endpoints beyond the nodes x devices_per_node devices (parameter-server
  // tasks), ranked after them: the node each one sits on. A node index >=
  // `nodes` adds a node (a dedicated server machine with its own NIC). Their
  // port into the node runs at intra_bw_bytes_per_s.
  std::vector<int> extra_endpoint_nodes;
  // Mixed clusters (sim/node_groups.h): per node, its NICs' bandwidth and
  // latency and its device ports' bandwidth and latency; empty = the values
  // above on every node, and nodes past a vector's end (dedicated server
  // nodes) take them too. A path takes its sending node's latency.
  std::vector<double> node_nic_bw_bytes_per_s;
  std::vector<double> node_net_latency_s;
  std::vector<double> node_intra_bw_bytes_per_s;
  std::vector<double> node_intra_latency_s;

  double NicBw(int node) const { return Of(node_nic_bw_bytes_per_s, node, nic_bw_bytes_per_s); }
  double NetLatency(int node) const { return Of(node_net_latency_s, node, net_latency_s); }
  double IntraBw(int node) const {
    return Of(node_intra_bw_bytes_per_s, node, intra_bw_bytes_per_s);
  }
  double IntraLatency(int node) const { return Of(node_intra_latency_s, node, intra_latency_s); }

 private:
  static double Of(const std::vector<double>& per_node, int node, double fallback) {
    return node >= 0 && static_cast<std::size_t>(node) < per_node.size()
               ? per_node[static_cast<std::size_t>(node)]
               : fallback;
  }
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

  // Point-to-point transfers that come and go (parameter-server pushes and
  // pulls): each reserves every link of its path for bytes / (slowest link
  // bandwidth), first come first served, so transfers into one server link
  // queue behind each other (incast). Returns when the transfer that is
  // ready at `now_ns` has arrived (its reservation end plus path latency).
  SimTime ReserveTransfer(int src, int dst, double bytes, SimTime now_ns);
  // Transfers from one sender that start together at `now_ns` (a server
  // answering its workers): they share the sender's link fairly, as TCP
  // flows do, instead of queueing on it. Processor sharing on the solo
  // times d_i = bytes_i / (slowest link of path i), sorted d_(1) <= ... <=
  // d_(k), from when the sender's link is free: transfer (j) leaves it after
  // sum_{i<j} d_(i) + (k - j + 1) d_(j). A transfer whose other links are
  // busy until t (another sender's transfers into the same receiver)
  // ends no earlier than t + d_i; then its path latency. Links are
  // reserved until their transfers end. ends[i] for dst[i]. One transfer
  // is ReserveTransfer.
  void ReserveTransferGroup(int src, std::span<const int> dst, std::span<const double> bytes,
                            SimTime now_ns, std::span<SimTime> ends);
  // The same transfer alone on an idle network, seconds.
  double TransferSeconds(int src, int dst, double bytes) const;

  // The links by index (the layout is network.cc's), for time-dependent
  // bandwidth (sim/network/link_events.h): a device's port into its node's
  // switch, a node's NICs together, a fat-tree leaf's uplinks to the spine,
  // each one direction. REQUIRES: the index exists (leaves: fat_tree only).
  int num_links() const { return static_cast<int>(bw_.size()); }
  int DeviceLink(int rank, bool up) const { return up ? rank : num_ranks() + rank; }
  int NicLink(int node, bool up) const { return 2 * num_ranks() + (up ? 0 : num_nodes_) + node; }
  int LeafLink(int leaf, bool up) const;
  int num_leaves() const;
  // The links a transfer from `src` to `dst` crosses, in path order (none
  // when src == dst).
  std::vector<int> RouteLinks(int src, int dst) const;
  double LinkBandwidth(int link) const { return bw_[static_cast<std::size_t>(link)]; }  // bytes/s
  // Multiplies link `link`'s bandwidth by `factor` (> 0).
  void ScaleLink(int link, double factor);
  // While `used` is not null, StepSeconds, TransferSeconds and the
  // reservations set used[l] = 1 for every link l that carries bytes.
  // REQUIRES: used->size() == num_links().
  void RecordUse(std::vector<char>* used) { used_ = used; }

  const NetworkSpec& spec() const { return spec_; }
  int num_ranks() const {
    return grid_ranks() + static_cast<int>(spec_.extra_endpoint_nodes.size());
  }
  int num_nodes() const { return num_nodes_; }
  int NodeOf(int rank) const {
    return rank < grid_ranks()
               ? rank / spec_.devices_per_node
               : spec_.extra_endpoint_nodes[static_cast<std::size_t>(rank - grid_ranks())];
  }

 private:
  struct Path {
    int links[4];
    int num_links = 0;
    double latency_s = 0;
  };
  Path Route(int src, int dst) const;
  int grid_ranks() const { return spec_.nodes * spec_.devices_per_node; }

  NetworkSpec spec_;
  int num_nodes_ = 0;
  std::vector<SimTime> busy_until_;  // per link, for ReserveTransfer
  std::vector<double> bw_;       // per link, bytes/s
  std::vector<double> load_;     // scratch: bytes per link in the current step
  std::vector<int> touched_;     // scratch: links with non-zero load
  std::vector<char>* used_ = nullptr;  // RecordUse
  void MarkUsed(const Path& p) const;
};

}  // namespace dtsim::sim
