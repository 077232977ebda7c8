// What each parameter server carries in a simulated run: the elements it
// holds (plan::Plan::server_params), the bytes that cross its link per step
// and how long some transfer to or from it is in flight. The server whose
// link is busy longest bounds a bandwidth-bound step (a round-robin
// placement that leaves VGG-16's fc6 on one server makes that server the
// bottleneck; docs/parameter_server.md).
#pragma once

#include <cstdint>
#include <vector>

#include "plan/plan.h"
#include "sim/engine/engine.h"

namespace dtsim::sim {

struct ServerLoad {
  plan::RankId rank = 0;
  std::int64_t params = 0;    // elements held
  // Per measured iteration (mean): bytes of the pushes it receives plus the
  // pulls it sends, and seconds during which at least one of them is in
  // flight (the union of their [start, end) intervals).
  double bytes_per_step = 0;
  double busy_s = 0;
};

// One entry per server rank, in rank order, over iterations [first, last].
// Empty for plans without servers. REQUIRES: `result` ran `plan`.
std::vector<ServerLoad> ComputeServerLoads(const plan::Plan& plan, const EngineResult& result,
                                           int first, int last);

}  // namespace dtsim::sim
