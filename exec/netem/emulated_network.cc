#include "exec/netem/emulated_network.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

#include "common/error.h"

namespace dtsim::exec::netem {
namespace {

// Joins pieces of text (a chain of std::string operator+ from a literal
// trips GCC 12's false -Wrestrict).
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s += p;
  return s;
}

using Creates = SetupStep::Creates;

constexpr int kSubnets = 512;         // /24s in 198.18.0.0/15
constexpr int kMaxRanks = 253;        // hosts 2..254 of a /24 (1 is the bridge)
constexpr double kBurstSeconds = 1e-3;  // tbf bucket: 1 ms at the rate
constexpr double kMinBurstBytes = 32 * 1024;
constexpr const char* kQueueLatency = "20ms";  // tbf queue before drops

std::string Str(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

bool ProcessAlive(long pid) { return std::filesystem::exists(Cat({"/proc/", std::to_string(pid)})); }

}  // namespace

std::string NetworkNames::Namespace(int rank) const {
  return namespace_prefix + std::to_string(rank);
}
std::string NetworkNames::HostVeth(int rank) const {
  return Cat({"dts", std::to_string(pid), "v", std::to_string(rank)});
}
std::string NetworkNames::PeerVeth(int rank) const {
  return Cat({"dts", std::to_string(pid), "p", std::to_string(rank)});
}

NetworkNames NamesFor(long pid) {
  NetworkNames n;
  n.pid = pid;
  n.namespace_prefix = Cat({"dtsim-", std::to_string(pid), "-r"});
  n.bridge = Cat({"dts", std::to_string(pid), "b"});
  return n;
}

std::string Subnet::Cidr() const { return Cat({Address(0), "/24"}); }

std::string Subnet::Address(int host) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "198.%d.%d.%d", 18 + index / 256, index % 256, host);
  return buf;
}

Subnet PickSubnet(long pid, const std::string& ip_addr_output) {
  for (int k = 0; k < kSubnets; ++k) {
    Subnet s{static_cast<int>((pid + k) % kSubnets)};
    // "inet 198.18.5.1/24" in any line: that /24 is taken.
    const std::string network = s.Address(0);  // "198.18.5.0"
    const std::string prefix = Cat({"inet ", std::string_view(network).substr(0, network.size() - 1)});
    if (ip_addr_output.find(prefix) == std::string::npos) return s;
  }
  throw NetworkCommandError("every /24 of 198.18.0.0/15 is in use on this machine");
}

std::vector<std::string> TbfArguments(double rate_bytes_per_s) {
  DTSIM_CHECK(rate_bytes_per_s > 0, "tbf rate must be positive");
  const double burst = std::max(kMinBurstBytes, rate_bytes_per_s * kBurstSeconds);
  return {"rate", Cat({Str(std::round(rate_bytes_per_s * 8)), "bit"}), "burst",
          Str(std::ceil(burst)), "latency", kQueueLatency};
}

double TcpGoodput(double rate_bytes_per_s, int mtu) {
  DTSIM_CHECK(mtu > 52, "MTU too small for TCP/IPv4 with timestamps");
  return rate_bytes_per_s * (mtu - 52) / (mtu + 14);
}

