#include "sim/network/pcie_ring.h"

#include <map>
#include <tuple>

#include "common/error.h"

namespace dtsim::sim {
namespace {

enum class Link { kGpu, kUplink, kQpi, kHca, kWire };
enum class Dir { kUp, kDown };  // up: towards the CPU (or out of the node)

struct LinkId {
  Link kind;
  int node;
  int index;  // GPU, switch or socket pair (QPI: the source socket)
  Dir dir;
  bool operator<(const LinkId& o) const {
    return std::tie(kind, node, index, dir) < std::tie(o.kind, o.node, o.index, o.dir);
  }
};

std::string Name(const LinkId& l) {
  const std::string where = "node " + std::to_string(l.node) + " ";
  const char* dir = l.dir == Dir::kUp ? " up" : " down";
  switch (l.kind) {
    case Link::kGpu: return where + "GPU " + std::to_string(l.index) + " link" + dir;
    case Link::kUplink: return where + "switch " + std::to_string(l.index) + " uplink" + dir;
    case Link::kQpi: return where + "QPI from socket " + std::to_string(l.index);
    case Link::kHca: return where + "HCA link" + dir;
    case Link::kWire: return where + "network" + dir;
  }
  return "";
}

}  // namespace

RingLoad PcieRingLoad(const PcieNodeSpec& spec, int nodes, int gpus_per_node) {
  DTSIM_CHECK(nodes >= 1 && gpus_per_node >= 1 && gpus_per_node <= spec.gpus() &&
                  nodes * gpus_per_node >= 2,
              "a ring of at least 2 GPUs that fit the node");
  DTSIM_CHECK(spec.gpu_link_bytes_per_s > 0 && spec.hca_link_bytes_per_s > 0 &&
                  spec.qpi_bytes_per_s > 0 && spec.network_bytes_per_s > 0,
              "PCIe tree bandwidths must be > 0");
  const int per_socket = spec.switches_per_socket * spec.gpus_per_switch;
  auto switch_of = [&](int gpu) { return gpu / spec.gpus_per_switch; };
  auto socket_of = [&](int gpu) { return gpu / per_socket; };
  const int hca_switch = switch_of(spec.gpus() - 1);
  const int hca_socket = socket_of(spec.gpus() - 1);

  std::map<LinkId, int> streams;
  auto use = [&](Link kind, int node, int index, Dir dir) { ++streams[{kind, node, index, dir}]; };
  auto cross = [&](int node, int from_socket, int to_socket) {
    if (from_socket != to_socket) use(Link::kQpi, node, from_socket, Dir::kUp);
  };
  const int ranks = nodes * gpus_per_node;
  for (int r = 0; r < ranks; ++r) {
    const int d = (r + 1) % ranks;
    const int rn = r / gpus_per_node, dn = d / gpus_per_node;
    const int rg = r % gpus_per_node, dg = d % gpus_per_node;
    use(Link::kGpu, rn, rg, Dir::kUp);
    use(Link::kGpu, dn, dg, Dir::kDown);
    if (rn == dn) {
      const bool same_socket = socket_of(rg) == socket_of(dg);
      if (spec.peer_to_peer && same_socket && switch_of(rg) == switch_of(dg)) continue;
      use(Link::kUplink, rn, switch_of(rg), Dir::kUp);
      use(Link::kUplink, dn, switch_of(dg), Dir::kDown);
      cross(rn, socket_of(rg), socket_of(dg));
      continue;
    }
    // Sender: into host memory, then the HCA reads it.
    use(Link::kUplink, rn, switch_of(rg), Dir::kUp);
    cross(rn, socket_of(rg), hca_socket);
    use(Link::kUplink, rn, hca_switch, Dir::kDown);
    use(Link::kHca, rn, 0, Dir::kDown);
    use(Link::kWire, rn, 0, Dir::kUp);
    // Receiver: the HCA writes host memory, then the GPU reads it.
    use(Link::kHca, dn, 0, Dir::kUp);
    use(Link::kUplink, dn, hca_switch, Dir::kUp);
    cross(dn, hca_socket, socket_of(dg));
    use(Link::kUplink, dn, switch_of(dg), Dir::kDown);
  }
  RingLoad worst;
  for (const auto& [link, count] : streams) {
    double bw = spec.gpu_link_bytes_per_s;
    if (link.kind == Link::kQpi) bw = spec.qpi_bytes_per_s;
    if (link.kind == Link::kHca) bw = spec.hca_link_bytes_per_s;
    if (link.kind == Link::kWire) bw = spec.network_bytes_per_s;
    const double spb = count / bw;
    if (spb > worst.seconds_per_byte) worst = {spb, count, Name(link)};
  }
  return worst;
}

}  // namespace dtsim::sim
