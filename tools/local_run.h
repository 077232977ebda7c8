// How `dtsim exec` runs a scenario on this machine, as the simulator must
// see it to predict the run (`dtsim validate`, `dtsim tta --local`): ranks
// that outnumber the cores share them, and with --network every rank talks
// over its own emulated link (exec/netem/emulated_network.h).
#pragma once

#include <optional>
#include <string>

#include "config/device_profile.h"
#include "config/scenario.h"
#include "hw/catalog.h"

namespace dtsim::tools {

// The share of a core each of `processes` ranks gets on this machine: 1
// unless they outnumber the cores.
double CoreShare(int processes);

// --network and --latency, parsed.
struct NetworkSetting {
  double rate_bytes_per_s = 0;  // tbf rate, each direction of each rank's link
  double latency_s = 0;         // one-way, added to every message
};
// nullopt without a network. Throws UserError on a bad value, or on a
// latency without a network.
std::optional<NetworkSetting> ParseNetwork(const std::string& network, const std::string& latency);
// The link every rank has in the emulated network (its own port on one
// switch): one TCP stream's goodput at the shaped rate, and the added
// latency; `network` (the option's text) names its source.
hw::LinkSpec EmulatedLink(const NetworkSetting& n, const std::string& network);
// The prediction's links become `link`, between the devices of a node and
// between nodes, with MPI over TCP's transport; the device profile's compute
// numbers stay.
void UseEmulatedLink(const hw::LinkSpec& link, config::Scenario* s);
// The profile measured one process on one core; with `processes` ranks
// sharing the cores, each runs at its share of the profiled rates and every
// message waits the profile's scheduler handoff (null profile: none).
void ShareCores(int processes, const config::DeviceProfile* profile, config::Scenario* s);

// What `dtsim exec` on this machine gives a scenario's run.
struct LocalRunOptions {
  int threads = 1;      // kernel threads per rank
  std::string network;  // "" = shared memory; else --network's rate ("100Mbps")
  std::string latency;  // --latency with network; "" = 0
};
// Makes `s` (its device profile already applied, cluster.device_profile)
// predict `dtsim exec` running it with `processes` ranks here, as `dtsim
// validate` predicts it: each rank's share of the cores, the emulated link
// and its TCP transport, and overlap only where exec overlaps. Throws
// UserError for a bad network or latency.
void PredictAsLocalRun(const LocalRunOptions& local, int processes, config::Scenario* s);

}  // namespace dtsim::tools
