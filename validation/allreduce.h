// Baidu DeepBench's measured all-reduce times (../shared/validation/deepbench/
// allreduce.csv, README.md there) and their prediction by a ring all-reduce
// over a PCIe switch tree (sim/network/pcie_ring.h).
//
// allreduce.csv: gpu, floats, ranks, nodes (empty = 1), mean_ms,
// gbytes_per_s, algorithm, std_ms; columns found by header name.
#pragma once

#include <string>
#include <vector>

#include "sim/network/pcie_ring.h"

namespace dtsim::validation {

enum class AllreduceAlgorithm { kNcclSingle, kNcclMpi, kBaiduRing, kOsu };
// The sheet's name: "NCCL 2.0 Single", "NCCL 2.0 MPI", "Baidu RingAllReduce",
// "OSU Allreduce".
const char* AllreduceAlgorithmName(AllreduceAlgorithm a);

struct AllreduceMeasurement {
  std::string gpu;   // the sheet, e.g. "M40"
  std::string file;  // "allreduce.csv"
  int line = 0;      // 1-based, header = 1
  long long floats = 0;  // 32-bit floats reduced
  int ranks = 0;     // GPUs
  int nodes = 1;
  double measured_s = 0;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::kNcclMpi;

  double bytes() const { return 4.0 * static_cast<double>(floats); }
  std::string Where() const;  // "allreduce.csv:12"
};

// Parses allreduce.csv text. Throws UserError at file:line for a missing
// column, a short row, a field that is not a number, an unknown algorithm,
// ranks that do not divide into the nodes, or more GPUs per node than the
// 8-GPU node of DeepbenchAllreduceMachine.
std::vector<AllreduceMeasurement> ParseAllreduce(const std::string& text,
                                                 const std::string& filename);
// DIR/allreduce.csv.
std::vector<AllreduceMeasurement> LoadAllreduce(const std::string& dir);

// The constants of the prediction: efficiencies of the links (goodput over
// the datasheet rate) and fixed costs per ring step. Not from datasheets:
// fitted by `dtsim validate allreduce` (validation/allreduce_report.h) and
// scored leaving each GPU out. The defaults are the starting point of
// the fit, chosen from first principles:
struct AllreduceConstants {
  // PCIe 3.0 TLPs of 256 B payload carry ~24 B of header, sequence number,
  // LCRC and framing (PCI Express Base Specification 3.0, 2010, chapters 2
  // and 4), before flow-control and ACK packets: at most ~0.9 of the rate.
  double pcie_efficiency = 0.8;
  // PCIe traffic into the other socket's memory, over the QPI link's rate.
  double qpi_efficiency = 0.6;
  // InfiniBand FDR data over the 64b/66b rate (headers, ACKs, staging).
  double network_efficiency = 0.8;
  double intra_step_s = 3e-6;  // per ring step inside a node (NCCL hwLat PCI ~1 us + sync)
  double net_step_s = 10e-6;   // per ring step when the ring spans nodes (staged through host)
  double launch_s = 20e-6;     // per NCCL call: kernel launch and setup (ideal pricing only)
  // Per step of Baidu's ring: an MPI_Sendrecv of device buffers (CUDA-aware
  // OpenMPI) and a reduction kernel with cudaDeviceSynchronize, not
  // overlapped.
  double baidu_step_s = 0.5e-3;

  std::vector<double> AsVector() const;
  static AllreduceConstants FromVector(const std::vector<double>& v);
};

// How each sheet's machine is modelled (see allreduce.cc for sources).
struct AllreduceMachine {
  std::string board;     // specs.csv's motherboard
  std::string cpu;       // specs.csv's cpu
  double qpi_gt_per_s;   // Intel ARK, the CPU's QPI speed
  bool peer_to_peer;     // GPU-to-GPU copies through the switches
  std::string evidence;  // why peer_to_peer is what it is
};
// Throws UserError for a sheet without all-reduce rows.
AllreduceMachine DeepbenchAllreduceMachine(const std::string& gpu);

// The node of a sheet with the constants' efficiencies applied. With
// `force_peer_to_peer`, every sheet copies peer to peer (the rule NCCL
// applies from the topology alone).
sim::PcieNodeSpec AllreduceNode(const std::string& gpu, const AllreduceConstants& c,
                                bool force_peer_to_peer = false);

struct AllreducePricing {
  bool nccl_protocols = false;     // NCCL rows priced by sim/cost/nccl_protocols.h
  bool force_peer_to_peer = false; // see AllreduceNode
};

struct AllreducePrediction {
  double seconds = 0;
  std::string bottleneck;  // the busiest link
  std::string how;         // e.g. "ring", "ring/LL", "recursive doubling"
};
AllreducePrediction PredictAllreduce(const AllreduceMeasurement& m, const AllreduceConstants& c,
                                     const AllreducePricing& pricing = {});

}  // namespace dtsim::validation
