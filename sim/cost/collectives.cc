#include "sim/cost/collectives.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "common/error.h"

namespace dtsim::sim {

std::vector<CollectiveStep> RingAllReduce(const std::vector<int>& ranks, double bytes) {
  const int n = static_cast<int>(ranks.size());
  if (n <= 1 || bytes <= 0) return {};
  CollectiveStep step;
  step.repeat = 2 * (n - 1);
  const double chunk = bytes / n;
  for (int i = 0; i < n; ++i)
    step.transfers.push_back(
        {ranks[static_cast<std::size_t>(i)], ranks[static_cast<std::size_t>((i + 1) % n)], chunk});
  return {step};
}

std::vector<CollectiveStep> TreeAllReduce(const std::vector<int>& ranks, double bytes,
                                          double chunk_bytes, const std::vector<int>& node_of_rank) {
  const int n = static_cast<int>(ranks.size());
  if (n <= 1 || bytes <= 0) return {};
  DTSIM_CHECK(chunk_bytes > 0, "chunk size must be positive");
  // The ranks grouped by node, in order of first appearance, keeping their
  // order inside a node. Without node information every rank is a node.
  std::vector<std::vector<int>> nodes;
  {
    std::map<int, std::size_t> index_of_node;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const int r = ranks[i];
      const int node = node_of_rank.empty() ? static_cast<int>(i)
                                            : node_of_rank[static_cast<std::size_t>(r)];
      auto [it, added] = index_of_node.emplace(node, nodes.size());
      if (added) nodes.emplace_back();
      nodes[it->second].push_back(r);
    }
  }
  const int k = static_cast<int>(nodes.size());
  const double per_tree = bytes / 2;
  const int chunks = std::max(1, static_cast<int>(std::ceil(per_tree / chunk_bytes)));
  const double chunk = per_tree / chunks;
  // Tree A is heap-shaped over node positions 0..k-1 (parent of i is
  // (i-1)/2) and enters each node at its first rank; tree B is the same
  // shape over the reversed node order and enters each node at its last
  // rank, so A's leaves (the upper half of positions) are B's inner nodes.
  int depth = 0;  // edges on the longest leaf-to-root path across nodes
  while ((1 << (depth + 1)) <= k) ++depth;
  std::size_t longest_chain = 0;
  CollectiveStep up, down;
  auto edge = [&](int child, int parent) {
    up.transfers.push_back({child, parent, chunk});
    down.transfers.push_back({parent, child, chunk});
  };
  for (const std::vector<int>& members : nodes) {
    longest_chain = std::max(longest_chain, members.size() - 1);
    for (std::size_t j = 1; j < members.size(); ++j) {
      edge(members[j], members[j - 1]);                                     // tree A's chain
      edge(members[members.size() - 1 - j], members[members.size() - j]);  // tree B's chain
    }
  }
  for (int i = 1; i < k; ++i) {
    const int parent = (i - 1) / 2;
    edge(nodes[static_cast<std::size_t>(i)].front(), nodes[static_cast<std::size_t>(parent)].front());
    edge(nodes[static_cast<std::size_t>(k - 1 - i)].back(),
         nodes[static_cast<std::size_t>(k - 1 - parent)].back());
  }
  up.repeat = down.repeat = static_cast<int>(longest_chain) + depth + chunks - 1;
  return {up, down};
}

std::vector<CollectiveStep> HierarchicalAllReduce(const std::vector<int>& ranks,
                                                  const std::vector<int>& node_of_rank,
                                                  double bytes) {
  if (ranks.size() <= 1 || bytes <= 0) return {};
  // Group the ranks by node, keeping their order.
  std::map<int, std::vector<int>> by_node;
  for (int r : ranks) by_node[node_of_rank[static_cast<std::size_t>(r)]].push_back(r);
  const int g = static_cast<int>(by_node.begin()->second.size());
  for (const auto& [node, members] : by_node)
    DTSIM_CHECK(static_cast<int>(members.size()) == g,
                "hierarchical all-reduce needs the same number of ranks on every node");
  const int nodes = static_cast<int>(by_node.size());
  std::vector<CollectiveStep> steps;

  // Phase 1 and 3: ring reduce-scatter / all-gather inside every node at
  // once, g-1 steps each of bytes/g per rank.
  CollectiveStep intra;
  intra.repeat = g - 1;
  for (const auto& [node, members] : by_node)
    for (int i = 0; i < g; ++i)
      intra.transfers.push_back({members[static_cast<std::size_t>(i)],
                                 members[static_cast<std::size_t>((i + 1) % g)], bytes / g});
  if (g > 1) steps.push_back(intra);

  // Phase 2: for each local index, a ring across nodes over its bytes/g
  // shard: 2(nodes-1) steps of bytes/(g*nodes). All g rings run together.
  if (nodes > 1) {
    CollectiveStep inter;
    inter.repeat = 2 * (nodes - 1);
    std::vector<const std::vector<int>*> order;
    for (const auto& [node, members] : by_node) order.push_back(&members);
    for (int local = 0; local < g; ++local)
      for (int k = 0; k < nodes; ++k)
        inter.transfers.push_back({(*order[static_cast<std::size_t>(k)])[static_cast<std::size_t>(local)],
                                   (*order[static_cast<std::size_t>((k + 1) % nodes)])
                                       [static_cast<std::size_t>(local)],
                                   bytes / (static_cast<double>(g) * nodes)});
    steps.push_back(inter);
  }
  if (g > 1) steps.push_back(intra);
  return steps;
}