std::vector<SetupStep> SetupSteps(const EmulatedNetworkOptions& o, const NetworkNames& names,
                                  const Subnet& subnet, bool with_netem) {
  DTSIM_CHECK(o.ranks >= 1 && o.ranks <= kMaxRanks, "ranks out of range for one /24");
  const std::string br = names.bridge;
  const std::string mtu = std::to_string(o.mtu);
  std::vector<SetupStep> steps = {
      {{"ip", "link", "add", br, "type", "bridge"}, Creates::kBridge, -1},
      {{"ip", "addr", "add", Cat({subnet.Address(1), "/24"}), "dev", br}, Creates::kNothing, -1},
      {{"ip", "link", "set", br, "up"}, Creates::kNothing, -1}};
  const std::vector<std::string> tbf = TbfArguments(o.rate_bytes_per_s);
  for (int r = 0; r < o.ranks; ++r) {
    const std::string ns = names.Namespace(r), host = names.HostVeth(r),
                      peer = names.PeerVeth(r);
    auto add = [&](std::vector<std::string> argv, Creates c = Creates::kNothing) {
      steps.push_back({std::move(argv), c, r});
    };
    add({"ip", "netns", "add", ns}, Creates::kNamespace);
    add({"ip", "link", "add", host, "mtu", mtu, "type", "veth", "peer", "name", peer, "mtu", mtu},
        Creates::kVeth);
    add({"ip", "link", "set", peer, "netns", ns});
    add({"ip", "-n", ns, "link", "set", peer, "name", "eth0"});
    add({"ip", "-n", ns, "addr", "add", Cat({subnet.Address(r + 2), "/24"}), "dev", "eth0"});
    add({"ip", "-n", ns, "link", "set", "eth0", "up"});
    add({"ip", "-n", ns, "link", "set", "lo", "up"});
    add({"ip", "link", "set", host, "master", br});
    add({"ip", "link", "set", host, "up"});
    // Downlink: what the bridge sends to the rank.
    std::vector<std::string> down = {"tc", "qdisc", "add", "dev", host, "root", "tbf"};
    down.insert(down.end(), tbf.begin(), tbf.end());
    add(down);
    // Uplink: what the rank sends, delayed first when netem is there.
    std::vector<std::string> up = {"tc", "-n", ns, "qdisc", "add", "dev", "eth0"};
    if (with_netem) {
      std::vector<std::string> netem = up;
      netem.insert(netem.end(), {"root", "handle", "1:", "netem", "delay",
                                 Cat({Str(o.latency_s * 1e6), "us"})});
      add(netem);
      up.insert(up.end(), {"parent", "1:", "handle", "2:", "tbf"});
    } else {
      up.insert(up.end(), {"root", "tbf"});
    }
    up.insert(up.end(), tbf.begin(), tbf.end());
    add(up);
    if (!o.slow_start_after_idle)
      add({"ip", "netns", "exec", ns, "sysctl", "-q", "-w",
           "net.ipv4.tcp_slow_start_after_idle=0"});
  }
  return steps;
}

EmulatedNetwork::EmulatedNetwork(const EmulatedNetworkOptions& options, CommandRunner& runner)
    : options_(options), runner_(runner) {
  if (options_.ranks < 1 || options_.ranks > kMaxRanks)
    throw UserError(Cat({"an emulated network holds 1 to ", std::to_string(kMaxRanks),
                         " ranks, not ", std::to_string(options_.ranks)}));
  if (!(options_.rate_bytes_per_s > 0) || !std::isfinite(options_.rate_bytes_per_s))
    throw UserError("the emulated network's bandwidth must be positive");
  if (!(options_.latency_s >= 0) || !std::isfinite(options_.latency_s))
    throw UserError("the emulated network's latency must be >= 0");
  names_ = NamesFor(options_.owner_pid != 0 ? options_.owner_pid : static_cast<long>(::getpid()));
  try {
    Build();
  } catch (...) {
    Remove();
    throw;
  }
}

EmulatedNetwork::~EmulatedNetwork() { Remove(); }

