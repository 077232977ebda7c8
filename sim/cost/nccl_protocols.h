// NCCL's protocols in the price of a collective (scenario key
// cluster.network.protocols: nccl). Facts from NVIDIA NCCL v2.20.3,
// src/graph/tuning.cc, and its maintainers (NVIDIA/nccl issue #281):
//
//   protocol  base latency (ring)  latency per hop (NVLink / network)  bandwidth
//   LL        6.6 us               0.6 / 2.7 us                        1/2: 8-byte stores of 4 data + 4 flag bytes
//   LL128     14.0 us              1.9 / 4.0 us                        120/128: 128-byte lines with 8 flag bytes
//   Simple    8.4 us               3.4 / 14.0 us                       all of it
//
// dtsim's ring and tree schedules (sim/cost/collectives.h) price each step at the
// links' latency (the catalog's are NCCL's Ring/LL hop latencies) and full
// bandwidth. Split into its latency part L (the schedule with no bytes) and
// bandwidth part W = T - L, a collective costs under protocol p
//   T_p = base_p + L x hop_p / hop_LL + W / bandwidth share_p
// (hop ratios of the network's row when the group spans nodes, NVLink's
// otherwise) and NCCL's tuner picks the fastest: T = min over the protocols
// enabled. Small collectives pay LL's halved bandwidth or Simple's longer
// hops; the ideal model gave them LL's latency and Simple's bandwidth at
// once. LL128 counts only where NCCL enables it (NetworkSpec::nccl_ll128).
#pragma once

namespace dtsim::sim {

struct NcclProtocolTime {
  double seconds = 0;
  const char* protocol = "";  // "LL", "LL128" or "Simple"
};

// `latency_s` and `bandwidth_s`: the schedule's latency and bandwidth parts
// (L and W above); `spans_nodes`: the group has ranks on several nodes.
NcclProtocolTime NcclCollectiveTime(double latency_s, double bandwidth_s, bool spans_nodes,
                                    bool ll128_enabled);

}  // namespace dtsim::sim
