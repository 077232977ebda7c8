#include "validation/allreduce.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "report/sweep_page.h"
#include "sim/cost/nccl_protocols.h"

namespace dtsim::validation {
namespace {

// PCIe 3.0: 8 GT/s per lane, 128b/130b coding (PCI Express Base
// Specification 3.0, 2010): 15.75 GB/s per direction for x16.
constexpr double kPcie3LaneBytesPerS = 8e9 * 128.0 / 130.0 / 8;
// Mellanox ConnectX-3 VPI adapter product brief (2013): PCIe 3.0 x8 host
// interface, InfiniBand FDR 56 Gb/s. FDR: 4 lanes of 14.0625 Gb/s with
// 64b/66b coding (InfiniBand Architecture Specification Vol. 2, Release
// 1.3, 2012): 54.5 Gb/s of data, 6.82 GB/s per direction.
constexpr int kHcaLanes = 8;
constexpr double kFdrBytesPerS = 4 * 14.0625e9 * 64.0 / 66.0 / 8;
// QPI moves 2 bytes per transfer per direction (Intel Xeon E5-2600 v2
// datasheet vol. 1, 2013: QPI at 8.0 GT/s, 16 GB/s per direction per
// link).
constexpr double kQpiBytesPerTransfer = 2;

[[noreturn]] void Fail(const std::string& file, int line, const std::string& what) {
  throw UserError(SourceLocation{file, line, 0}, what,
                  "expected the layout of shared/validation/deepbench/README.md");
}

double Number(const std::string& f, const std::string& file, int line, const char* column) {
  double v = 0;
  const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (f.empty() || ec != std::errc() || end != f.data() + f.size() || !std::isfinite(v) || v <= 0)
    Fail(file, line, std::string("column '") + column + "': '" + f + "' is not a number > 0");
  return v;
}

long long Count(const std::string& f, const std::string& file, int line, const char* column) {
  const double v = Number(f, file, line, column);
  if (v != std::floor(v) || v > 1e15)
    Fail(file, line, std::string("column '") + column + "': '" + f + "' is not a whole number");
  return static_cast<long long>(v);
}

}  // namespace

const char* AllreduceAlgorithmName(AllreduceAlgorithm a) {
  switch (a) {
    case AllreduceAlgorithm::kNcclSingle: return "NCCL 2.0 Single";
    case AllreduceAlgorithm::kNcclMpi: return "NCCL 2.0 MPI";
    case AllreduceAlgorithm::kBaiduRing: return "Baidu RingAllReduce";
    case AllreduceAlgorithm::kOsu: return "OSU Allreduce";
  }
  return "";
}

std::string AllreduceMeasurement::Where() const { return file + ":" + std::to_string(line); }

std::vector<double> AllreduceConstants::AsVector() const {
  return {pcie_efficiency, qpi_efficiency, network_efficiency, intra_step_s,
          net_step_s,      launch_s,       baidu_step_s};
}

AllreduceConstants AllreduceConstants::FromVector(const std::vector<double>& v) {
  DTSIM_CHECK(v.size() == 7, "7 all-reduce constants");
  AllreduceConstants c;
  c.pcie_efficiency = v[0];
  c.qpi_efficiency = v[1];
  c.network_efficiency = v[2];
  c.intra_step_s = v[3];
  c.net_step_s = v[4];
  c.launch_s = v[5];
  c.baidu_step_s = v[6];
  return c;
}

std::vector<AllreduceMeasurement> ParseAllreduce(const std::string& text,
                                                 const std::string& filename) {
  std::istringstream in(text);
  std::string line;
  int number = 0;
  std::vector<std::string> header;
  std::vector<AllreduceMeasurement> rows;
  std::size_t col_gpu = 0, col_floats = 0, col_ranks = 0, col_nodes = 0, col_ms = 0, col_alg = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> f = report::SplitCsvLine(line);
    if (header.empty()) {
      header = std::move(f);
      auto column = [&](const char* name) {
        for (std::size_t i = 0; i < header.size(); ++i)
          if (header[i] == name) return i;
        Fail(filename, number, std::string("the header has no column '") + name + "'");
      };
      col_gpu = column("gpu");
      col_floats = column("floats");
      col_ranks = column("ranks");
      col_nodes = column("nodes");
      col_ms = column("mean_ms");
      col_alg = column("algorithm");
      continue;
    }
    if (f.size() != header.size())
      Fail(filename, number, "expected " + std::to_string(header.size()) +
                                 " fields as in the header, got " + std::to_string(f.size()));
    AllreduceMeasurement m;
    m.file = filename;
    m.line = number;
    m.gpu = f[col_gpu];
    if (m.gpu.empty()) Fail(filename, number, "column 'gpu' is empty");
    m.floats = Count(f[col_floats], filename, number, "floats");
    const long long ranks = Count(f[col_ranks], filename, number, "ranks");
    const long long nodes =
        f[col_nodes].empty() ? 1 : Count(f[col_nodes], filename, number, "nodes");
    if (ranks < 2 || ranks > 1 << 20) Fail(filename, number, "ranks must be 2 or more");
    if (ranks % nodes != 0)
      Fail(filename, number, std::to_string(ranks) + " ranks do not divide into " +
                                 std::to_string(nodes) + " nodes");
    m.ranks = static_cast<int>(ranks);
    m.nodes = static_cast<int>(nodes);
    m.measured_s = Number(f[col_ms], filename, number, "mean_ms") * 1e-3;
    bool known = false;
    for (AllreduceAlgorithm a : {AllreduceAlgorithm::kNcclSingle, AllreduceAlgorithm::kNcclMpi,
                                 AllreduceAlgorithm::kBaiduRing, AllreduceAlgorithm::kOsu}) {
      if (f[col_alg] == AllreduceAlgorithmName(a)) {
        m.algorithm = a;
        known = true;
      }
    }
    if (!known)
      throw UserError(SourceLocation{filename, number, 0},
                      "unknown algorithm '" + f[col_alg] + "'",
                      "known: NCCL 2.0 Single, NCCL 2.0 MPI, Baidu RingAllReduce, OSU Allreduce");
    const AllreduceMachine machine = [&] {
      try {
        return DeepbenchAllreduceMachine(m.gpu);
      } catch (const UserError& e) {
        throw UserError(SourceLocation{filename, number, 0}, e.message(), e.hint());
      }
    }();
    (void)machine;
    if (m.ranks / m.nodes > sim::PcieNodeSpec{}.gpus())
      Fail(filename, number, std::to_string(m.ranks / m.nodes) +
                                 " GPUs per node: the modelled node holds " +
                                 std::to_string(sim::PcieNodeSpec{}.gpus()));
    rows.push_back(std::move(m));
  }
  if (header.empty()) Fail(filename, 0, "the file is empty");
  return rows;
}