namespace {

// The node of every rank of `network`, indexed by rank id.
std::vector<int> NodeOfRank(const Network& network) {
  std::vector<int> node_of(static_cast<std::size_t>(network.num_ranks()));
  for (int r = 0; r < network.num_ranks(); ++r) node_of[static_cast<std::size_t>(r)] = network.NodeOf(r);
  return node_of;
}

}  // namespace

double ScheduleSeconds(Network& network, const std::vector<CollectiveStep>& steps) {
  double total = 0;
  for (const CollectiveStep& s : steps) total += s.repeat * network.StepSeconds(s.transfers);
  return total;
}

std::vector<CollectiveStep> AllReduceSchedule(const Network& network,
                                              plan::CollectiveAlgorithm algorithm,
                                              const std::vector<int>& ranks, double bytes) {
  switch (algorithm) {
    case plan::CollectiveAlgorithm::kRing: return RingAllReduce(ranks, bytes);
    case plan::CollectiveAlgorithm::kTree:
      return TreeAllReduce(ranks, bytes, 1 << 20, NodeOfRank(network));
    case plan::CollectiveAlgorithm::kHierarchical:
      return HierarchicalAllReduce(ranks, NodeOfRank(network), bytes);
  }
  return {};
}

double AllReduceSeconds(Network& network, plan::CollectiveAlgorithm algorithm,
                        const std::vector<int>& ranks, double bytes) {
  return ScheduleSeconds(network, AllReduceSchedule(network, algorithm, ranks, bytes));
}

double AllReduceTotalBytes(Network& network, plan::CollectiveAlgorithm algorithm,
                           const std::vector<int>& ranks, double bytes) {
  double total = 0;
  for (const CollectiveStep& step : AllReduceSchedule(network, algorithm, ranks, bytes))
    for (const Transfer& t : step.transfers) total += step.repeat * t.bytes;
  return total;
}

std::vector<CollectiveStep> RingReduceScatter(const std::vector<int>& ranks, double bytes) {
  std::vector<CollectiveStep> steps = RingAllReduce(ranks, bytes);
  for (CollectiveStep& step : steps) step.repeat /= 2;  // 2 (N - 1) -> N - 1
  return steps;
}

std::vector<CollectiveStep> ChainBroadcast(const std::vector<int>& ranks, double bytes,
                                           double chunk_bytes) {
  const int n = static_cast<int>(ranks.size());
  if (n <= 1 || bytes <= 0) return {};
  DTSIM_CHECK(chunk_bytes > 0, "chunk size must be positive");
  const int chunks = std::max(1, static_cast<int>(std::ceil(bytes / chunk_bytes)));
  CollectiveStep step;
  step.repeat = n - 2 + chunks;
  for (std::size_t i = 1; i < ranks.size(); ++i)
    step.transfers.push_back({ranks[i - 1], ranks[i], bytes / chunks});
  return {step};
}

std::vector<CollectiveStep> ChainReduce(const std::vector<int>& ranks, double bytes,
                                        double chunk_bytes) {
  std::vector<CollectiveStep> steps = ChainBroadcast(ranks, bytes, chunk_bytes);
  for (CollectiveStep& step : steps)
    for (Transfer& t : step.transfers) std::swap(t.src, t.dst);
  return steps;
}

std::vector<CollectiveStep> PairwiseAllToAll(const std::vector<int>& ranks, double bytes) {
  const std::size_t n = ranks.size();
  if (n <= 1 || bytes <= 0) return {};
  std::vector<CollectiveStep> steps(n - 1);
  for (std::size_t k = 1; k < n; ++k)
    for (std::size_t i = 0; i < n; ++i)
      steps[k - 1].transfers.push_back({ranks[i], ranks[(i + k) % n], bytes / static_cast<double>(n)});
  return steps;
}

std::vector<CollectiveStep> DisseminationBarrier(const std::vector<int>& ranks) {
  const std::size_t n = ranks.size();
  std::vector<CollectiveStep> steps;
  for (std::size_t distance = 1; distance < n; distance *= 2) {
    CollectiveStep& step = steps.emplace_back();
    for (std::size_t i = 0; i < n; ++i) step.transfers.push_back({ranks[i], ranks[(i + distance) % n], 1});
  }
  return steps;
}

