#include "sim/cost/nccl_protocols.h"

#include <algorithm>

namespace dtsim::sim {
namespace {

struct Protocol {
  const char* name;
  double base_s;         // baseLat, Ring row (NCCL 2.20.3 tuning.cc)
  double hop_nvlink_s;   // hwLat NVLINK, Ring row
  double hop_net_s;      // hwLat NET, Ring row
  double bandwidth;      // share of the link bandwidth the protocol carries
};

constexpr Protocol kProtocols[] = {
    {"LL", 6.6e-6, 0.6e-6, 2.7e-6, 0.5},
    {"LL128", 14.0e-6, 1.9e-6, 4.0e-6, 120.0 / 128.0},
    {"Simple", 8.4e-6, 3.4e-6, 14.0e-6, 1.0},
};

}  // namespace

NcclProtocolTime NcclCollectiveTime(double latency_s, double bandwidth_s, bool spans_nodes,
                                    bool ll128_enabled) {
  const Protocol& ll = kProtocols[0];
  const double ll_hop = spans_nodes ? ll.hop_net_s : ll.hop_nvlink_s;
  NcclProtocolTime best{-1, ""};
  for (const Protocol& p : kProtocols) {
    if (!ll128_enabled && p.name == kProtocols[1].name) continue;
    const double hop = spans_nodes ? p.hop_net_s : p.hop_nvlink_s;
    const double t = p.base_s + std::max(0.0, latency_s) * hop / ll_hop +
                     std::max(0.0, bandwidth_s) / p.bandwidth;
    if (best.seconds < 0 || t < best.seconds) best = {t, p.name};
  }
  return best;
}

}  // namespace dtsim::sim
