// The SimGrid engine: runs a plan on SimGrid's flow-level network model
// (S4U API), so that flows sharing a link share its bandwidth as they come
// and go, where the analytic engine (engine.h) prices each collective alone.
//
// Platform, built in code from the NetworkSpec (the same links as
// network.h):
//   - one host per rank (workers, then parameter servers: the NetworkSpec's
//     extra endpoints) at 1e9 flop/s per core, so that a compute task of
//     `task_ns` nanoseconds (TaskCosts, the plan's one pricing) executes
//     task_ns flops; one core per stream, so that a rank's two streams do
//     not share a core (they do not in the analytic engine);
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
// Server ranks' streams take their tasks in the order they become ready
// (a server serves whichever worker comes first), as in the analytic
// engine; their transfers share links as flows, where the analytic engine
// reserves each link first come, first served (Network::ReserveTransfer).
//
// Stragglers (SimgridOptions::stragglers, the analytic engine's
// StragglerModel) map onto SimGrid as:
//   - slow_devices' fixed factor f: the rank's host runs at 1e9 / f flop/s;
//   - interference windows [k P, k P + D) at slowdown s: a speed profile on
//     the rank's host, 1/s from k P and 1 from k P + D, repeating every P
//     (a constant speed / s when D == P);
//   - the lognormal draw per (rank, iteration): each compute task executes
//     task_ns x exp(sigma z) flops, z the same counter-based draw as the
//     analytic engine's (StragglerModel::ComputeFactor / FixedFactor);
//   - the exponential or stall delay per (rank, iteration): a sleep of
//     ExtraDelayNs before the rank's first compute task of the iteration, as
//     the analytic engine adds it (wall time: interference does not stretch
//     it).
// Link events (config::LinkEvent, SimgridLinkEvents) map onto SimGrid as
// bandwidth profiles of the event's links, both directions: a node's NICs
// (nic_up/nic_down: one link of nics_per_node x the NIC bandwidth), a
// device's port (dev_up/dev_down) or a leaf's uplinks (leaf_up/leaf_down):
//   - bandwidth f: the links run at f x their bandwidth from `at` to
//     `at + duration` (two events on one link: the lower holds);
//   - down, when_down: wait: bandwidth kDownBandwidthFraction of nominal,
//     so flows crossing the link stall and resume when it comes back.
//     SimGrid's state profile (link off) would fail those flows instead
//     (a NetworkFailureException in the sender), which no plan handles;
//   - down, when_down: reroute: the node's other NICs carry its traffic,
//     (nics - 1) / nics of the bandwidth, as the analytic engine prices it.
// Failures (sim/failures.h) are not part of either engine: they are
// simulated afterwards over the measured step time, whichever engine gave it.
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
// collectives other than all-reduce.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "plan/plan.h"
#include "sim/engine/engine.h"
#include "sim/network/network.h"

namespace dtsim::sim {

class StragglerModel;

// Bandwidth left to a link that is down and waited for: flows stall (a
// 10 s outage moves 1e-8 s worth of traffic).
inline constexpr double kDownBandwidthFraction = 1e-9;

// One link event as SimGrid applies it (see above).
struct SimgridLinkEvent {
  enum class Link : std::uint8_t { kNic, kDevice, kLeaf };
  Link link = Link::kNic;
  int index = 0;       // node (kNic), rank (kDevice) or leaf (kLeaf)
  double begin_s = 0;  // simulated seconds
  double end_s = -1;   // < 0: until the end of the run
  double factor = 1;   // bandwidth kept, of nominal, both directions, in (0, 1]
};

// `events` (checked against `cluster` by the loader) as SimGrid applies
// them.
std::vector<SimgridLinkEvent> SimgridLinkEvents(const std::vector<config::LinkEvent>& events,
                                                const config::ClusterConfig& cluster);

struct SimgridOptions {
  // Steps repeating more often are played in coarse mode (see above).
  // Default 64: a 32-rank ring (62 steps) still runs step by step.
  int max_step_repeats = 64;
  // Extra SimGrid configuration ("name:value"), applied after dtsim's
  // network-model settings and before the platform is built.
  std::vector<std::string> config;
  // SimGrid log threshold for all categories (quiet by default).
  std::string log_threshold = "critical";
  // Stragglers of ranks [0, stragglers->num_ranks()) (the workers; servers
  // beyond them run at full speed), mapped as described above. nullptr =
  // none. Must outlive the call.
  const StragglerModel* stragglers = nullptr;
  // Bandwidth profiles of links (see above); empty = nominal throughout.
  std::vector<SimgridLinkEvent> link_events;
};

// Runs `plan` with the task durations of `costs` (collective_ns is not used:
// collectives are simulated as flows) on the platform of `network`, which
// must have one endpoint per plan rank (parameter servers as
// extra_endpoint_nodes, as the simulator adds them). Same
// result semantics as RunEngine: task start/end in ns, makespan; events
// counts SimGrid activities (executions and transfers). Throws UserError for
// plans it does not support and InternalError if SimGrid fails or the plan
// deadlocks.
EngineResult RunSimgridEngine(const plan::Plan& plan, const TaskCosts& costs,
                              const NetworkSpec& network, const SimgridOptions& options = {});

}  // namespace dtsim::sim