void EmulatedNetwork::Build() {
  const CommandResult addrs = runner_.Run({"ip", "-4", "-o", "addr", "show"});
  if (addrs.status == 127)
    throw UserError("the 'ip' tool is missing: an emulated network needs iproute2",
                    "install iproute2 (ip and tc)");
  subnet_ = PickSubnet(names_.pid, addrs.out);

  auto run = [this](const SetupStep& step) {
    const CommandResult r = runner_.Run(step.argv);
    if (r.status == 127)
      throw UserError(Cat({"'", step.argv[0], "' is missing: an emulated network needs iproute2"}),
                      "install iproute2 (ip and tc)");
    if (r.status != 0 && step.creates == Creates::kBridge &&
        r.err.find("Operation not permitted") != std::string::npos)
      throw UserError(Cat({"an emulated network needs root ('", CommandLine(step.argv), "': ",
                           r.err, ")"}),
                      "run as root (CAP_NET_ADMIN and CAP_SYS_ADMIN), or leave out --network");
    if (r.status != 0 && step.creates == Creates::kNamespace && namespaces_.empty())
      throw UserError(Cat({"cannot create a network namespace ('", CommandLine(step.argv),
                           "': ", r.err, ")"}),
                      "the kernel needs network namespaces and this process CAP_SYS_ADMIN");
    if (r.status != 0) throw CommandFailed(step.argv, r);
    switch (step.creates) {
      case Creates::kBridge: bridge_ = true; break;
      case Creates::kNamespace: namespaces_.push_back(step.rank); break;
      case Creates::kVeth: veths_.push_back(step.rank); break;
      case Creates::kNothing: break;
    }
  };
  for (const SetupStep& s : SetupSteps(options_, names_, subnet_, false))
    if (s.rank < 0) run(s);
  if (options_.latency_s > 0) {
    // Is sch_netem there? Try it on the bridge, then take it off again.
    const CommandResult probe = runner_.Run(
        {"tc", "qdisc", "add", "dev", names_.bridge, "root", "netem", "delay", "1us"});
    kernel_latency_ = probe.status == 0;
    if (kernel_latency_) RunChecked(runner_, {"tc", "qdisc", "del", "dev", names_.bridge, "root"});
  }
  for (const SetupStep& s : SetupSteps(options_, names_, subnet_, kernel_latency_))
    if (s.rank >= 0) run(s);
}

std::vector<std::string> EmulatedNetwork::Remove() {
  std::vector<std::string> problems;
  auto del = [&](const std::vector<std::string>& argv) {
    const CommandResult r = runner_.Run(argv);
    if (r.status != 0) problems.push_back(Cat({CommandLine(argv), ": ", r.err}));
  };
  for (int r : veths_) del({"ip", "link", "del", names_.HostVeth(r)});
  veths_.clear();
  for (int r : namespaces_) del({"ip", "netns", "del", names_.Namespace(r)});
  namespaces_.clear();
  if (bridge_) del({"ip", "link", "del", names_.bridge});
  bridge_ = false;
  return problems;
}

std::vector<std::string> RemoveStaleNetworks(CommandRunner& runner,
                                             const std::function<bool(long)>& alive) {
  const auto is_alive = alive ? alive : ProcessAlive;
  std::vector<std::string> removed;
  // `ip netns list`: "dtsim-123-r0 (id: 4)" or "dtsim-123-r0".
  const std::regex ns_re(R"(^(dtsim-(\d+)-r(\d+))\b)");
  struct Stale {
    long pid;
    int rank;
    std::string name;
  };
  std::vector<Stale> candidates;
  // Runs whose owner is gone but whose namespaces still hold processes (its
  // mpirun or ranks, orphaned when the owner was killed): in use, kept.
  std::set<long> in_use;
  std::istringstream nslist(runner.Run({"ip", "netns", "list"}).out);
  for (std::string line; std::getline(nslist, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, ns_re)) continue;
    const long pid = std::stol(m[2]);
    if (is_alive(pid)) continue;
    const CommandResult pids = runner.Run({"ip", "netns", "pids", m[1]});
    if (pids.out.find_first_not_of(" \t\n") != std::string::npos) in_use.insert(pid);
    candidates.push_back({pid, std::stoi(m[3]), m[1]});
  }
  for (const Stale& c : candidates) {
    if (in_use.count(c.pid)) continue;
    runner.Run({"ip", "link", "del", NamesFor(c.pid).HostVeth(c.rank)});
    if (runner.Run({"ip", "netns", "del", c.name}).status == 0) removed.push_back(c.name);
  }
  // `ip -o link show type bridge`: "7: dts123b: <BROADCAST,..." (also the
  // host veths, as "8: dts123v0@if2: ..." with `type veth`).
  const std::regex link_re(R"(^\d+:\s+(dts(\d+)[bv]\d*)[@:])");
  for (const char* type : {"veth", "bridge"}) {
    std::istringstream links(runner.Run({"ip", "-o", "link", "show", "type", type}).out);
    for (std::string line; std::getline(links, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, link_re)) continue;
      const long pid = std::stol(m[2]);
      if (is_alive(pid) || in_use.count(pid)) continue;
      if (runner.Run({"ip", "link", "del", m[1]}).status == 0) removed.push_back(m[1]);
    }
  }
  return removed;
}

}  // namespace dtsim::exec::netem
