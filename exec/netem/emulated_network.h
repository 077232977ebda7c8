// An emulated cluster network on one Linux machine: every rank of a run in
// its own network namespace, all of them on one bridge (the switch), each
// rank's link shaped to a chosen bandwidth in both directions with tc's
// token-bucket filter, and optionally delayed with netem.
//
//   root namespace                         namespace dtsim-<pid>-r<i>
//   +----------------------------+         +-------------------------+
//   | bridge dts<pid>b           |  veth   |                         |
//   | 198.18.x.1/24      port i -+---------+- eth0  198.18.x.<i+2>/24|
//   |                 dts<pid>v<i>         |  (was dts<pid>p<i>)     |
//   +----------------------------+         +-------------------------+
//     tbf on dts<pid>v<i> egress:            tbf (under netem, when asked
//     the rank's downlink                    for and available) on eth0
//                                            egress: the rank's uplink
//
// Like a cluster of hosts on one non-blocking Ethernet switch: every rank
// has its own full-duplex port at the rate. Subnets come from 198.18.0.0/15
// (RFC 2544, set aside for benchmarking networks, so it does not clash with
// a machine's real networks): one /24 per run, the first free one from
// (pid mod 512). Names carry the owner's pid, so concurrent runs do not
// collide, and a later run can tell leftovers of a dead one
// (RemoveStaleNetworks).
//
// Requires root (CAP_NET_ADMIN and CAP_SYS_ADMIN), iproute2 (`ip`, `tc`)
// and the sch_tbf qdisc; sch_netem only for latency (without it the
// latency is left to the transport: kernel_latency() is false).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "exec/netem/command_runner.h"

namespace dtsim::exec::netem {

struct EmulatedNetworkOptions {
  int ranks = 2;                    // namespaces; 1..253 (one /24)
  double rate_bytes_per_s = 125e6;  // tbf rate of each direction of each rank's link
                                    // (default 1 Gb/s); > 0
  double latency_s = 0;             // one-way latency added by netem on each rank's
                                    // uplink; 0 = none
  int mtu = 1500;                   // of every veth, bytes (Ethernet's default)
  // Linux restarts a TCP connection's congestion window after it idles for
  // a retransmission timeout (net.ipv4.tcp_slow_start_after_idle = 1),
  // which makes every gradient exchange of a training step start slowly;
  // clusters tuned for MPI turn it off. false: set it to 0 in each
  // namespace.
  bool slow_start_after_idle = false;
  long owner_pid = 0;               // pid the names carry; 0 = this process
};

// The names of one run's network objects.
struct NetworkNames {
  long pid = 0;
  std::string namespace_prefix;  // "dtsim-<pid>-r": rank i's namespace is prefix + i
  std::string bridge;            // "dts<pid>b"

