// A ring all-reduce over GPUs that sit on PCIe switches, priced by the load
// it puts on each link of the PCIe tree (the 2016-2018 GPU servers of
// Baidu's DeepBench all-reduce: PCIe 3.0 x16 GPUs, no NVLink).
//
//   node:        socket 0 ===== QPI ===== socket 1
//                 |        |               |        |      root ports
//              switch 0  switch 1       switch 2  switch 3 one x16 uplink each
//               |    |    |    |         |    |    |    |    |
//              g0   g1   g2   g3        g4   g5   g6   g7  HCA (on the last switch)
//
// GPU i of a node sits on switch i / gpus_per_switch (switches fill socket by
// socket). The ring runs through the GPUs in node-major order, as NCCL's
// does; each ring edge is one stream of data, and every link is full duplex
// (separate capacity per direction). An edge is routed:
//   - peer to peer, same switch:      GPU up -> GPU down (the switch turns it)
//   - peer to peer, same socket:      GPU up, switch uplink up, root complex,
//                                     switch uplink down, GPU down
//   - through host memory (staged):   the same links as the line above, plus
//     the QPI when the sockets differ; NCCL 2.x stages every copy between
//     sockets this way (NCCL documentation, NCCL_P2P_LEVEL: peer-to-peer
//     across the CPU interconnect "SYS" is off by default) and every copy when
//     peer_to_peer is false.
//   - across nodes (no GPUDirect RDMA: NCCL 2.0 and OpenMPI 1.10 stage through
//     host memory): sender GPU up, its uplink up, [QPI], the HCA's switch
//     uplink down and the HCA's link down (the HCA reads host memory), the
//     wire; at the receiver the HCA's link up and its switch uplink up (the
//     HCA writes host memory), [QPI], the GPU's uplink down, GPU down.
// Each step of the ring moves one chunk over every edge at once, so a step
// lasts chunk x (streams on the busiest link / its bandwidth).
#pragma once

#include <string>

namespace dtsim::sim {

struct PcieNodeSpec {
  int sockets = 2;
  int switches_per_socket = 2;
  int gpus_per_switch = 2;
  double gpu_link_bytes_per_s = 0;  // a GPU's link and a switch uplink, per direction
  double hca_link_bytes_per_s = 0;  // the HCA's PCIe link, per direction
  double qpi_bytes_per_s = 0;       // PCIe traffic between sockets, per direction
  double network_bytes_per_s = 0;   // the HCA's wire, per direction
  // GPU-to-GPU copies inside a socket go through the switches (true) or are
  // staged through host memory (false).
  bool peer_to_peer = true;

  int gpus() const { return sockets * switches_per_socket * gpus_per_switch; }
};

struct RingLoad {
  double seconds_per_byte = 0;  // of the busiest link: streams / bandwidth
  int streams = 0;              // on that link
  std::string bottleneck;       // that link, e.g. "switch 0 uplink up"
};

// The busiest link of a ring over `nodes` nodes of `gpus_per_node` GPUs each.
// REQUIRES: nodes >= 1, 1 <= gpus_per_node <= spec.gpus(), nodes x
// gpus_per_node >= 2, every bandwidth > 0.
RingLoad PcieRingLoad(const PcieNodeSpec& spec, int nodes, int gpus_per_node);

}  // namespace dtsim::sim