std::vector<CollectiveStep> CollectiveSchedule(const Network& network, plan::CollectiveOp op,
                                               plan::CollectiveAlgorithm algorithm,
                                               const std::vector<int>& ranks, double bytes) {
  switch (op) {
    case plan::CollectiveOp::kAllReduce: return AllReduceSchedule(network, algorithm, ranks, bytes);
    case plan::CollectiveOp::kReduceScatter:
    case plan::CollectiveOp::kAllGather: return RingReduceScatter(ranks, bytes);
    case plan::CollectiveOp::kBroadcast: return ChainBroadcast(ranks, bytes);
    case plan::CollectiveOp::kReduce: return ChainReduce(ranks, bytes);
    case plan::CollectiveOp::kAllToAll: return PairwiseAllToAll(ranks, bytes);
    case plan::CollectiveOp::kBarrier: return DisseminationBarrier(ranks);
  }
  DTSIM_CHECK(false, std::string("no schedule for collective ") + plan::CollectiveOpName(op));
  return {};
}

double CollectiveSeconds(Network& network, plan::CollectiveOp op,
                         plan::CollectiveAlgorithm algorithm, const std::vector<int>& ranks,
                         double bytes) {
  return ScheduleSeconds(network, CollectiveSchedule(network, op, algorithm, ranks, bytes));
}

double CollectiveTotalBytes(Network& network, plan::CollectiveOp op,
                            plan::CollectiveAlgorithm algorithm, const std::vector<int>& ranks,
                            double bytes) {
  double total = 0;
  for (const CollectiveStep& step : CollectiveSchedule(network, op, algorithm, ranks, bytes))
    for (const Transfer& t : step.transfers) total += step.repeat * t.bytes;
  return total;
}

std::vector<int> HostLeaders(const Network& network, const std::vector<int>& ranks) {
  const std::vector<int> node_of = NodeOfRank(network);
  std::vector<int> leaders, seen;
  for (int r : ranks) {
    const int node = node_of[static_cast<std::size_t>(r)];
    if (std::find(seen.begin(), seen.end(), node) != seen.end()) continue;
    seen.push_back(node);
    leaders.push_back(r);
  }
  return leaders;
}

std::map<int, double> HostSumSecondsPerNode(const Network& network, const std::vector<int>& ranks,
                                            double bytes, plan::CollectiveOp op) {
  std::map<int, double> busy;
  if (ranks.size() <= 1 || bytes <= 0 || op == plan::CollectiveOp::kAllGather) return busy;
  const NetworkSpec& s = network.spec();
  DTSIM_CHECK(s.host_memory_bytes_per_s > 0, "host aggregation needs the host's memory bandwidth");
  const std::vector<int> node_of = NodeOfRank(network);
  std::map<int, int> per_node;
  for (int r : ranks) ++per_node[node_of[static_cast<std::size_t>(r)]];
  for (const auto& [node, g] : per_node)
    if (g > 1) busy[node] = (g + 1) * bytes / s.host_memory_bytes_per_s;
  return busy;
}

double HostCollectiveSeconds(Network& network, plan::CollectiveAlgorithm algorithm,
                             const std::vector<int>& ranks, double bytes, plan::CollectiveOp op) {
  if (ranks.size() <= 1 || bytes <= 0) return 0;
  const NetworkSpec& s = network.spec();
  DTSIM_CHECK(s.host_link_bw_bytes_per_s > 0 && s.host_memory_bytes_per_s > 0,
              "host aggregation needs the host link and the host's memory bandwidth");
  const std::vector<int> node_of = NodeOfRank(network);
  std::map<int, int> per_node;
  for (int r : ranks) ++per_node[node_of[static_cast<std::size_t>(r)]];
  int g = 0;
  for (const auto& [node, count] : per_node) g = std::max(g, count);
  const double copy = s.host_link_latency_s + std::max(bytes / s.host_link_bw_bytes_per_s,
                                                       g * bytes / s.host_memory_bytes_per_s);
  const double sum = g > 1 ? (g + 1) * bytes / s.host_memory_bytes_per_s : 0;
  const std::vector<int> leaders = HostLeaders(network, ranks);
  if (op != plan::CollectiveOp::kAllReduce) {
    DTSIM_CHECK(leaders.size() == 1 && (op == plan::CollectiveOp::kReduceScatter ||
                                        op == plan::CollectiveOp::kAllGather),
                "on the host: all-reduces, and reduce-scatters or all-gathers inside a node");
    return op == plan::CollectiveOp::kReduceScatter ? copy + sum : copy;
  }
  const double across = leaders.size() > 1 ? AllReduceSeconds(network, algorithm, leaders, bytes) : 0;
  return 2 * copy + sum + across;
}

}  // namespace dtsim::sim
