// The built-in links, with where each number comes from.
//
// Bandwidth is per direction (all these links are full duplex) and is the
// data rate after line coding, before packet/protocol overhead, which costs
// another ~5-20% in practice (PCIe TLP headers, Ethernet/IP/TCP framing).
// For NVLink and NVSwitch it is the aggregate of all of one GPU's links, i.e.
// what one GPU can send in total; in a hybrid cube-mesh (DGX-1) one peer is
// reached over only some of them.
//
// Latency is one hop for a small message, end to end through one switch.
// Datasheets do not give it; the figures are NCCL's own per-hop model
// (src/graph/tuning.cc, hwLat table, Ring algorithm, LL protocol) for
// NVLink and PCIe, and stated typical values elsewhere.
#include <string>

#include "hw/catalog.h"
#include "hw/catalog_internal.h"

namespace dtsim::hw::internal {
namespace {

constexpr double kGBps = 1e9;     // bytes/s per GB/s
constexpr double kMicro = 1e-6;   // seconds per microsecond
// PCIe 3.0 and later: 128b/130b line coding; GT/s per lane x 16 lanes / 8 bits.
constexpr double PcieX16GBps(double gt_per_s) { return gt_per_s * 16 * 128.0 / 130.0 / 8; }
// Ethernet and InfiniBand are named by their data rate in Gb/s.
constexpr double GbitToGBps(double gbit_per_s) { return gbit_per_s / 8; }

struct LinkRow {
  const char* name;
  double bw_gbps;     // GB/s (1e9 bytes/s) per direction
  double latency_us;  // microseconds, one hop
  const char* source;          // bandwidth
  const char* latency_source;  // latency
};

// Assumed latencies (us) where no datasheet gives one.
constexpr double kNvlinkLatencyUs = 0.47;  // NCCL hwLat NVLink Ring/LL
constexpr double kPcieLatencyUs = 1.0;     // NCCL hwLat PCI Ring/LL
constexpr double kTcpLatencyUs = 25;       // kernel TCP, 10GbE and faster
constexpr double kTcp1GbeLatencyUs = 50;   // kernel TCP, 1GbE
constexpr double kRoceLatencyUs = 2;       // RoCEv2 RDMA
constexpr double kIbLatencyUs = 1;         // InfiniBand RDMA

// Where each latency (and, for Ethernet, the bandwidth rule) comes from.
constexpr const char* kNcclLatency =
    "latency: NCCL src/graph/tuning.cc hwLat, Ring/LL (NCCL's per-hop model)";
constexpr const char* kTcpLatency =
    "bandwidth = line rate / 8 (IEEE 802.3); latency typical, assumed: one-way kernel TCP small "
    "message through one switch (half a netperf TCP_RR round trip)";
constexpr const char* kRoceLatency =
    "bandwidth = line rate / 8 (IEEE 802.3); latency typical, assumed: one-way RoCEv2 RDMA "
    "through one switch, ~1.5-3 us in perftest ib_write_lat on ConnectX-class NICs";
constexpr const char* kIbLatency =
    "latency typical, assumed: one-way RDMA through one switch, ~1 us (NVIDIA ConnectX-6 product "
    "brief: adapter latency below 0.6 us; Quantum switch port-to-port ~0.13 us); NCCL models a "
    "network hop at 2.7 us (tuning.cc hwLat NET Ring/LL)";

// clang-format off
constexpr LinkRow kLinks[] = {
  {"pcie2-x16", 5.0 * 16 * 8.0 / 10.0 / 8, kPcieLatencyUs,
   "PCI Express Base Specification 2.0: 5 GT/s x 16 lanes, 8b/10b = 8 GB/s (Tesla K20m host "
   "interface: PCIe 2.0 x16, Tesla K20 board specification)", kNcclLatency},
  {"pcie3-x16", PcieX16GBps(8), kPcieLatencyUs,
   "PCI Express Base Specification 3.0: 8 GT/s x 16 lanes, 128b/130b = 15.75 GB/s",
   kNcclLatency},
  {"pcie4-x16", PcieX16GBps(16), kPcieLatencyUs,
   "PCI Express Base Specification 4.0: 16 GT/s x 16 lanes, 128b/130b = 31.5 GB/s",
   kNcclLatency},
  {"pcie5-x16", PcieX16GBps(32), kPcieLatencyUs,
   "PCI Express Base Specification 5.0: 32 GT/s x 16 lanes, 128b/130b = 63.0 GB/s",
   kNcclLatency},
  {"nvlink1", 4 * 20, kNvlinkLatencyUs,
   "NVIDIA Tesla P100 whitepaper (2016): 4 NVLinks x 20 GB/s per direction (160 GB/s total "
   "bidirectional)", kNcclLatency},
  {"nvlink2", 6 * 25, kNvlinkLatencyUs,
   "NVIDIA Tesla V100 GPU Architecture whitepaper (2017): 6 NVLinks x 25 GB/s per direction "
   "(300 GB/s total)", kNcclLatency},
  {"nvlink3", 12 * 25, kNvlinkLatencyUs,
   "NVIDIA A100 Tensor Core GPU datasheet (2021): NVLink 600 GB/s total = 12 links x 25 GB/s "
   "per direction", kNcclLatency},
  {"nvlink4", 18 * 25, kNvlinkLatencyUs,
   "NVIDIA H100 Tensor Core GPU datasheet (2023): NVLink 900 GB/s total = 18 links x 25 GB/s "
   "per direction", kNcclLatency},
  {"nvswitch-v100", 6 * 25, kNvlinkLatencyUs,
   "NVIDIA DGX-2 / NVSwitch technical overview (2018): each V100 reaches the NVSwitch fabric "
   "with 6 NVLinks x 25 GB/s per direction", kNcclLatency},
  {"nvswitch-a100", 12 * 25, kNvlinkLatencyUs,
   "NVIDIA DGX A100 system architecture whitepaper (2020): each A100 reaches the NVSwitch "
   "fabric with 12 NVLinks x 25 GB/s per direction", kNcclLatency},
  {"nvswitch-h100", 18 * 25, kNvlinkLatencyUs,
   "NVIDIA DGX H100 / H100 whitepaper (2022): each H100 reaches the NVSwitch fabric with 18 "
   "NVLinks x 25 GB/s per direction", kNcclLatency},
  {"1GbE", GbitToGBps(1), kTcp1GbeLatencyUs, "1 Gb/s Ethernet", kTcpLatency},
  {"10GbE", GbitToGBps(10), kTcpLatencyUs, "10 Gb/s Ethernet", kTcpLatency},
  {"25GbE", GbitToGBps(25), kTcpLatencyUs, "25 Gb/s Ethernet", kTcpLatency},
  {"40GbE", GbitToGBps(40), kTcpLatencyUs, "40 Gb/s Ethernet", kTcpLatency},
  {"100GbE", GbitToGBps(100), kTcpLatencyUs, "100 Gb/s Ethernet", kTcpLatency},
  {"200GbE", GbitToGBps(200), kTcpLatencyUs, "200 Gb/s Ethernet", kTcpLatency},
  {"400GbE", GbitToGBps(400), kTcpLatencyUs, "400 Gb/s Ethernet", kTcpLatency},
  {"25GbE-RoCE", GbitToGBps(25), kRoceLatencyUs, "25 Gb/s Ethernet, RoCEv2", kRoceLatency},
  {"100GbE-RoCE", GbitToGBps(100), kRoceLatencyUs, "100 Gb/s Ethernet, RoCEv2", kRoceLatency},
  {"200GbE-RoCE", GbitToGBps(200), kRoceLatencyUs, "200 Gb/s Ethernet, RoCEv2", kRoceLatency},
  {"400GbE-RoCE", GbitToGBps(400), kRoceLatencyUs, "400 Gb/s Ethernet, RoCEv2", kRoceLatency},
  {"ib-edr", GbitToGBps(100), kIbLatencyUs,
   "InfiniBand Trade Association: EDR 4x = 100 Gb/s data rate (25.78 Gbaud x 4, 64b/66b)",
   kIbLatency},
  {"ib-hdr", GbitToGBps(200), kIbLatencyUs,
   "InfiniBand Trade Association: HDR 4x = 200 Gb/s data rate (PAM4)", kIbLatency},
  {"ib-ndr", GbitToGBps(400), kIbLatencyUs,
   "InfiniBand Trade Association: NDR 4x = 400 Gb/s data rate (PAM4)", kIbLatency},
};

constexpr struct {
  const char* alias;
  const char* target;
} kLinkAliases[] = {
  {"pcie2", "pcie2-x16"}, {"pcie3", "pcie3-x16"}, {"pcie4", "pcie4-x16"}, {"pcie5", "pcie5-x16"},
  {"edr", "ib-edr"},      {"hdr", "ib-hdr"},      {"ndr", "ib-ndr"},
};
// clang-format on

}  // namespace

void AddBuiltInLinks(HardwareCatalog* catalog) {
  for (const LinkRow& row : kLinks) {
    catalog->AddLink(LinkSpec{row.name, row.bw_gbps * kGBps, row.latency_us * kMicro,
                              std::string(row.source) + "; " + row.latency_source});
  }
  for (const auto& a : kLinkAliases) catalog->AddLinkAlias(a.alias, a.target);
}

}  // namespace dtsim::hw::internal
