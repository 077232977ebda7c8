#include "exec/netem/emulated_network.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "common/error.h"

namespace dtsim::exec::netem {
namespace {

// Records every command; fails the one equal to `fail` (status 2).
class RecordingRunner final : public CommandRunner {
 public:
  CommandResult Run(const std::vector<std::string>& argv) override {
    commands.push_back(CommandLine(argv));
    CommandResult r;
    r.status = CommandLine(argv) == fail ? 2 : 0;
    if (r.status != 0) r.err = "RTNETLINK answers: File exists\n";
    return r;
  }
  std::vector<std::string> commands;
  std::string fail;
};

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(NetworkNames, CarryThePidAndFitLinuxInterfaceNames) {
  const NetworkNames n = NamesFor(1234);
  EXPECT_EQ(n.Namespace(0), "dtsim-1234-r0");
  EXPECT_EQ(n.bridge, "dts1234b");
  EXPECT_EQ(n.HostVeth(3), "dts1234v3");
  EXPECT_EQ(n.PeerVeth(3), "dts1234p3");
  // Linux interface names hold 15 characters (IFNAMSIZ 16 with the NUL):
  // the longest pid (< 10^7, pid_max is at most 2^22) and rank (< 1000).
  EXPECT_LE(NamesFor(9999999).HostVeth(252).size(), 15u);
  EXPECT_LE(NamesFor(9999999).PeerVeth(252).size(), 15u);
}

TEST(PickSubnet, StartsAtThePidAndSkipsSubnetsInUse) {
  // 5 mod 512 = 5 and 517 mod 512 = 5: the sixth /24 of 198.18.0.0/15.
  EXPECT_EQ(PickSubnet(5, "").Cidr(), "198.18.5.0/24");
  EXPECT_EQ(PickSubnet(517, "").Cidr(), "198.18.5.0/24");
  // 511 is the last /24: 198.(18 + 511/256).(511 % 256) = 198.19.255.
  EXPECT_EQ(PickSubnet(511, "").Address(2), "198.19.255.2");
  const std::string in_use =
      "7: dts9b    inet 198.18.5.1/24 scope global dts9b\\       valid_lft forever\n";
  EXPECT_EQ(PickSubnet(5, in_use).Cidr(), "198.18.6.0/24");
}

TEST(TbfArguments, RateInBitsBurstOfOneMillisecond) {
  // 1 Gb/s = 125e6 B/s: burst 1 ms = 125000 B (above the 32 KiB floor).
  EXPECT_EQ(TbfArguments(125e6), (std::vector<std::string>{"rate", "1000000000bit", "burst",
                                                            "125000", "latency", "20ms"}));
  // 100 Mb/s: 1 ms is 12500 B, below the floor of 32 KiB = 32768 B.
  EXPECT_EQ(TbfArguments(12.5e6)[3], "32768");
}

TEST(TcpGoodput, PayloadShareOfEachFrame) {
  // MTU 1500: 1448 payload bytes of 1514 counted ones (see the header).
  EXPECT_DOUBLE_EQ(TcpGoodput(125e6, 1500), 125e6 * 1448 / 1514);
}

TEST(SetupSteps, BridgeThenEachRanksNamespaceVethAddressAndShapers) {
  EmulatedNetworkOptions o;
  o.ranks = 2;
  const std::vector<SetupStep> steps = SetupSteps(o, NamesFor(42), Subnet{5}, false);
  std::vector<std::string> lines;
  for (const SetupStep& s : steps) lines.push_back(CommandLine(s.argv));
  EXPECT_EQ(lines[0], "ip link add dts42b type bridge");
  EXPECT_EQ(steps[0].creates, SetupStep::Creates::kBridge);
  EXPECT_EQ(lines[1], "ip addr add 198.18.5.1/24 dev dts42b");
  EXPECT_TRUE(Contains(lines, "ip netns add dtsim-42-r1"));
  EXPECT_TRUE(Contains(
      lines, "ip link add dts42v1 mtu 1500 type veth peer name dts42p1 mtu 1500"));
  EXPECT_TRUE(Contains(lines, "ip -n dtsim-42-r1 addr add 198.18.5.3/24 dev eth0"));
  EXPECT_TRUE(Contains(lines, "ip link set dts42v0 master dts42b"));
  // Both directions shaped: the bridge's port (downlink) and eth0 (uplink).
  EXPECT_TRUE(Contains(lines, "tc qdisc add dev dts42v0 root tbf rate 1000000000bit burst "
                              "125000 latency 20ms"));
  EXPECT_TRUE(Contains(lines, "tc -n dtsim-42-r0 qdisc add dev eth0 root tbf rate "
                              "1000000000bit burst 125000 latency 20ms"));
  EXPECT_TRUE(Contains(lines, "ip netns exec dtsim-42-r0 sysctl -q -w "
                              "net.ipv4.tcp_slow_start_after_idle=0"));
  // 3 bridge steps, then 12 per rank (namespace, veth, 7 ip, 2 tc, sysctl).
  EXPECT_EQ(steps.size(), 3u + 2u * 12u);
}

TEST(SetupSteps, NetemDelaysTheUplinkWithTbfUnderIt) {
  EmulatedNetworkOptions o;
  o.ranks = 1;
  o.latency_s = 50e-6;
  std::vector<std::string> lines;
  for (const SetupStep& s : SetupSteps(o, NamesFor(42), Subnet{5}, true))
    lines.push_back(CommandLine(s.argv));
  EXPECT_TRUE(Contains(lines, "tc -n dtsim-42-r0 qdisc add dev eth0 root handle 1: netem "
                              "delay 50us"));
  EXPECT_TRUE(Contains(lines, "tc -n dtsim-42-r0 qdisc add dev eth0 parent 1: handle 2: tbf "
                              "rate 1000000000bit burst 125000 latency 20ms"));
}

// A failing step: the error names it, and everything built so far goes,
// veths before namespaces before the bridge.
TEST(EmulatedNetwork, FailedStepRemovesWhatWasBuilt) {
  RecordingRunner runner;
  runner.fail = "tc qdisc add dev dts42v1 root tbf rate 1000000000bit burst 125000 latency 20ms";
  EmulatedNetworkOptions o;
  o.ranks = 3;
  o.owner_pid = 42;
  try {
    EmulatedNetwork net(o, runner);
    FAIL() << "no error";
  } catch (const NetworkCommandError& e) {
    EXPECT_NE(std::string(e.what()).find(runner.fail), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("File exists"), std::string::npos) << e.what();
  }
  const std::vector<std::string> tail(runner.commands.end() - 5, runner.commands.end());
  EXPECT_EQ(tail, (std::vector<std::string>{
                      "ip link del dts42v0", "ip link del dts42v1", "ip netns del dtsim-42-r0",
                      "ip netns del dtsim-42-r1", "ip link del dts42b"}));
  EXPECT_FALSE(Contains(runner.commands, "ip netns add dtsim-42-r2"));  // stopped at rank 1
}

TEST(EmulatedNetwork, DestructorRemovesOnceAndRemoveIsIdempotent) {
  RecordingRunner runner;
  EmulatedNetworkOptions o;
  o.ranks = 1;
  o.owner_pid = 42;
  {
    EmulatedNetwork net(o, runner);
    EXPECT_FALSE(net.kernel_latency());  // no latency asked for
    EXPECT_EQ(net.RankAddress(0), net.subnet().Address(2));
    EXPECT_TRUE(net.Remove().empty());
  }
  EXPECT_EQ(std::count(runner.commands.begin(), runner.commands.end(), "ip link del dts42b"), 1);
}

TEST(EmulatedNetwork, NetemProbeDecidesWhereLatencyGoes) {
  RecordingRunner runner;
  runner.fail = "tc qdisc add dev dts42b root netem delay 1us";  // kernel without sch_netem
  EmulatedNetworkOptions o;
  o.ranks = 1;
  o.owner_pid = 42;
  o.latency_s = 1e-4;
  EmulatedNetwork net(o, runner);
  EXPECT_FALSE(net.kernel_latency());
  for (const std::string& c : runner.commands)
    EXPECT_EQ(c.find("delay 100us"), std::string::npos) << c;
}

TEST(RemoveStaleNetworks, RemovesOnlyDeadOwners) {
  class Lister final : public CommandRunner {
   public:
    CommandResult Run(const std::vector<std::string>& argv) override {
      const std::string line = CommandLine(argv);
      commands.push_back(line);
      CommandResult r;
      r.status = 0;
      if (line == "ip netns list") r.out = "dtsim-7-r0 (id: 3)\ndtsim-8-r0 (id: 4)\nother\n";
      if (line == "ip -o link show type bridge")
        r.out = "9: dts7b: <BROADCAST> mtu 1500\n10: dts8b: <BROADCAST> mtu 1500\n";
      return r;
    }
    std::vector<std::string> commands;
  } runner;
  const auto removed = RemoveStaleNetworks(runner, [](long pid) { return pid == 8; });
  EXPECT_EQ(removed, (std::vector<std::string>{"dtsim-7-r0", "dts7b"}));
  EXPECT_TRUE(Contains(runner.commands, "ip link del dts7v0"));
  EXPECT_FALSE(Contains(runner.commands, "ip netns del dtsim-8-r0"));
  EXPECT_FALSE(Contains(runner.commands, "ip link del dts8b"));
}

TEST(RemoveStaleNetworks, KeepsNetworksThatOrphanedProcessesStillUse) {
  // Issue 10 item 16: run 7's owner was killed, but its ranks still live in
  // dtsim-7-r1; run 9's owner is gone and its namespace is empty.
  class Lister final : public CommandRunner {
   public:
    CommandResult Run(const std::vector<std::string>& argv) override {
      const std::string line = CommandLine(argv);
      commands.push_back(line);
      CommandResult r;
      r.status = 0;
      if (line == "ip netns list") r.out = "dtsim-7-r0\ndtsim-7-r1 (id: 5)\ndtsim-9-r0\n";
      if (line == "ip netns pids dtsim-7-r1") r.out = "4242\n";
      if (line == "ip -o link show type bridge")
        r.out = "9: dts7b: <BROADCAST> mtu 1500\n10: dts9b: <BROADCAST> mtu 1500\n";
      return r;
    }
    std::vector<std::string> commands;
  } runner;
  const auto removed = RemoveStaleNetworks(runner, [](long) { return false; });
  EXPECT_EQ(removed, (std::vector<std::string>{"dtsim-9-r0", "dts9b"}));
  for (const char* kept : {"ip netns del dtsim-7-r0", "ip netns del dtsim-7-r1",
                           "ip link del dts7b", "ip link del dts7v0"})
    EXPECT_FALSE(Contains(runner.commands, kept)) << kept;
}

// The real thing: needs root and network namespaces.
bool CanEmulate(CommandRunner& runner) {
  if (::geteuid() != 0) return false;
  const std::string probe = "dtsim-probe-" + std::to_string(::getpid());
  if (runner.Run({"ip", "netns", "add", probe}).status != 0) return false;
  runner.Run({"ip", "netns", "del", probe});
  // A container may allow namespaces but not veth links or tbf: try both.
  const std::string a = "dtpa" + std::to_string(::getpid() % 100000);
  const std::string b = "dtpb" + std::to_string(::getpid() % 100000);
  if (runner.Run({"ip", "link", "add", a, "type", "veth", "peer", "name", b}).status != 0)
    return false;
  const bool tbf = runner.Run({"tc", "qdisc", "add", "dev", a, "root", "tbf", "rate", "1mbit",
                               "burst", "32kbit", "latency", "50ms"})
                       .status == 0;
  runner.Run({"ip", "link", "del", a});
  return tbf;
}

TEST(EmulatedNetworkReal, BuildsTwoRanksAndLeavesNothingBehind) {
  SystemCommandRunner runner;
  if (!CanEmulate(runner)) GTEST_SKIP() << "needs root, network namespaces and tc";
  EmulatedNetworkOptions o;
  o.ranks = 2;
  o.rate_bytes_per_s = 12.5e6;  // 100 Mb/s
  NetworkNames names;
  {
    EmulatedNetwork net(o, runner);
    names = net.names();
    const std::string list = RunChecked(runner, {"ip", "netns", "list"}).out;
    EXPECT_NE(list.find(names.Namespace(0)), std::string::npos) << list;
    EXPECT_NE(list.find(names.Namespace(1)), std::string::npos) << list;
    const std::string addr =
        RunChecked(runner, {"ip", "-n", names.Namespace(1), "-4", "addr", "show", "eth0"}).out;
    EXPECT_NE(addr.find(net.RankAddress(1)), std::string::npos) << addr;
    const std::string up =
        RunChecked(runner, {"tc", "-n", names.Namespace(1), "qdisc", "show", "dev", "eth0"}).out;
    EXPECT_NE(up.find("tbf"), std::string::npos) << up;
    EXPECT_NE(up.find("100Mbit"), std::string::npos) << up;
    const std::string down =
        RunChecked(runner, {"tc", "qdisc", "show", "dev", names.HostVeth(1)}).out;
    EXPECT_NE(down.find("tbf"), std::string::npos) << down;
  }
  const std::string list = RunChecked(runner, {"ip", "netns", "list"}).out;
  EXPECT_EQ(list.find(names.namespace_prefix), std::string::npos) << list;
  EXPECT_NE(runner.Run({"ip", "link", "show", names.bridge}).status, 0);
  EXPECT_NE(runner.Run({"ip", "link", "show", names.HostVeth(0)}).status, 0);
}

TEST(EmulatedNetworkReal, StaleNetworkOfADeadPidIsRemoved) {
  SystemCommandRunner runner;
  if (!CanEmulate(runner)) GTEST_SKIP() << "needs root, network namespaces and tc";
  // A pid that is surely dead: a child that has exited and been reaped.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  EmulatedNetworkOptions o;
  o.ranks = 1;
  o.owner_pid = child;
  auto* leaked = new EmulatedNetwork(o, runner);  // as if its owner had been killed
  const NetworkNames names = leaked->names();
  const auto removed =
      RemoveStaleNetworks(runner, [child](long pid) { return pid != child; });
  EXPECT_TRUE(Contains(removed, names.Namespace(0)));
  EXPECT_TRUE(Contains(removed, names.bridge));
  EXPECT_EQ(RunChecked(runner, {"ip", "netns", "list"}).out.find(names.namespace_prefix),
            std::string::npos);
  EXPECT_NE(runner.Run({"ip", "link", "show", names.bridge}).status, 0);
  // Its owner is gone too: deleting again only reports what no longer exists.
  EXPECT_EQ(leaked->Remove().size(), 3u);  // veth, namespace, bridge
  delete leaked;
}

}  // namespace
}  // namespace dtsim::exec::netem
