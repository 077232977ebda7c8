#include "sim/network/network.h"

#include <algorithm>

#include "common/error.h"

namespace dtsim::sim {
namespace {
// Link index layout (R = ranks, N = nodes, L = leaves):
//   [0, R) dev_up, [R, 2R) dev_down, [2R, 2R+N) nic_up, [2R+N, 2R+2N) nic_down,
//   [2R+2N, 2R+2N+L) leaf_up, [2R+2N+L, 2R+2N+2L) leaf_down
int NumLeaves(const NetworkSpec& s, int nodes) {
  return s.fat_tree ? (nodes + s.nodes_per_leaf - 1) / s.nodes_per_leaf : 0;
}
}  // namespace

Network::Network(const NetworkSpec& spec) : spec_(spec) {
  DTSIM_CHECK(spec.nodes >= 1 && spec.devices_per_node >= 1, "bad cluster shape");
  DTSIM_CHECK(spec.intra_bw_bytes_per_s > 0 || spec.devices_per_node == 1,
              "intra-node bandwidth must be positive");
  for (double bw : spec.node_intra_bw_bytes_per_s)
    DTSIM_CHECK(bw > 0 || spec.devices_per_node == 1, "intra-node bandwidth must be positive");
  for (double bw : spec.node_nic_bw_bytes_per_s)
    DTSIM_CHECK(bw > 0 || spec.nodes == 1, "NIC bandwidth must be positive");
  DTSIM_CHECK(spec.nic_bw_bytes_per_s > 0 || spec.nodes == 1, "NIC bandwidth must be positive");
  DTSIM_CHECK(!spec.fat_tree || (spec.nodes_per_leaf >= 1 && spec.oversubscription >= 1.0),
              "bad fat-tree parameters");
  num_nodes_ = spec.nodes;
  for (int node : spec.extra_endpoint_nodes) {
    DTSIM_CHECK(node >= 0, "endpoint node must be >= 0");
    num_nodes_ = std::max(num_nodes_, node + 1);
  }
  const int r = num_ranks(), n = num_nodes_, l = NumLeaves(spec, n);
  bw_.assign(static_cast<std::size_t>(2 * r + 2 * n + 2 * l), 0.0);
  for (int i = 0; i < r; ++i) {
    const double bw = spec.IntraBw(NodeOf(i));
    bw_[static_cast<std::size_t>(i)] = bw;
    bw_[static_cast<std::size_t>(r + i)] = bw;
  }
  for (int i = 0; i < n; ++i) {
    bw_[static_cast<std::size_t>(2 * r + i)] = spec.NicBw(i);
    bw_[static_cast<std::size_t>(2 * r + n + i)] = spec.NicBw(i);
  }
  // A leaf's uplinks: its nodes' NICs together over the oversubscription
  // (nodes_per_leaf x the NIC bandwidth when the nodes are alike).
  for (int leaf = 0; leaf < l; ++leaf) {
    double down = 0;
    if (spec.node_nic_bw_bytes_per_s.empty()) {
      down = spec.nodes_per_leaf * spec.nic_bw_bytes_per_s;
    } else {
      for (int k = 0; k < spec.nodes_per_leaf; ++k) down += spec.NicBw(leaf * spec.nodes_per_leaf + k);
    }
    const double leaf_bw = down / std::max(1.0, spec.oversubscription);
    bw_[static_cast<std::size_t>(2 * r + 2 * n + leaf)] = leaf_bw;
    bw_[static_cast<std::size_t>(2 * r + 2 * n + l + leaf)] = leaf_bw;
  }
  load_.assign(bw_.size(), 0.0);
  busy_until_.assign(bw_.size(), 0);
}

int Network::num_leaves() const { return NumLeaves(spec_, num_nodes_); }

int Network::LeafLink(int leaf, bool up) const {
  DTSIM_CHECK(leaf >= 0 && leaf < num_leaves(), "no such leaf");
  return 2 * num_ranks() + 2 * num_nodes_ + (up ? 0 : num_leaves()) + leaf;
}

void Network::ScaleLink(int link, double factor) {
  DTSIM_CHECK(link >= 0 && link < num_links() && factor > 0, "bad link scale");
  bw_[static_cast<std::size_t>(link)] *= factor;
}

void Network::MarkUsed(const Path& p) const {
  if (used_ == nullptr) return;
  for (int i = 0; i < p.num_links; ++i) (*used_)[static_cast<std::size_t>(p.links[i])] = 1;
}

std::vector<int> Network::RouteLinks(int src, int dst) const {
  if (src == dst) return {};
  const Path p = Route(src, dst);
  return std::vector<int>(p.links, p.links + p.num_links);
}

Network::Path Network::Route(int src, int dst) const {
  Path p;
  const int r = num_ranks(), n = num_nodes_;
  const int src_node = NodeOf(src), dst_node = NodeOf(dst);
  if (src_node == dst_node) {
    p.links[p.num_links++] = src;
    p.links[p.num_links++] = r + dst;
    p.latency_s = spec_.IntraLatency(src_node);
    return p;
  }
  p.links[p.num_links++] = 2 * r + src_node;
  p.links[p.num_links++] = 2 * r + n + dst_node;
  p.latency_s = spec_.NetLatency(src_node);
  if (spec_.fat_tree) {
    const int src_leaf = src_node / spec_.nodes_per_leaf;
    const int dst_leaf = dst_node / spec_.nodes_per_leaf;
    if (src_leaf != dst_leaf) {
      const int leaves = NumLeaves(spec_, n);
      p.links[p.num_links++] = 2 * r + 2 * n + src_leaf;
      p.links[p.num_links++] = 2 * r + 2 * n + leaves + dst_leaf;
      p.latency_s += spec_.spine_latency_s;
    }
  }
  return p;
}

double Network::TransferSeconds(int src, int dst, double bytes) const {
  if (src == dst) return 0;
  const Path p = Route(src, dst);
  if (bytes > 0) MarkUsed(p);
  double bw = bw_[static_cast<std::size_t>(p.links[0])];
  for (int i = 1; i < p.num_links; ++i) bw = std::min(bw, bw_[static_cast<std::size_t>(p.links[i])]);
  return p.latency_s + bytes / bw;
}

SimTime Network::ReserveTransfer(int src, int dst, double bytes, SimTime now_ns) {
  if (src == dst) return now_ns;
  const Path p = Route(src, dst);
  if (bytes > 0) MarkUsed(p);
  double bw = bw_[static_cast<std::size_t>(p.links[0])];
  SimTime start = now_ns;
  for (int i = 0; i < p.num_links; ++i) {
    const auto l = static_cast<std::size_t>(p.links[i]);
    bw = std::min(bw, bw_[l]);
    start = std::max(start, busy_until_[l]);
  }
  const SimTime end = AddSimTime(start, SecondsToNs(bytes / bw));
  for (int i = 0; i < p.num_links; ++i) busy_until_[static_cast<std::size_t>(p.links[i])] = end;
  return AddSimTime(end, SecondsToNs(p.latency_s));
}

void Network::ReserveTransferGroup(int src, std::span<const int> dst, std::span<const double> bytes,
                                   SimTime now_ns, std::span<SimTime> ends) {
  DTSIM_CHECK(dst.size() == bytes.size() && dst.size() == ends.size(), "one end per transfer");
  if (dst.size() == 1) {
    ends[0] = ReserveTransfer(src, dst[0], bytes[0], now_ns);
    return;
  }
  // Solo times; the sender's link (every path's first) and, per transfer,
  // when the rest of its path is free.
  std::vector<Path> paths(dst.size());
  std::vector<double> solo(dst.size(), 0);
  std::vector<SimTime> rest_free(dst.size(), now_ns);
  SimTime start = now_ns;
  for (std::size_t i = 0; i < dst.size(); ++i) {
    if (dst[i] == src) continue;
    paths[i] = Route(src, dst[i]);
    if (bytes[i] > 0) MarkUsed(paths[i]);
    const auto first = static_cast<std::size_t>(paths[i].links[0]);
    start = std::max(start, busy_until_[first]);
    double bw = bw_[first];
    for (int k = 1; k < paths[i].num_links; ++k) {
      const auto l = static_cast<std::size_t>(paths[i].links[k]);
      bw = std::min(bw, bw_[l]);
      rest_free[i] = std::max(rest_free[i], busy_until_[l]);
    }
    solo[i] = bytes[i] / bw;
  }
  std::vector<std::size_t> order(dst.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return solo[a] < solo[b]; });
  const double k = static_cast<double>(order.size());
  double before = 0;  // sum of the shorter transfers' solo times
  SimTime sender_busy = start;
  for (std::size_t j = 0; j < order.size(); ++j) {
    const std::size_t i = order[j];
    if (dst[i] == src) {
      ends[i] = now_ns;
      continue;
    }
    const SimTime shared =
        AddSimTime(start, SecondsToNs(before + (k - static_cast<double>(j)) * solo[i]));
    before += solo[i];
    // A path whose other links are still busy (another sender's transfers
    // into the same receiver) queues behind them there.
    const SimTime end = std::max(shared, AddSimTime(rest_free[i], SecondsToNs(solo[i])));
    for (int l = 1; l < paths[i].num_links; ++l) {
      SimTime& busy = busy_until_[static_cast<std::size_t>(paths[i].links[l])];
      busy = std::max(busy, end);
    }
    sender_busy = std::max(sender_busy, shared);
    ends[i] = AddSimTime(end, SecondsToNs(paths[i].latency_s));
  }
  for (std::size_t i = 0; i < dst.size(); ++i) {
    if (dst[i] == src) continue;
    SimTime& busy = busy_until_[static_cast<std::size_t>(paths[i].links[0])];
    busy = std::max(busy, sender_busy);
  }
}

double Network::StepSeconds(std::span<const Transfer> transfers) {
  for (const Transfer& t : transfers) {
    DTSIM_CHECK(t.src >= 0 && t.src < num_ranks() && t.dst >= 0 && t.dst < num_ranks(),
                "transfer rank out of range");
    if (t.src == t.dst) continue;
    const Path p = Route(t.src, t.dst);
    if (t.bytes > 0) MarkUsed(p);
    for (int i = 0; i < p.num_links; ++i) {
      auto l = static_cast<std::size_t>(p.links[i]);
      if (load_[l] == 0) touched_.push_back(p.links[i]);
      load_[l] += t.bytes;
    }
  }
  double step = 0;
  for (const Transfer& t : transfers) {
    if (t.src == t.dst) continue;
    const Path p = Route(t.src, t.dst);
    double drain = 0;
    for (int i = 0; i < p.num_links; ++i) {
      auto l = static_cast<std::size_t>(p.links[i]);
      drain = std::max(drain, load_[l] / bw_[l]);
    }
    step = std::max(step, p.latency_s + drain);
  }
  for (int l : touched_) load_[static_cast<std::size_t>(l)] = 0;
  touched_.clear();
  return step;
}

}  // namespace dtsim::sim
