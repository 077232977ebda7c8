// Collective algorithms as schedules of point-to-point steps. Each step is a
// set of transfers that run together (bulk-synchronous, as NCCL's ring and
// tree kernels advance chunk by chunk); a step pattern may repeat. The time of
// a collective is the sum over steps of Network::StepSeconds, so link
// bandwidth, latency and sharing (oversubscribed uplinks, several rings on
// one NIC) shape the result.
#pragma once

#include <map>
#include <vector>

#include "plan/plan.h"
#include "sim/network/network.h"

namespace dtsim::sim {

struct CollectiveStep {
  std::vector<Transfer> transfers;
  int repeat = 1;  // the same pattern runs this many times in a row
};

// Ring all-reduce over `ranks` in the given order: reduce-scatter then
// all-gather, 2(N-1) steps, each rank sending bytes/N to its successor.
// Time on a uniform network: 2(N-1) * (alpha + bytes/(N * B)).
std::vector<CollectiveStep> RingAllReduce(const std::vector<int>& ranks, double bytes);

// Double binary tree (NCCL): two binary trees over the ranks, the second the
// mirror of the first so that leaves of one are inner nodes of the other;
// each carries half the data, pipelined in chunks of `chunk_bytes`. Reduce
// up both trees, then broadcast down: 2 x (depth + chunks - 1) steps.
//
// With `node_of_rank` (indexed by rank id; empty = every rank on its own
// node), the trees are built as NCCL builds them (Sanders et al. 2009's
// double binary tree; NCCL 2.4 release notes / blog "Massively scale your
// deep learning training with NCCL 2.4"): across nodes only, one rank per
// node in each tree, and a chain through the ranks of each node (tree A
// enters a node at its first rank, tree B at its last, so the chains run in
// opposite directions). Depth is then (ranks per node - 1) + the depth of
// the tree over nodes, and a NIC carries at most 2 chunks per direction and
// step (an inner node's two children), so for large messages the time is
// close to 2 x bytes / NIC bandwidth, like ring all-reduce. A binary tree
// over all ranks in node-major order would instead route up to 2 x (ranks
// per node) chunks through one NIC per step (5-10x slower).
std::vector<CollectiveStep> TreeAllReduce(const std::vector<int>& ranks, double bytes,
                                          double chunk_bytes = 1 << 20,
                                          const std::vector<int>& node_of_rank = {});

// Hierarchical all-reduce: ring reduce-scatter inside each node, one ring
// all-reduce across nodes per local device index (all of them at once, sharing
// the NICs), ring all-gather inside each node. `node_of` gives each rank's node.
// REQUIRES: every node holds the same number of the ranks.
std::vector<CollectiveStep> HierarchicalAllReduce(const std::vector<int>& ranks,
                                                  const std::vector<int>& node_of_rank,
                                                  double bytes);

// The schedule of an all-reduce of `bytes` over `ranks` with `algorithm`
// (hierarchical: grouped by the network's nodes).
std::vector<CollectiveStep> AllReduceSchedule(const Network& network,
                                              plan::CollectiveAlgorithm algorithm,
                                              const std::vector<int>& ranks, double bytes);

// Ring reduce-scatter or all-gather of a `bytes` buffer over `ranks` (each
// rank ends with, or starts from, bytes / N of it): N - 1 steps, each rank
// sending bytes / N to its successor; half of a ring all-reduce. Time on a
// uniform network: (N - 1)(alpha + bytes / (N B)). NCCL runs both as rings
// whatever NCCL_ALGO says for all-reduce (NCCL documentation, "Collective
// Operations"; its tree algorithm is for all-reduce only).
std::vector<CollectiveStep> RingReduceScatter(const std::vector<int>& ranks, double bytes);

// Broadcast of a `bytes` buffer from ranks[0] down the chain ranks[0] ->
// ranks[1] -> ... -> ranks[N-1], cut into C = ceil(bytes / chunk_bytes)
// chunks that follow each other down the chain (NCCL runs broadcast as a
// pipelined ring from the root; NCCL documentation, "Collective
// Operations"): N - 2 + C steps, each moving one chunk over every link of
// the chain. Time on a uniform network:
//   (N - 2 + C)(alpha + bytes / (C B)),
// close to bytes / B for large buffers.
std::vector<CollectiveStep> ChainBroadcast(const std::vector<int>& ranks, double bytes,
                                           double chunk_bytes = 1 << 20);
// Reduce to ranks[0]: the same chain run towards the root (each rank adds
// its part to the chunk it passes on), so the same time as ChainBroadcast.
std::vector<CollectiveStep> ChainReduce(const std::vector<int>& ranks, double bytes,
                                        double chunk_bytes = 1 << 20);

// All-to-all of a `bytes` buffer per rank (bytes / N to every rank) by
// pairwise exchange: in step k = 1 .. N-1 rank i sends its block for rank
// i + k (mod N). Time on a uniform network: (N - 1)(alpha + bytes / (N B)).
std::vector<CollectiveStep> PairwiseAllToAll(const std::vector<int>& ranks, double bytes);

// Dissemination barrier (Hensgen, Finkel & Manber 1988): ceil(log2 N)
// steps; in step k rank i signals rank i + 2^k (mod N) with a 1-byte
// token (not an empty message: SimGrid plays concurrent empty flows on one
// link one after the other). Time on a uniform network:
// ceil(log2 N)(alpha + 1 byte / B).
std::vector<CollectiveStep> DisseminationBarrier(const std::vector<int>& ranks);

// The schedule of collective `op` of a `bytes` buffer over `ranks`:
// all-reduce with `algorithm` (AllReduceSchedule), reduce-scatter and
// all-gather as rings, broadcast and reduce as pipelined chains from or to
// ranks[0], all-to-all as a pairwise exchange, barrier as a dissemination
// barrier (`bytes` unused); `algorithm` matters for all-reduce only.
std::vector<CollectiveStep> CollectiveSchedule(const Network& network, plan::CollectiveOp op,
                                               plan::CollectiveAlgorithm algorithm,
                                               const std::vector<int>& ranks, double bytes);
double CollectiveSeconds(Network& network, plan::CollectiveOp op,
                         plan::CollectiveAlgorithm algorithm, const std::vector<int>& ranks,
                         double bytes);
double CollectiveTotalBytes(Network& network, plan::CollectiveOp op,
                            plan::CollectiveAlgorithm algorithm, const std::vector<int>& ranks,
                            double bytes);

// A collective summed on the hosts (plan::Collective::via_host): each rank
// copies `bytes` to its host over the host link, each node's host sums its
// g ranks' copies ((g + 1) x bytes through host memory), one rank per node
// stands for its host in an all-reduce of `bytes` with `algorithm` across
// the nodes, and the result is copied back:
//   2 (latency + max(bytes / host link, g bytes / host memory))
//     + (g + 1) bytes / host memory  [g > 1]  + the all-reduce across nodes.
// The host's own additions during the cross-node all-reduce are not priced.
// Inside one node, a reduce-scatter on the host is the copies in and the
// sum (the slices stay in host memory for what follows: a parameter
// server's pushes), and an all-gather the copies back.
double HostCollectiveSeconds(Network& network, plan::CollectiveAlgorithm algorithm,
                             const std::vector<int>& ranks, double bytes,
                             plan::CollectiveOp op = plan::CollectiveOp::kAllReduce);
// The CPU time each node's host spends summing for that collective (the
// (g + 1) x bytes / host memory term above, for its g > 1 members; copies
// are DMA and the cross-node all-reduce's additions are not priced): node
// -> seconds. All-gathers sum nothing.
std::map<int, double> HostSumSecondsPerNode(const Network& network, const std::vector<int>& ranks,
                                            double bytes,
                                            plan::CollectiveOp op = plan::CollectiveOp::kAllReduce);
// The ranks standing for their node's host: the first member of each node.
std::vector<int> HostLeaders(const Network& network, const std::vector<int>& ranks);

// Seconds an all-reduce of `bytes` over `ranks` takes with `algorithm`.
double AllReduceSeconds(Network& network, plan::CollectiveAlgorithm algorithm,
                        const std::vector<int>& ranks, double bytes);

// Bytes all ranks send in an all-reduce of `bytes` over `ranks` with
// `algorithm` (ring: 2 (N - 1) / N x bytes per rank).
double AllReduceTotalBytes(Network& network, plan::CollectiveAlgorithm algorithm,
                           const std::vector<int>& ranks, double bytes);

// Sum of repeat x StepSeconds over a schedule.
double ScheduleSeconds(Network& network, const std::vector<CollectiveStep>& steps);

}  // namespace dtsim::sim
