// The SimGrid engine: runs a plan on SimGrid's flow-level network model
// (S4U API), so that flows sharing a link share its bandwidth as they come
// and go, where the analytic engine (engine.h) prices each collective alone.
//
// Platform, built in code from the NetworkSpec (the same links as
// network.h):
//   - one host per rank at 1e9 flop/s, so that a compute task of `task_ns`
//     nanoseconds (TaskCosts, the plan's one pricing) executes task_ns flops;
//   - one link per direction for each device port (dev_up/dev_down), each
//     node's NIC (nic_up/nic_down) and, on a fat tree, each leaf uplink
//     (leaf_up/leaf_down), with the NetworkSpec bandwidths;
//   - routes as Network::Route: intra-node dev_up[src] -> dev_down[dst];
//     inter-node nic_up -> (leaf_up -> leaf_down) -> nic_down. The path
//     latency sits on the first link of each segment (dev_up: intra
//     latency, nic_up: network latency, leaf_up: spine latency), so a path's
//     latency is the analytic one.
// Network model CM02 with cross-traffic off and no TCP window bound: a lone
// flow takes latency + bytes / bottleneck bandwidth (alpha-beta), and flows
// sharing a link get max-min fair shares.
//
// Execution: one actor per (rank, stream) runs its tasks in program order,
// each once its dependencies have finished (k of n with min_deps); kSend
// tasks hold no stream (an actor each). A collective starts when its last
// member arrives; after the NetworkSpec's collective_latency_s it plays its
// schedule (collectives.h) step by step, each step's transfers as concurrent
// flows between the members' hosts, the next step after all have arrived.
//
// Coarse mode: a step that repeats more than `max_step_repeats` times is
// played once with repeat x bytes per transfer, plus (repeat - 1) x its
// longest path latency. On an idle network this is exact for the ring
// (alpha-beta); under contention it lets flows share links over the whole
// group of steps instead of step by step.
//
// SimGrid allows one engine per process, so every run happens in a forked
// child process (about a millisecond and a half each) whose result comes back
// through a pipe; the caller's process never holds a SimGrid engine.
//
// Not supported yet (UserError): symmetric plans (ranks not materialized),
// server ranks, collectives other than all-reduce.
#pragma once

#include <string>
#include <vector>

#include "plan/plan.h"
#include "sim/engine.h"
#include "sim/network.h"

namespace dtsim::sim {

struct SimgridOptions {
  // Steps repeating more often are played in coarse mode (see above).
  // Default 64: a 32-rank ring (62 steps) still runs step by step.
  int max_step_repeats = 64;
  // Extra SimGrid configuration ("name:value"), applied after dtsim's
  // network-model settings and before the platform is built.
  std::vector<std::string> config;
  // SimGrid log threshold for all categories (quiet by default).
  std::string log_threshold = "critical";
};

// Runs `plan` with the task durations of `costs` (collective_ns is not used:
// collectives are simulated as flows) on the platform of `network`. Same
// result semantics as RunEngine: task start/end in ns, makespan; events
// counts SimGrid activities (executions and transfers). Throws UserError for
// plans it does not support and InternalError if SimGrid fails or the plan
// deadlocks.
EngineResult RunSimgridEngine(const plan::Plan& plan, const TaskCosts& costs,
                              const NetworkSpec& network, const SimgridOptions& options = {});

}  // namespace dtsim::sim