  std::string Namespace(int rank) const;  // "dtsim-<pid>-r<rank>"
  std::string HostVeth(int rank) const;   // "dts<pid>v<rank>": the bridge's port
  std::string PeerVeth(int rank) const;   // "dts<pid>p<rank>", renamed eth0 in the namespace
};
// Names for a run owned by `pid`. Interface names stay within Linux's 15
// characters for pids below 10^7 and ranks below 1000.
NetworkNames NamesFor(long pid);

// A /24 of 198.18.0.0/15: index in [0, 512) is the third and fourth octet's
// position, "198.(18 + index / 256).(index % 256).0/24".
struct Subnet {
  int index = 0;
  std::string Cidr() const;              // "198.18.5.0/24"
  std::string Address(int host) const;   // "198.18.5.<host>"
};
// The first /24 from (pid mod 512) on, wrapping, that no address in
// `ip_addr_output` (the text of `ip -4 -o addr show`) lies in. Throws
// NetworkCommandError when all 512 are in use.
Subnet PickSubnet(long pid, const std::string& ip_addr_output);

// The tbf parameters for a rate: burst = 1 ms at the rate, at least 32 KiB
// (a bucket smaller than a jiffy's worth of bytes cannot reach the rate, and
// veths hand tbf segments of up to 64 KiB, which it splits when larger than
// the bucket); the queue holds 20 ms at the rate before dropping (a deeper
// queue than a switch's, so that TCP does not lose packets to the shaper).
// As `tc` arguments after "tbf": {"rate", "<bits>bit", "burst", "<bytes>",
// "latency", "20ms"}.
std::vector<std::string> TbfArguments(double rate_bytes_per_s);

// One command of the setup and what it creates (which Remove() must undo).
struct SetupStep {
  enum class Creates { kNothing, kBridge, kNamespace, kVeth };
  std::vector<std::string> argv;
  Creates creates = Creates::kNothing;
  int rank = -1;  // the rank it is for; -1 = the bridge
};
// The commands that build the network, in order: the bridge's (rank -1),
// then each rank's. `with_netem`: each uplink gets netem (handle 1:) with
// the tbf under it; else the tbf alone.
std::vector<SetupStep> SetupSteps(const EmulatedNetworkOptions& o, const NetworkNames& names,
                                  const Subnet& subnet, bool with_netem);

// The goodput of one TCP stream through a link tbf shapes to `rate`: tbf
// counts each packet from its Ethernet header (MTU + 14 bytes), of which
// MTU - 52 bytes are payload (IPv4 20, TCP 20, timestamp option 12). For
// MTU 1500: 1448 / 1514 = 95.6% of the rate.
double TcpGoodput(double rate_bytes_per_s, int mtu);

class EmulatedNetwork {
 public:
  // Builds the network. Throws UserError when this process cannot (not
  // permitted, no `ip` or `tc`, no namespace support; the message says
  // what is missing) and NetworkCommandError naming the command when a later step
  // fails; either way what was built is removed first. `runner` must
  // outlive this object.
  EmulatedNetwork(const EmulatedNetworkOptions& options, CommandRunner& runner);
  // Remove(); failures are dropped (call Remove() to see them).
  ~EmulatedNetwork();
  EmulatedNetwork(const EmulatedNetwork&) = delete;
  EmulatedNetwork& operator=(const EmulatedNetwork&) = delete;

  // Deletes every namespace, veth and the bridge this object made (the
  // veths first: that removes both ends at once, while a namespace that
  // processes still use lingers after `ip netns del`). Idempotent. Returns
  // a description of each deletion that failed; empty when all went.
  std::vector<std::string> Remove();

  const EmulatedNetworkOptions& options() const { return options_; }
  const NetworkNames& names() const { return names_; }
  const Subnet& subnet() const { return subnet_; }
  std::string RankAddress(int rank) const { return subnet_.Address(rank + 2); }
  std::string HostAddress() const { return subnet_.Address(1); }  // the bridge's
  // True when netem adds options().latency_s in the kernel; false when the
  // kernel lacks sch_netem (or no latency was asked for): a transport that
  // wants the latency adds it itself.
  bool kernel_latency() const { return kernel_latency_; }

 private:
  void Build();

  EmulatedNetworkOptions options_;
  CommandRunner& runner_;
  NetworkNames names_;
  Subnet subnet_;
  bool kernel_latency_ = false;
  // What exists now, for Remove().
  bool bridge_ = false;
  std::vector<int> namespaces_;  // ranks whose namespace exists
  std::vector<int> veths_;       // ranks whose veth pair exists
};

// Deletes the namespaces, veths and bridges of runs whose owner pid is no
// longer alive (`alive(pid)`, default: /proc/<pid> exists), as left by a
// run killed with SIGKILL, unless a namespace of that run still holds
// processes (`ip netns pids`: ranks or mpirun that outlived the owner),
// whose network would vanish under them. Returns the names removed.
// Failures to delete are ignored (another run may be removing the same
// leftovers).
std::vector<std::string> RemoveStaleNetworks(CommandRunner& runner,
                                             const std::function<bool(long)>& alive = {});

}  // namespace dtsim::exec::netem