std::vector<AllreduceMeasurement> LoadAllreduce(const std::string& dir) {
  const std::filesystem::path path = std::filesystem::path(dir) / "allreduce.csv";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UserError("cannot read " + path.string(),
                    "pass the folder of DeepBench's CSV files (shared/validation/deepbench)");
  std::ostringstream s;
  s << in.rdbuf();
  return ParseAllreduce(s.str(), "allreduce.csv");
}

// Every sheet is modelled on the 8-GPU, 2-socket server of specs.csv (Tyan
// FT77C-B7079, ConnectX-3 FDR HCA): the all-reduce sheets have 8 ranks on
// one node for every GPU, which the ASUS X99-E WS workstation named for
// 1080Ti and P100 cannot hold (ASUS X99-E WS specifications: 7 PCIe x16
// slots, 4 of them x16 through two PLX PEX 8747 switches; double-width
// boards fit 4). The switch arrangement (two GPUs per 48-lane PEX 8747: a
// x16 uplink, two x16 GPU ports; two switches per socket; the HCA under the
// last switch) is assumed, not documented. Whether copies go peer to peer
// is not in specs.csv; each sheet's 2-rank rows tell it (see evidence).
AllreduceMachine DeepbenchAllreduceMachine(const std::string& gpu) {
  const std::string p2p_evidence =
      "2-rank NCCL rows reach 12.2 GB/s, one PCIe 3.0 x16 link's goodput: copies peer to peer "
      "inside the switch";
  const std::string staged_evidence =
      "2-rank NCCL rows reach 6.0 GB/s, half that: both directions share the switch's uplink, "
      "copies staged through host memory";
  // QPI speeds: Intel ARK, E5-2690 v4 and E5-2650 v3 9.6 GT/s, E5-2650 v2 8.0 GT/s.
  if (gpu == "1080Ti")
    return {"ASUS X99-E WS (specs.csv; modelled as the 8-GPU server)",
            "Xeon E5-2690 v4", 9.6, true, p2p_evidence};
  if (gpu == "P100")
    return {"ASUS X99-E WS (specs.csv; modelled as the 8-GPU server)",
            "Xeon E5-2690 v4", 9.6, false, staged_evidence};
  if (gpu == "M40") return {"Tyan FT77C-B7079", "Xeon E5-2650 v2", 8.0, false, staged_evidence};
  if (gpu == "TitanX")
    return {"Tyan FT77C-B7079", "Xeon E5-2650 v2", 8.0, false, staged_evidence};
  if (gpu == "TitanX_Pascal")
    return {"Tyan FT77C-B7079", "Xeon E5-2650 v3", 9.6, true, p2p_evidence};
  throw UserError("no all-reduce machine for DeepBench GPU '" + gpu + "'",
                  "known: 1080Ti, M40, P100, TitanX, TitanX_Pascal");
}

