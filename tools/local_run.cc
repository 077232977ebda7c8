#include "tools/local_run.h"

#include <algorithm>
#include <thread>

#include "common/error.h"
#include "common/units.h"
#include "config/transport.h"
#include "exec/netem/emulated_network.h"

namespace dtsim::tools {

// The share of a core each of `processes` ranks gets on this machine: 1
// unless they outnumber the cores.
double CoreShare(int processes) {
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores == 0 || static_cast<unsigned>(processes) <= cores) return 1;
  return static_cast<double>(cores) / processes;
}

// nullopt without --network. Throws UserError on a bad value, or on
// --latency without --network.
std::optional<NetworkSetting> ParseNetwork(const std::string& network, const std::string& latency) {
  if (network.empty()) {
    if (!latency.empty())
      throw UserError("--latency needs --network", "add e.g. --network 1Gbps");
    return std::nullopt;
  }
  NetworkSetting n;
  const SourceLocation where{"--network"};
  n.rate_bytes_per_s = ParseQuantity(network, Dimension::kBandwidth, where);
  if (!(n.rate_bytes_per_s > 0))
    throw UserError(where, "the emulated network needs a bandwidth above 0", "e.g. --network 1Gbps");
  if (!latency.empty())
    n.latency_s = ParseQuantity(latency, Dimension::kTime, SourceLocation{"--latency"});
  return n;
}

// The link every rank has in the emulated network (its own port on one
// switch, exec/netem/emulated_network.h): one TCP stream's goodput at the
// shaped rate, and the added latency. MTU: the veths' default.
hw::LinkSpec EmulatedLink(const NetworkSetting& n, const std::string& network) {
  constexpr int kMtu = exec::netem::EmulatedNetworkOptions{}.mtu;
  hw::LinkSpec link;
  link.name = "emulated-network";
  link.bw_bytes_per_s = exec::netem::TcpGoodput(n.rate_bytes_per_s, kMtu);
  link.latency_s = n.latency_s;
  link.source = "dtsim --network " + network;
  link.source += ": TCP goodput of tbf at " + FormatBandwidth(n.rate_bytes_per_s);
  return link;
}

// The prediction's links become the emulated one, between the devices of a
// node and between nodes; the device profile's compute numbers stay.
void UseEmulatedLink(const hw::LinkSpec& link, config::Scenario* s) {
  auto& links = s->cluster.custom_links;
  links.erase(std::remove_if(links.begin(), links.end(),
                             [&](const hw::LinkSpec& l) { return l.name == link.name; }),
              links.end());
  links.push_back(link);
  s->cluster.intra_node_link = link.name;
  s->cluster.network.link = link.name;
  // The ranks talk MPI over kernel TCP: mpi-tcp's cost per message, on top
  // of what ShareCores added; the link's bandwidth is already TCP's goodput
  // through tbf.
  config::TransportProfile tcp = *config::FindTransport("mpi-tcp");
  tcp.efficiency = 1;
  tcp.source += "; efficiency 1: the emulated link's bandwidth is already TCP goodput";
  for (config::TransportProfile* t :
       {&s->cluster.network.transport, &s->cluster.network.intra_node_transport}) {
    const double shared_cores = t->per_message_s;
    *t = tcp;
    t->per_message_s += shared_cores;
  }
}

// The profile measured one process on one core. When more processes than
// cores run (each MPI rank busy-polls while it waits, so all of them
// compete), a rank gets cores/processes of a core: the prediction's device
// runs at that share of the profiled compute rate and memory bandwidth. And
// a message waits until its receiver (or sender) gets its core back from
// the busy process it shares it with: the profile's scheduler handoff (one
// scheduler slice) is added to every message, as a transport's cost per
// message (config/transport.h).
void ShareCores(int processes, const config::DeviceProfile* profile, config::Scenario* s) {
  const double share = CoreShare(processes);
  if (share >= 1) return;
  if (s->workload.cost_table_data != nullptr) {
    // The table timed one process alone; each op takes 1 / share as long.
    auto table = std::make_shared<config::OpCostTable>(*s->workload.cost_table_data);
    config::ScaleOpCostTable(1 / share, table.get());
    s->workload.cost_table_data = std::move(table);
  }
  for (hw::DeviceSpec& d : s->cluster.custom_devices) {
    if (d.name != s->cluster.device) continue;
    for (double* rate : {&d.fp32_flop_per_s, &d.tf32_flop_per_s, &d.fp16_flop_per_s,
                         &d.bf16_flop_per_s, &d.memory_bw_bytes_per_s})
      *rate *= share;
  }
  const double handoff = profile != nullptr ? profile->scheduler_handoff_s : 0;
  for (config::TransportProfile* t :
       {&s->cluster.network.transport, &s->cluster.network.intra_node_transport}) {
    t->per_message_s += handoff;
    if (handoff > 0)
      t->source += "; plus the profile's scheduler handoff per message: " +
                   std::to_string(processes) + " ranks share the cores";
  }
}

void PredictAsLocalRun(const LocalRunOptions& local, int processes, config::Scenario* s) {
  std::optional<config::DeviceProfile> profile;
  if (!s->cluster.device_profile.empty())
    profile = config::LoadDeviceProfile(s->cluster.device_profile);
  ShareCores(processes * local.threads, profile ? &*profile : nullptr, s);
  if (const std::optional<NetworkSetting> net = ParseNetwork(local.network, local.latency))
    UseEmulatedLink(EmulatedLink(*net, local.network), s);
  // Collectives overlap the backward only on the comm thread, which only
  // data parallelism's gradient all-reduces use on CPU ranks
  // (ExecOptions::comm_thread; local SGD averages after the update on the
  // rank's own thread, parameter-server transfers are point to point).
  if (s->parallelism.strategy != config::Strategy::kData || processes < 2)
    s->parallelism.overlap = false;
}


}  // namespace dtsim::tools
