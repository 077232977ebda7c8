#include "sim/cost/collectives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace dtsim::sim {
namespace {

std::vector<int> Iota(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

// N single-GPU nodes on one switch: every ring hop is one NIC-to-NIC path
// with latency alpha and bandwidth B.
NetworkSpec FlatNetwork(int n, double bw, double alpha) {
  NetworkSpec s;
  s.nodes = n;
  s.devices_per_node = 1;
  s.nic_bw_bytes_per_s = bw;
  s.net_latency_s = alpha;
  return s;
}

TEST(RingAllReduce, MatchesClosedForm) {
  // Closed form of the ring all-reduce (Patarasuk & Yuan 2009; NCCL docs):
  //   T = 2(N-1)/N * M/B + 2(N-1) * alpha
  for (int n : {2, 3, 8, 64, 1000}) {
    for (double m : {1e3, 25e6, 1e9}) {
      for (double b : {1.25e9, 12.5e9, 300e9}) {
        const double alpha = 5e-6;
        Network net(FlatNetwork(n, b, alpha));
        const double t = AllReduceSeconds(net, plan::CollectiveAlgorithm::kRing, Iota(n), m);
        const double expected = 2.0 * (n - 1) / n * m / b + 2.0 * (n - 1) * alpha;
        EXPECT_NEAR(t, expected, 0.01 * expected) << "N=" << n << " M=" << m << " B=" << b;
      }
    }
  }
}

TEST(RingReduceScatter, MatchesClosedFormAndHalvesTheAllReduce) {
  // Ring reduce-scatter and all-gather (Patarasuk & Yuan 2009; NCCL docs,
  // "Collective Operations"): N - 1 steps of M / N per rank,
  //   T = (N-1)/N * M/B + (N-1) * alpha,
  // and the bytes on the wire are (N - 1) M in all, half an all-reduce's.
  for (int n : {2, 8, 64}) {
    for (double m : {1e3, 25e6}) {
      const double alpha = 5e-6, b = 12.5e9;
      Network net(FlatNetwork(n, b, alpha));
      const double expected = (n - 1.0) / n * m / b + (n - 1.0) * alpha;
      for (plan::CollectiveOp op : {plan::CollectiveOp::kReduceScatter, plan::CollectiveOp::kAllGather}) {
        EXPECT_NEAR(CollectiveSeconds(net, op, plan::CollectiveAlgorithm::kRing, Iota(n), m), expected,
                    1e-9 * expected)
            << plan::CollectiveOpName(op) << " N=" << n;
        EXPECT_NEAR(CollectiveTotalBytes(net, op, plan::CollectiveAlgorithm::kTree, Iota(n), m),
                    (n - 1.0) * m, 1e-9 * m)
            << "reduce-scatter and all-gather are rings whatever the all-reduce algorithm";
      }
      EXPECT_NEAR(2 * CollectiveTotalBytes(net, plan::CollectiveOp::kReduceScatter,
                                           plan::CollectiveAlgorithm::kRing, Iota(n), m),
                  AllReduceTotalBytes(net, plan::CollectiveAlgorithm::kRing, Iota(n), m), 1e-6 * m);
    }
  }
}

// Issue 13, item 1: a collective summed on the hosts. One node of g = 4
// devices, PCIe 16 GB/s each way and 1 us, host memory 100 GB/s: each
// device copies M to host memory (max(M / 16e9, 4 M / 100e9): the PCIe link
// limits), the CPU streams 5 M (four copies read, one sum written), and the
// sum goes back: 2 (1e-6 + M / 16e9) + 5 M / 100e9. On 2 such nodes the
// hosts add a ring all-reduce between the two nodes' first devices over
// the NIC: 2 (2 - 1) / 2 x M / B_nic + 2 alpha.
TEST(HostCollective, MatchesClosedForm) {
  NetworkSpec s;
  s.nodes = 1;
  s.devices_per_node = 4;
  s.intra_bw_bytes_per_s = 150e9;
  s.host_link_bw_bytes_per_s = 16e9;
  s.host_link_latency_s = 1e-6;
  s.host_memory_bytes_per_s = 100e9;
  const double m = 64e6;
  const double in_node = 2 * (1e-6 + m / 16e9) + 5 * m / 100e9;
  {
    Network net(s);
    EXPECT_NEAR(HostCollectiveSeconds(net, plan::CollectiveAlgorithm::kRing, Iota(4), m), in_node,
                1e-12);
  }
  s.nodes = 2;
  s.nic_bw_bytes_per_s = 12.5e9;
  s.net_latency_s = 5e-6;
  Network net(s);
  const double across = 2.0 * 1 / 2 * m / 12.5e9 + 2 * 5e-6;
  EXPECT_NEAR(HostCollectiveSeconds(net, plan::CollectiveAlgorithm::kRing, Iota(8), m),
              in_node + across, 1e-3 * across);
  EXPECT_EQ(HostLeaders(net, Iota(8)), (std::vector<int>{0, 4}));
  // Inside one node: a reduce-scatter on the host is the copies in and the
  // sum, an all-gather the copies back.
  s.nodes = 1;
  Network one(s);
  const double copy = 1e-6 + m / 16e9;
  EXPECT_NEAR(HostCollectiveSeconds(one, plan::CollectiveAlgorithm::kRing, Iota(4), m,
                                    plan::CollectiveOp::kReduceScatter),
              copy + 5 * m / 100e9, 1e-12);
  EXPECT_NEAR(HostCollectiveSeconds(one, plan::CollectiveAlgorithm::kRing, Iota(4), m,
                                    plan::CollectiveOp::kAllGather),
              copy, 1e-12);
}

// The CPU time of the same sums per node: (g + 1) M / host memory where a
// node holds g > 1 members; nothing where it holds one, nor for all-gathers.
TEST(HostCollective, CpuTimePerNode) {
  NetworkSpec s;
  s.nodes = 2;
  s.devices_per_node = 4;
  s.intra_bw_bytes_per_s = 150e9;
  s.nic_bw_bytes_per_s = 12.5e9;
  s.host_memory_bytes_per_s = 100e9;
  Network net(s);
  const double m = 64e6;
  const auto busy = HostSumSecondsPerNode(net, {0, 1, 2, 4}, m);
  ASSERT_EQ(busy.size(), 1u);  // node 1 holds one member: it sums nothing
  EXPECT_NEAR(busy.at(0), 4 * m / 100e9, 1e-15);
  EXPECT_TRUE(HostSumSecondsPerNode(net, Iota(8), m, plan::CollectiveOp::kAllGather).empty());
  EXPECT_NEAR(HostSumSecondsPerNode(net, Iota(8), m, plan::CollectiveOp::kReduceScatter).at(1),
              5 * m / 100e9, 1e-15);
}

TEST(RingAllReduce, InsideOneNodeUsesIntraLinks) {
  NetworkSpec s;
  s.nodes = 1;
  s.devices_per_node = 8;
  s.intra_bw_bytes_per_s = 150e9;
  s.intra_latency_s = 2e-6;
  Network net(s);
  const double m = 100e6;
  const double expected = 2.0 * 7 / 8 * m / 150e9 + 14 * 2e-6;
  EXPECT_NEAR(AllReduceSeconds(net, plan::CollectiveAlgorithm::kRing, Iota(8), m), expected,
              1e-9 * expected);
}

TEST(RingAllReduce, OversubscribedUplinkSlowsCrossLeafRing) {
  // 2 leaves x 4 nodes; the ring alternates leaves, so all 8 transfers of a
  // step cross the spine: 4 flows share each leaf uplink of 4 x B / oversub,
  // i.e. B / oversub each. The bandwidth term grows by the oversubscription.
  NetworkSpec s = FlatNetwork(8, 10e9, 0);
  s.fat_tree = true;
  s.nodes_per_leaf = 4;
  const std::vector<int> order = {0, 4, 1, 5, 2, 6, 3, 7};
  const double m = 80e6;
  Network full(s);
  const double t1 = AllReduceSeconds(full, plan::CollectiveAlgorithm::kRing, order, m);
  s.oversubscription = 4;
  Network over(s);
  const double t4 = AllReduceSeconds(over, plan::CollectiveAlgorithm::kRing, order, m);
  EXPECT_NEAR(t1, 2.0 * 7 / 8 * m / 10e9, 1e-12);
  EXPECT_NEAR(t4, 4 * t1, 1e-9 * t4);
}

TEST(TreeAllReduce, FourRanksClosedForm) {
  // N = 4: tree A edges 1->0, 2->0, 3->1; tree B (mirror) 2->3, 1->3, 0->2.
  // In each step of the reduce phase, nodes 0 and 3 receive 2 chunks and
  // nodes 1 and 2 send 2 chunks, so a step takes alpha + 2c/B. Depth is 2;
  // with C chunks of c = (M/2)/C per tree: T = 2 (2 + C - 1)(alpha + 2c/B).
  const double b = 10e9, alpha = 3e-6, m = 64e6, chunk = 1 << 20;
  Network net(FlatNetwork(4, b, alpha));
  const int c_count = static_cast<int>(std::ceil(m / 2 / chunk));
  const double c = m / 2 / c_count;
  const double expected = 2.0 * (2 + c_count - 1) * (alpha + 2 * c / b);
  EXPECT_NEAR(AllReduceSeconds(net, plan::CollectiveAlgorithm::kTree, Iota(4), m), expected,
              1e-9 * expected);
}

// Issue 10, item 8: on 4 nodes x 8 GPUs a binary tree over all 32 ranks in
// node-major order routed up to 16 chunks per step through one NIC, and was
// 5-10x slower than ring. NCCL's trees span nodes (one rank per node, a
// chain inside each node): a NIC then carries at most 2 chunks per direction
// and step. Closed form: up and down phases of (7 chain + 2 tree depth + C
// chunks - 1) steps each, a step bound by an inner node's NIC receiving (up)
// or sending (down) 2 chunks of c = M / (2C):
//   T = 2 (7 + 2 + C - 1) (alpha_net + 2c / B_nic)  ~= 2 M / B_nic,
// against ring's 2 (N - 1) / N x M / B_nic (one NIC crossing per ring step).
TEST(TreeAllReduce, AcrossNodesIsCloseToRingForLargeMessages) {
  NetworkSpec s;
  s.nodes = 4;
  s.devices_per_node = 8;
  s.intra_bw_bytes_per_s = 300e9;  // NVSwitch (A100)
  s.intra_latency_s = 1e-6;
  s.nic_bw_bytes_per_s = 25e9;     // 200 Gb/s
  s.net_latency_s = 5e-6;
  Network net(s);
  const double m = 1e9;
  const double tree = AllReduceSeconds(net, plan::CollectiveAlgorithm::kTree, Iota(32), m);
  const double ring = AllReduceSeconds(net, plan::CollectiveAlgorithm::kRing, Iota(32), m);
  const int chunks = static_cast<int>(std::ceil(m / 2 / (1 << 20)));
  const double c = m / 2 / chunks;
  const double closed = 2.0 * (7 + 2 + chunks - 1) * (s.net_latency_s + 2 * c / s.nic_bw_bytes_per_s);
  EXPECT_NEAR(tree, closed, 1e-9 * closed);
  EXPECT_NEAR(tree, 2 * m / s.nic_bw_bytes_per_s, 0.1 * tree);
  EXPECT_NEAR(ring, 2.0 * 31 / 32 * m / s.nic_bw_bytes_per_s, 0.05 * ring);
  EXPECT_LT(tree / ring, 1.15);
  // Small messages: the tree's log-depth latency beats the ring's 2 (N - 1)
  // steps: 62 ring steps against 2 x (7 chain + 2 tree + 1 chunk - 1) = 18.
  const double small = 8e3;
  EXPECT_LT(AllReduceSeconds(net, plan::CollectiveAlgorithm::kTree, Iota(32), small),
            AllReduceSeconds(net, plan::CollectiveAlgorithm::kRing, Iota(32), small));
}

TEST(HierarchicalAllReduce, MatchesPhaseClosedForm) {
  // G = 4 devices per node, K = 4 nodes. Intra phases: 2 (G-1) steps of
  // alpha_i + (M/G)/B_i. Inter phase: 2 (K-1) steps in which G rings share a
  // NIC: alpha_n + G * M/(G K) / B_n.
  NetworkSpec s;
  s.nodes = 4;
  s.devices_per_node = 4;
  s.intra_bw_bytes_per_s = 100e9;
  s.intra_latency_s = 1e-6;
  s.nic_bw_bytes_per_s = 12.5e9;
  s.net_latency_s = 5e-6;
  Network net(s);
  const double m = 100e6;
  const double expected = 2 * 3 * (1e-6 + m / 4 / 100e9) + 2 * 3 * (5e-6 + 4 * m / 16 / 12.5e9);
  EXPECT_NEAR(AllReduceSeconds(net, plan::CollectiveAlgorithm::kHierarchical, Iota(16), m),
              expected, 1e-9 * expected);
}

TEST(Collectives, SingleRankCostsNothing) {
  Network net(FlatNetwork(1, 1e9, 1e-6));
  for (auto a : {plan::CollectiveAlgorithm::kRing, plan::CollectiveAlgorithm::kTree,
                 plan::CollectiveAlgorithm::kHierarchical})
    EXPECT_EQ(AllReduceSeconds(net, a, {0}, 1e6), 0.0);
}

TEST(ChainBroadcast, MatchesPipelinedChainClosedForm) {
  // A chain of N ranks, C = ceil(M / 1 MiB) chunks: the last chunk leaves
  // the root after C steps and reaches the end N - 2 steps later,
  //   T = (N - 2 + C)(alpha + M / (C B)).
  // 8 ranks, 8 MiB: C = 8, T = 14 (5 us + 1 MiB / 12.5 GB/s)
  //   = 14 x (5 + 83.886) us = 1244.4 us. Reduce runs the chain backwards
  // in the same time; neither depends on the all-reduce algorithm.
  const double alpha = 5e-6, b = 12.5e9;
  for (int n : {2, 3, 8, 64}) {
    for (double m : {1e3, 8.0 * (1 << 20), 1e9}) {
      Network net(FlatNetwork(n, b, alpha));
      const double c = std::max(1.0, std::ceil(m / (1 << 20)));
      const double expected = (n - 2 + c) * (alpha + m / (c * b));
      for (plan::CollectiveOp op : {plan::CollectiveOp::kBroadcast, plan::CollectiveOp::kReduce})
        for (auto a : {plan::CollectiveAlgorithm::kRing, plan::CollectiveAlgorithm::kTree,
                       plan::CollectiveAlgorithm::kHierarchical})
          EXPECT_NEAR(CollectiveSeconds(net, op, a, Iota(n), m), expected, 1e-9 * expected)
              << plan::CollectiveOpName(op) << " N=" << n << " M=" << m;
    }
  }
  Network net(FlatNetwork(8, b, alpha));
  EXPECT_NEAR(CollectiveSeconds(net, plan::CollectiveOp::kBroadcast, plan::CollectiveAlgorithm::kRing,
                                Iota(8), 8.0 * (1 << 20)),
              1244.4e-6, 0.1e-6);
}

TEST(ChainBroadcast, RootSendsAndTheChainRunsBackForReduce) {
  const std::vector<CollectiveStep> b = ChainBroadcast({3, 1, 2}, 100);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(b[0].transfers.size(), 2u);
  EXPECT_EQ(b[0].transfers[0].src, 3);  // the root is the group's first rank
  EXPECT_EQ(b[0].transfers[0].dst, 1);
  EXPECT_EQ(b[0].transfers[1].src, 1);
  EXPECT_EQ(b[0].transfers[1].dst, 2);
  const std::vector<CollectiveStep> r = ChainReduce({3, 1, 2}, 100);
  EXPECT_EQ(r[0].transfers[0].src, 1);
  EXPECT_EQ(r[0].transfers[0].dst, 3);
}

TEST(PairwiseAllToAll, MatchesClosedForm) {
  // N - 1 exchange steps of M / N per rank, each rank sending to one rank
  // and receiving from another: T = (N - 1)(alpha + M / (N B)), and
  // (N - 1) M bytes on the wire in all (each rank keeps its own block).
  const double alpha = 5e-6, b = 12.5e9;
  for (int n : {2, 3, 8, 32}) {
    for (double m : {1e3, 25e6}) {
      Network net(FlatNetwork(n, b, alpha));
      const double expected = (n - 1.0) * (alpha + m / (n * b));
      EXPECT_NEAR(CollectiveSeconds(net, plan::CollectiveOp::kAllToAll, plan::CollectiveAlgorithm::kRing,
                                    Iota(n), m),
                  expected, 1e-9 * expected)
          << "N=" << n;
      EXPECT_NEAR(CollectiveTotalBytes(net, plan::CollectiveOp::kAllToAll,
                                       plan::CollectiveAlgorithm::kRing, Iota(n), m),
                  (n - 1.0) * m, 1e-6 * m);
    }
  }
}

TEST(DisseminationBarrier, IsLogTwoRoundsOfTokens) {
  // ceil(log2 N) rounds of 1-byte tokens: 2 ranks 1 round, 5 ranks 3
  // (distances 1, 2, 4), 8 ranks 3, 9 ranks 4; each round costs
  // alpha + 1 byte / B.
  const double alpha = 5e-6, b = 12.5e9;
  for (auto [n, rounds] : {std::pair{2, 1}, {5, 3}, {8, 3}, {9, 4}}) {
    Network net(FlatNetwork(n, b, alpha));
    EXPECT_NEAR(CollectiveSeconds(net, plan::CollectiveOp::kBarrier, plan::CollectiveAlgorithm::kRing,
                                  Iota(n), 0),
                rounds * (alpha + 1 / b), 1e-15)
        << "N=" << n;
  }
}

TEST(Collectives, EveryOpOnOneRankCostsNothing) {
  Network net(FlatNetwork(1, 1e9, 1e-6));
  for (auto op : {plan::CollectiveOp::kAllReduce, plan::CollectiveOp::kReduceScatter,
                  plan::CollectiveOp::kAllGather, plan::CollectiveOp::kBroadcast,
                  plan::CollectiveOp::kReduce, plan::CollectiveOp::kAllToAll,
                  plan::CollectiveOp::kBarrier})
    EXPECT_EQ(CollectiveSeconds(net, op, plan::CollectiveAlgorithm::kRing, {0}, 1e6), 0.0)
        << plan::CollectiveOpName(op);
}

}  // namespace
}  // namespace dtsim::sim