sim::PcieNodeSpec AllreduceNode(const std::string& gpu, const AllreduceConstants& c,
                                bool force_peer_to_peer) {
  const AllreduceMachine machine = DeepbenchAllreduceMachine(gpu);
  sim::PcieNodeSpec s;
  s.gpu_link_bytes_per_s = 16 * kPcie3LaneBytesPerS * c.pcie_efficiency;
  s.hca_link_bytes_per_s = kHcaLanes * kPcie3LaneBytesPerS * c.pcie_efficiency;
  s.qpi_bytes_per_s = machine.qpi_gt_per_s * 1e9 * kQpiBytesPerTransfer * c.qpi_efficiency;
  s.network_bytes_per_s = kFdrBytesPerS * c.network_efficiency;
  s.peer_to_peer = force_peer_to_peer || machine.peer_to_peer;
  return s;
}

AllreducePrediction PredictAllreduce(const AllreduceMeasurement& m, const AllreduceConstants& c,
                                     const AllreducePricing& pricing) {
  const sim::PcieNodeSpec node = AllreduceNode(m.gpu, c, pricing.force_peer_to_peer);
  const sim::RingLoad load = sim::PcieRingLoad(node, m.nodes, m.ranks / m.nodes);
  const int n = m.ranks;
  const double steps = 2.0 * (n - 1);  // reduce-scatter, then all-gather
  const double bandwidth_s = steps * (m.bytes() / n) * load.seconds_per_byte;
  const double hop_s = m.nodes > 1 ? c.net_step_s : c.intra_step_s;
  AllreducePrediction p;
  p.bottleneck = load.bottleneck;
  switch (m.algorithm) {
    case AllreduceAlgorithm::kNcclSingle:
    case AllreduceAlgorithm::kNcclMpi:
      if (pricing.nccl_protocols) {
        const sim::NcclProtocolTime t =
            sim::NcclCollectiveTime(steps * hop_s, bandwidth_s, m.nodes > 1, false);
        p.seconds = t.seconds;
        p.how = std::string("ring/") + t.protocol;
      } else {
        p.seconds = c.launch_s + steps * hop_s + bandwidth_s;
        p.how = "ring";
      }
      return p;
    case AllreduceAlgorithm::kBaiduRing:
      p.seconds = steps * c.baidu_step_s + bandwidth_s;
      p.how = "ring, MPI_Sendrecv per step";
      return p;
    case AllreduceAlgorithm::kOsu:
      // OpenMPI 1.10 coll/tuned, ompi_coll_tuned_allreduce_intra_dec_fixed:
      // below 10000 bytes recursive doubling; otherwise (a commutative sum
      // of more elements than ranks) the ring, segmented in 1 MB pieces
      // above ranks x 1 MB, which moves the same bytes over the same edges.
      if (m.bytes() < 10000) {
        // log2(N) exchanges of the whole buffer with partners 2^k apart;
        // priced on the ring's busiest link (partners far apart cross the
        // same uplinks and the network).
        const double rounds = std::ceil(std::log2(static_cast<double>(n)));
        p.seconds = rounds * (hop_s + m.bytes() * load.seconds_per_byte);
        p.how = "recursive doubling";
      } else {
        p.seconds = steps * hop_s + bandwidth_s;
        p.how = m.bytes() > n * double(1 << 20) ? "segmented ring" : "ring";
      }
      return p;
  }
  return p;
}

}  // namespace dtsim::validation
