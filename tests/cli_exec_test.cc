// End-to-end: the dtsim binary running scenarios for real: exec over MPI ranks, the emulated network, interrupts, memory refusals, checkpoints.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "config/device_profile.h"
#include "models/onnx_model.pb.h"
#include "models/onnx_test_models.h"
#include "plan/chakra_test_traces.h"
#include "tests/cli_fixture.h"
#include "tests/dtsim_runner.h"

namespace {
namespace fs = std::filesystem;

using dtsim::test::Cli;
using dtsim::test::Dtsim;
using dtsim::test::DtsimWithin;
using dtsim::test::Result;
using dtsim::test::Slurp;
using dtsim::test::WriteTinyCnn;

// Root with network namespaces and tc: what the emulated network needs.
bool CanEmulateNetwork() {
  if (::geteuid() != 0) return false;
  const std::string ns = "dtsim-cli-probe-" + std::to_string(::getpid());
  if (std::system(("ip netns add " + ns + " 2>/dev/null").c_str()) != 0) return false;
  std::system(("ip netns del " + ns).c_str());
  // A container may allow namespaces but not veth links or tbf: try both.
  const std::string a = "dtca" + std::to_string(::getpid() % 100000);
  const std::string b = "dtcb" + std::to_string(::getpid() % 100000);
  if (std::system(("ip link add " + a + " type veth peer name " + b + " 2>/dev/null").c_str()) != 0)
    return false;
  const bool tbf = std::system(("tc qdisc add dev " + a +
                                " root tbf rate 1mbit burst 32kbit latency 50ms 2>/dev/null")
                                   .c_str()) == 0;
  std::system(("ip link del " + a + " 2>/dev/null").c_str());
  return tbf;
}

// "dtsim-<pid>-r" from the "emulated network: ... in namespaces dtsim-<pid>-r0..1" line.
std::string NamespacePrefix(const std::string& err) {
  std::smatch m;
  const std::regex re("in namespaces (dtsim-[0-9]+-r)0");
  return std::regex_search(err, m, re) ? m[1].str() : "";
}

// Namespaces and bridges named for that prefix's pid that still exist.
std::string Leftovers(const std::string& prefix) {
  const std::string pid = prefix.substr(6, prefix.size() - 8);  // dtsim-<pid>-r
  const fs::path tmp = fs::temp_directory_path() / ("dtsim_cli_ns_" + std::to_string(::getpid()));
  std::system(("(ip netns list; ip -o link show) >" + tmp.string() + " 2>&1").c_str());
  std::istringstream lines(Slurp(tmp));
  fs::remove(tmp);
  std::string left;
  for (std::string line; std::getline(lines, line);)
    if (line.find(prefix) != std::string::npos || line.find("dts" + pid + "b") != std::string::npos ||
        line.find("dts" + pid + "v") != std::string::npos)
      left += line + "\n";
  return left;
}

// Two ranks in their own namespaces at 100 Mb/s: exec.json records the
// network, and nothing of it is left afterwards.
TEST_F(Cli, ExecInEmulatedNetworkRecordsItAndRemovesIt) {
  if (!CanEmulateNetwork()) GTEST_SKIP() << "needs root, network namespaces and tc";
  Result r = Dtsim("exec scenarios/local/cifar10-dp-2cpu.yaml --network 100Mbps --iterations 2 "
                   "-q --out " + dir_.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(Slurp(dir_ / "exec.json"));
  EXPECT_EQ(j.at("ranks").get<int>(), 2);
  // 100 Mb/s = 100e6 / 8 = 12.5e6 bytes/s.
  EXPECT_DOUBLE_EQ(j.at("network").at("rate_bytes_per_s").get<double>(), 12.5e6);
  // The prediction's link: TCP goodput at MTU 1500, 1448 / 1514 of the rate
  // (exec/netem/emulated_network.h, TcpGoodput).
  EXPECT_DOUBLE_EQ(j.at("network").at("predicted_link_bw_bytes_per_s").get<double>(),
                   12.5e6 * 1448 / 1514);
  EXPECT_GT(j.at("measured").at("comm_s").get<double>(), 0);
  const std::string prefix = NamespacePrefix(r.err);
  ASSERT_FALSE(prefix.empty()) << r.err;
  EXPECT_EQ(Leftovers(prefix), "");
}

// SIGTERM to dtsim while its ranks run: it stops them, removes the network
// and exits with 128 + 15.
TEST_F(Cli, InterruptedExecRemovesTheNetwork) {
  if (!CanEmulateNetwork()) GTEST_SKIP() << "needs root, network namespaces and tc";
  fs::create_directories(dir_);
  const fs::path err = dir_ / "err";
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    ::execl(DTSIM_BIN, DTSIM_BIN, "exec", "scenarios/local/cifar10-dp-2cpu.yaml", "--network",
            "100Mbps", "--iterations", "1000", "-q", "--out", dir_.c_str(), nullptr);
    ::_exit(127);
  }
  // Wait until mpirun runs (its command line is echoed), then a little more.
  for (int i = 0; i < 300 && Slurp(err).find("running:") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << Slurp(err);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << Slurp(err);
  const std::string prefix = NamespacePrefix(Slurp(err));
  ASSERT_FALSE(prefix.empty()) << Slurp(err);
  EXPECT_EQ(Leftovers(prefix), "");
}

// ---- Issue 10: real execution ends, and ends right ---------------------


// Two data-parallel ranks of the MNIST MLP: a few milliseconds a step.
void WriteTwoRankMlp(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "cluster: {devices_per_node: 2}\n"
                         "workload: {model: mnist-mlp, batch_per_device: 8}\n";
}

// Issue 10 item 11: --resume hung when the newest checkpoint was bad on some
// ranks only. The ranks now agree on the newest step valid on all of them.
TEST_F(Cli, ResumeFallsBackToTheNewestCheckpointValidOnEveryRank) {
  const fs::path scenario = dir_ / "s.yaml";
  WriteTwoRankMlp(scenario);
  const fs::path base = dir_ / "base";
  Result first = DtsimWithin(
      120, "exec " + scenario.string() + " --iterations 4 --checkpoint-every 2 -q --out " +
               base.string());
  ASSERT_EQ(first.status, 0) << first.err;
  const fs::path newest = fs::path("checkpoints") / "rank-1" / "ckpt-000000000004.dtck";
  ASSERT_TRUE(fs::is_regular_file(base / newest));
  const auto size = fs::file_size(base / newest);
  auto poke = [](const fs::path& f, std::uintmax_t at, char value) {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(at));
    io.put(value);
  };
  auto flip = [](const fs::path& f, std::uintmax_t at) {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(static_cast<std::streamoff>(at));
    const char c = static_cast<char>(io.get() ^ 0x10);
    io.seekp(static_cast<std::streamoff>(at));
    io.put(c);
  };
  // Each way the newest checkpoint of rank 1 can be bad (the format's
  // header: magic at 0, CRC at 12; exec/train/checkpoint.h).
  const std::vector<std::pair<std::string, std::function<void(const fs::path&)>>> damage = {
      {"truncated", [&](const fs::path& f) { fs::resize_file(f, size / 2); }},
      {"bit flip", [&](const fs::path& f) { flip(f, size - 10); }},
      {"bad magic", [&](const fs::path& f) { poke(f, 0, 'X'); }},
      {"bad crc", [&](const fs::path& f) { flip(f, 12); }},
      {"garbage", [](const fs::path& f) { std::ofstream(f, std::ios::trunc) << "garbage"; }},
      {"folder", [](const fs::path& f) {
         fs::remove(f);
         fs::create_directory(f);
       }}};
  for (std::size_t v = 0; v < damage.size(); ++v) {
    const auto& [name, damage_it] = damage[v];
    const fs::path out = dir_ / ("v-" + std::to_string(v));
    fs::create_directories(out);
    fs::copy(base / "checkpoints", out / "checkpoints", fs::copy_options::recursive);
    damage_it(out / newest);
    Result r = DtsimWithin(120, "exec " + scenario.string() +
                                    " --iterations 6 --resume -q --out " + out.string());
    ASSERT_EQ(r.status, 0) << name << "\n" << r.err;
    EXPECT_NE(r.err.find("resuming from step 2"), std::string::npos) << name << "\n" << r.err;
    // Only the iterations run (3..6), with their real losses and a finite
    // throughput (not zeros, not inf).
    const auto j = nlohmann::json::parse(Slurp(out / "exec.json"));
    EXPECT_EQ(j.at("resumed_from_step").get<int>(), 2) << name;
    ASSERT_EQ(j.at("loss").size(), 4u) << name;
    for (const auto& l : j.at("loss")) EXPECT_GT(l.get<double>(), 0) << name;
    const double throughput = j.at("measured").at("throughput_samples_per_s").get<double>();
    EXPECT_TRUE(std::isfinite(throughput) && throughput > 0) << name << " " << throughput;
  }
  // Bad on rank 1 at both steps: no common step; every rank stops, exit 2.
  const fs::path none = dir_ / "none";
  fs::create_directories(none);
  fs::copy(base / "checkpoints", none / "checkpoints", fs::copy_options::recursive);
  flip(none / newest, 12);
  flip(none / "checkpoints" / "rank-1" / "ckpt-000000000002.dtck", 12);
  Result bad = DtsimWithin(120, "exec " + scenario.string() + " --iterations 6 --resume -q --out " +
                                    none.string());
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("no checkpoint step is valid on every rank"), std::string::npos)
      << bad.err;
  // Nothing to resume from at all, and nothing left to run.
  Result empty = DtsimWithin(120, "exec " + scenario.string() + " --resume -q --out " +
                                      (dir_ / "empty").string());
  EXPECT_EQ(empty.status, 2) << empty.err;
  EXPECT_NE(empty.err.find("no checkpoint to resume from"), std::string::npos) << empty.err;
  Result done = DtsimWithin(120, "exec " + scenario.string() + " --iterations 4 --resume -q --out " +
                                     base.string());
  EXPECT_EQ(done.status, 2) << done.err;
  EXPECT_NE(done.err.find("nothing is left to run"), std::string::npos) << done.err;
}

// Issue 10 item 18: a mistake only one rank sees (its checkpoint folder is
// a file) ended as exit 1; it is exit 2 with the place, from the launcher.
TEST_F(Cli, ExecErrorOnOneRankIsExit2WithItsPlace) {
  const fs::path scenario = dir_ / "s.yaml";
  WriteTwoRankMlp(scenario);
  fs::create_directories(dir_ / "out" / "checkpoints");
  std::ofstream(dir_ / "out" / "checkpoints" / "rank-1") << "not a folder";
  Result r = DtsimWithin(120, "exec " + scenario.string() +
                                  " --iterations 3 --checkpoint-every 1 -q --out " +
                                  (dir_ / "out").string());
  EXPECT_EQ(r.status, 2) << r.err;
  // The launcher's own last line names the rank and the place.
  const std::string last = r.err.substr(r.err.rfind("dtsim: "));
  EXPECT_NE(last.find("rank 1: "), std::string::npos) << r.err;
  EXPECT_NE(last.find((dir_ / "out" / "checkpoints" / "rank-1").string()), std::string::npos)
      << r.err;
}

// Issue 10 item 12: a 2-stage pipeline of a transformer with tied
// embeddings hung. It runs, and trains what one device trains: the same
// global batch (4) gives the same losses (float sums in another order
// only: 1e-5 relative, see exec/runtime/plan_executor_test.cc).
TEST_F(Cli, TiedTransformerPipelineTrainsLikeOneDevice) {
  fs::create_directories(dir_);
  const std::string model =
      "workload: {model: {transformer: {layers: 2, hidden: 16, heads: 4, sequence: 8, "
      "vocab: 32}}";
  std::ofstream(dir_ / "one.yaml") << "cluster: {devices_per_node: 1}\n"
                                   << model << ", batch_per_device: 4}\n";
  std::ofstream(dir_ / "pipe.yaml")
      << "cluster: {devices_per_node: 2}\n"
      << model << "}\n"
      << "parallelism: {strategy: hybrid, pipeline_parallel: 2, micro_batch_size: 2, "
         "global_batch: 4, schedule: 1f1b}\n";
  Result one = DtsimWithin(120, "exec " + (dir_ / "one.yaml").string() +
                                    " --iterations 4 -q --out " + (dir_ / "one").string());
  ASSERT_EQ(one.status, 0) << one.err;
  Result pipe = DtsimWithin(120, "exec " + (dir_ / "pipe.yaml").string() +
                                     " --iterations 4 -q --out " + (dir_ / "pipe").string());
  ASSERT_EQ(pipe.status, 0) << pipe.err;
  const auto a = nlohmann::json::parse(Slurp(dir_ / "one" / "exec.json")).at("loss");
  const auto b = nlohmann::json::parse(Slurp(dir_ / "pipe" / "exec.json")).at("loss");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(b[i].get<double>(), a[i].get<double>(), 1e-5 * a[i].get<double>()) << i;
}

// Issue 10 item 13: a model bigger than memory ended in std::bad_alloc. The
// estimate is checked first: GPT-3 175B's 175e9 parameters alone take 700
// GB in fp32, twice that with gradients.
TEST_F(Cli, ExecOfAModelBiggerThanMemoryIsRefusedWithTheNumbers) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "big.yaml") << "cluster: {devices_per_node: 1}\n"
                                      "workload: {model: gpt3-175b, batch_per_device: 1}\n";
  Result r = DtsimWithin(120, "exec " + (dir_ / "big.yaml").string() + " --iterations 1");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("MemAvailable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("parameters and gradients"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find((dir_ / "big.yaml").string()), std::string::npos) << r.err;
}

// The processes whose parent is this test (a subreaper adopts orphans).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> kids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::istringstream stat(Slurp(e.path() / "stat"));
    std::string pid, comm, state;
    long ppid = 0;
    // "pid (comm) state ppid ...": comm may hold spaces; it ends at ") ".
    const std::string line = stat.str();
    const auto close = line.rfind(") ");
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    rest >> state >> ppid;
    if (ppid == parent && state != "Z") kids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return kids;
}

// Starts dtsim with `args` in a child, waits until `ready(err)` (or 60 s),
// kills it with SIGKILL, and returns whether every process it started is
// gone within `seconds` (they are adopted by this test, a subreaper).
bool KillLeavesNoOrphans(const std::vector<std::string>& args, const fs::path& err,
                         const std::function<bool(pid_t)>& ready, int seconds) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    std::vector<char*> argv = {const_cast<char*>(DTSIM_BIN)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(DTSIM_BIN, argv.data());
    ::_exit(127);
  }
  for (int i = 0; i < 600 && !ready(pid); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < seconds * 10 && !gone; ++i) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    gone = ChildrenOf(::getpid()).empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Whatever is left: not ours to keep.
  for (pid_t p : ChildrenOf(::getpid())) ::kill(p, SIGKILL);
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  return gone;
}

// Issue 10 item 16: killing dtsim left its children running (mpirun and the
// ranks of exec; the SimGrid engine's child of run). They die with it.
TEST_F(Cli, KilledExecLeavesNoMpirunOrRanks) {
  const fs::path scenario = dir_ / "s.yaml";
  WriteTwoRankMlp(scenario);
  // Ready once both ranks run: mpirun's children.
  auto ranks_running = [](pid_t dtsim) {
    for (pid_t launcher : ChildrenOf(dtsim))
      if (ChildrenOf(launcher).size() >= 2) return true;
    return false;
  };
  EXPECT_TRUE(KillLeavesNoOrphans({"exec", scenario.string(), "--iterations", "100000", "-q",
                                   "--out", (dir_ / "out").string()},
                                  dir_ / "err", ranks_running, 30))
      << Slurp(dir_ / "err");
}

// With --network, the ranks of a killed run die too, and the next run
// then removes that run's network (it removes only networks no process uses).
TEST_F(Cli, KilledExecInEmulatedNetworkLeavesNoRanksAndItsNetworkGoesNext) {
  if (!CanEmulateNetwork()) GTEST_SKIP() << "needs root, network namespaces and tc";
  const fs::path scenario = dir_ / "s.yaml";
  WriteTwoRankMlp(scenario);
  auto ranks_running = [](pid_t dtsim) {
    for (pid_t launcher : ChildrenOf(dtsim))
      if (ChildrenOf(launcher).size() >= 2) return true;
    return false;
  };
  EXPECT_TRUE(KillLeavesNoOrphans({"exec", scenario.string(), "--network", "100Mbps",
                                   "--iterations", "100000", "-q", "--out",
                                   (dir_ / "out").string()},
                                  dir_ / "err", ranks_running, 30))
      << Slurp(dir_ / "err");
  const std::string prefix = NamespacePrefix(Slurp(dir_ / "err"));
  ASSERT_FALSE(prefix.empty()) << Slurp(dir_ / "err");
  Result next = DtsimWithin(120, "exec " + scenario.string() +
                                     " --network 100Mbps --iterations 1 -q --out " +
                                     (dir_ / "next").string());
  EXPECT_EQ(next.status, 0) << next.err;
  // Whichever run comes next removes it: this one, or one that a test
  // running beside this one (ctest -j) started first, which then says so
  // instead. (Requiring this run's message made the test fail now and then
  // under ctest -j2.) Either way nothing of the killed run is left.
  EXPECT_EQ(Leftovers(prefix), "") << next.err;
}

TEST_F(Cli, KilledSimgridRunLeavesNoChild) {
  fs::create_directories(dir_);
  // The SimGrid child runs for seconds on this plan (256 devices, every one
  // simulated).
  auto child_running = [](pid_t dtsim) { return !ChildrenOf(dtsim).empty(); };
  EXPECT_TRUE(KillLeavesNoOrphans({"run", "scenarios/resnet50-256xA100-fattree.yaml", "--engine",
                                   "simgrid", "-q", "--no-trace", "--out",
                                   (dir_ / "out").string()},
                                  dir_ / "err", child_running, 3))
      << Slurp(dir_ / "err");
}

// ---- Issue 10: outputs (items 14, 17) -----------------------------------

// Names of dtsim's staging folders left in `dir` (there should be none;
// the folder's lock file, .dtsim-lock, stays by design: common/atomic_file.h).
std::string StagingLeftovers(const fs::path& dir) {
  std::string left;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".dtsim-", 0) == 0 && name != ".dtsim-lock") left += e.path().string() + "\n";
  }
  return left;
}

// Issue 10 item 14, the reproducer: with o/summary.csv.tmp a symbolic link
// to another file, `dtsim run S --out o` overwrote that file. Links at the
// final names (`run --out`, `run --json FILE`, `plan --json FILE`, `plan
// --dot FILE`) are refused with exit 2 and left as they are (issue 44 item
// 2: renaming over /dev/stdout, itself a link, replaced the machine's).
TEST_F(Cli, OutputsNeverWriteThroughOrReplaceSymbolicLinks) {
  const fs::path o = dir_ / "o";
  fs::create_directories(o);
  const fs::path victim = dir_ / "victim.txt";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, o / "summary.csv.tmp");
  const Result ok = Dtsim("run scenarios/default.yaml -q --out " + o.string());
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_TRUE(fs::is_symlink(o / "summary.csv.tmp")) << "not dtsim's: left alone";
  fs::create_symlink(victim, o / "report.json.new");
  fs::remove(o / "report.json");
  fs::rename(o / "report.json.new", o / "report.json");
  fs::create_symlink(victim, dir_ / "run.json");
  fs::create_symlink(victim, dir_ / "plan.json");
  fs::create_symlink(victim, dir_ / "plan.dot");
  const Result r = Dtsim("run scenarios/default.yaml -q --out " + o.string());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("a symbolic link stands at its name"), std::string::npos) << r.err;
  const Result j = Dtsim("run scenarios/default.yaml -q --out " + (dir_ / "o2").string() +
                         " --json " + (dir_ / "run.json").string());
  EXPECT_EQ(j.status, 2) << j.err;
  const Result p = Dtsim("plan scenarios/default.yaml --json " + (dir_ / "plan.json").string());
  EXPECT_EQ(p.status, 2) << p.err;
  const Result d = Dtsim("plan scenarios/default.yaml --dot " + (dir_ / "plan.dot").string());
  EXPECT_EQ(d.status, 2) << d.err;
  EXPECT_EQ(Slurp(victim), "precious");
  for (const fs::path& f : {o / "report.json", dir_ / "run.json", dir_ / "plan.json",
                            dir_ / "plan.dot"}) {
    EXPECT_TRUE(fs::is_symlink(f)) << f;
  }
  EXPECT_EQ(StagingLeftovers(o), "");
  EXPECT_EQ(StagingLeftovers(dir_), "");
}

// Issue 44 item 2: a FIFO (as /dev/null, a device) at an output's name is
// refused with exit 2, stays a FIFO, and no lock file appears beside it.
TEST_F(Cli, OutputsNeverReplaceAFifo) {
  fs::create_directories(dir_);
  const fs::path fifo = dir_ / "report.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Result r = Dtsim("run scenarios/default.yaml -q --out " + (dir_ / "o").string() +
                         " --json " + fifo.string());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("a FIFO stands at its name"), std::string::npos) << r.err;
  struct stat st{};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_FALSE(fs::exists(dir_ / ".dtsim-lock"));
}

// Issue 10 item 17: what a killed run leaves is cleaned by the next one: a
// stale *.tmp of an older dtsim and a dead run's staging folder (mode 0700,
// as dtsim makes them); the other files of the folder stay.
TEST_F(Cli, NextRunCleansWhatAKilledRunLeft) {
  const fs::path o = dir_ / "o";
  fs::create_directories(o / ".dtsim-stage-deadbeef0000");
  fs::permissions(o / ".dtsim-stage-deadbeef0000", fs::perms::owner_all);
  std::ofstream(o / ".dtsim-stage-deadbeef0000" / "report.json") << "{\"half";
  std::ofstream(o / "trace.json.tmp") << "[";
  std::ofstream(o / "exec.json") << "another command's";
  const Result r = Dtsim("run scenarios/default.yaml -q --out " + o.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(StagingLeftovers(o), "");
  EXPECT_FALSE(fs::exists(o / "trace.json.tmp"));
  EXPECT_EQ(Slurp(o / "exec.json"), "another command's");
  EXPECT_NO_THROW(nlohmann::json::parse(Slurp(o / "trace.json")));
}

// Issue 15 item 1: an ONNX export of ResNet-50 is the zoo's ResNet-50: the
// same scenario predicts the same figures with either; a file that is not
// ONNX is refused at its path (exit 2).
TEST_F(Cli, OnnxModelRunsAsTheZooModel) {
  fs::create_directories(dir_);
  dtsim::onnx_format::ModelProto model;
  dtsim::models::onnx_test::WriteResNet50(&model);
  {
    std::ofstream f(dir_ / "r50.onnx", std::ios::binary);
    ASSERT_TRUE(model.SerializeToOstream(&f));
  }
  const std::string scenario =
      "cluster: {nodes: 2, devices_per_node: 4, device: V100-SXM2-32GB, intra_node_link: nvlink2,"
      " network: {link: 25GbE, topology: single_switch}}\n"
      "workload: {batch_per_device: 64, precision: fp16, model: ";
  {
    std::ofstream(dir_ / "onnx.yaml") << "name: r\n" << scenario << "{file: r50.onnx}}\n";
    std::ofstream(dir_ / "zoo.yaml") << "name: r\n" << scenario << "resnet50}\n";
  }
  ASSERT_EQ(Dtsim("run " + (dir_ / "onnx.yaml").string() + " -q --out " + (dir_ / "a").string())
                .status,
            0);
  ASSERT_EQ(
      Dtsim("run " + (dir_ / "zoo.yaml").string() + " -q --out " + (dir_ / "b").string()).status,
      0);
  const nlohmann::json a = nlohmann::json::parse(Slurp(dir_ / "a" / "report.json"));
  const nlohmann::json b = nlohmann::json::parse(Slurp(dir_ / "b" / "report.json"));
  EXPECT_EQ(a["throughput_samples_per_s"], b["throughput_samples_per_s"]);
  EXPECT_EQ(a["step_time_s"], b["step_time_s"]);
  const Result table = Dtsim("model " + (dir_ / "r50.onnx").string());
  EXPECT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("25,557,032"), std::string::npos);  // torchvision's count

  std::ofstream(dir_ / "bad.onnx") << "not a model";
  const Result bad = Dtsim("model " + (dir_ / "bad.onnx").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find((dir_ / "bad.onnx").string() + ": error: not an ONNX model"),
            std::string::npos)
      << bad.err;
}

// Issue 15 item 1: `dtsim chakra` on a two-rank trace (1 ms of compute,
// then an all-reduce of 64 MB) over 2 V100 of one node: the step is the
// compute plus the all-reduce, on either engine; wrong input exits 2.
TEST_F(Cli, ChakraTraceOnAScenariosCluster) {
  fs::create_directories(dir_);
  for (int r = 0; r < 2; ++r) {
    dtsim::plan::chakra_test::TraceWriter w;
    w.Compute(1, 1000);
    w.AllReduce(2, 64 << 20, {1});
    std::ofstream(dir_ / ("t." + std::to_string(r) + ".et"), std::ios::binary) << w.Bytes();
  }
  std::ofstream(dir_ / "c.yaml")
      << "name: c\ncluster: {nodes: 1, devices_per_node: 2, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: resnet50}\n";
  const std::string args = "chakra " + (dir_ / "t").string() + " --cluster " +
                           (dir_ / "c.yaml").string() + " --batch 64 --out ";
  const Result r = Dtsim(args + (dir_ / "a").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("2 ranks, 2 compute nodes, 1 collectives"), std::string::npos) << r.out;
  const nlohmann::json a = nlohmann::json::parse(Slurp(dir_ / "a" / "summary.json"));
  // Ring all-reduce of 64 MiB between 2 GPUs: each sends and receives half
  // the buffer twice, 64 MiB in all, over NVLink 2 (tens of GB/s): a few ms.
  const double step = a["step_time_s"];
  EXPECT_GT(step, 1e-3 + 64.0 * (1 << 20) / 300e9);
  EXPECT_LT(step, 1e-3 + 64.0 * (1 << 20) / 5e9);
  EXPECT_DOUBLE_EQ(a["throughput_samples_per_s"].get<double>(), 64 / step);
  const Result sg = Dtsim(args + (dir_ / "b").string() + " --engine simgrid");
  ASSERT_EQ(sg.status, 0) << sg.err;
  const double simgrid = nlohmann::json::parse(Slurp(dir_ / "b" / "summary.json"))["step_time_s"];
  EXPECT_NEAR(simgrid / step, 1.0, 0.1);  // the two engines price one flow alike

  std::ofstream(dir_ / "four.yaml")
      << "name: c\ncluster: {nodes: 1, devices_per_node: 4, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: resnet50}\n";
  Result bad = Dtsim("chakra " + (dir_ / "t").string() + " --cluster " +
                     (dir_ / "four.yaml").string() + " --out " + (dir_ / "c").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find((dir_ / "t").string() +
                         ".2.et: error: rank 2's trace does not exist: the cluster has 4 devices"),
            std::string::npos)
      << bad.err;
  // A gap in the rank files is named, whatever the cluster: with t.3.et
  // beside t.0.et and t.1.et, two devices no longer run ranks 0-1 alone.
  fs::copy_file(dir_ / "t.1.et", dir_ / "t.3.et");
  bad = Dtsim("chakra " + (dir_ / "t").string() + " --cluster " + (dir_ / "c.yaml").string() +
              " --out " + (dir_ / "c").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find((dir_ / "t").string() + ".2.et: error: rank 2's trace does not exist, but"),
            std::string::npos)
      << bad.err;
  fs::remove(dir_ / "t.3.et");

  // A collective on a process group ("1": ranks 0 and 1) that the traces do
  // not list: refused, unless a communicator-group file gives its ranks.
  for (int rank = 0; rank < 2; ++rank) {
    dtsim::plan::chakra_test::TraceWriter w;
    dtsim::chakra_format::AttributeProto* name = w.AllReduce(1, 1 << 20)->add_attr();
    name->set_name("pg_name");
    name->set_string_val("1");
    std::ofstream(dir_ / ("pg." + std::to_string(rank) + ".et"), std::ios::binary) << w.Bytes();
  }
  const std::string pg_args = "chakra " + (dir_ / "pg").string() + " --cluster " +
                              (dir_ / "c.yaml").string() + " --out " + (dir_ / "pg").string();
  bad = Dtsim(pg_args);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("process group '1' has no list of members"), std::string::npos) << bad.err;
  std::ofstream(dir_ / "groups.json") << R"({"1": [0, 1]})";
  const Result pg = Dtsim(pg_args + " --comm-groups " + (dir_ / "groups.json").string());
  ASSERT_EQ(pg.status, 0) << pg.err;
  EXPECT_EQ(nlohmann::json::parse(Slurp(dir_ / "pg" / "summary.json"))["collectives"], 1);
  std::ofstream(dir_ / "groups.json") << R"([0, 1])";
  bad = Dtsim(pg_args + " --comm-groups " + (dir_ / "groups.json").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find((dir_ / "groups.json").string() + ": error: not a JSON object"),
            std::string::npos)
      << bad.err;

  // Compute nodes without durations: the 0 ms step comes with a warning in
  // summary.json, not as a plain result.
  for (int rank = 0; rank < 2; ++rank) {
    dtsim::plan::chakra_test::TraceWriter w;
    w.Compute(1, 0);
    std::ofstream(dir_ / ("zero." + std::to_string(rank) + ".et"), std::ios::binary) << w.Bytes();
  }
  const Result zero = Dtsim("chakra " + (dir_ / "zero").string() + " --cluster " +
                            (dir_ / "c.yaml").string() + " --out " + (dir_ / "zero").string());
  ASSERT_EQ(zero.status, 0) << zero.err;
  const nlohmann::json z = nlohmann::json::parse(Slurp(dir_ / "zero" / "summary.json"));
  EXPECT_EQ(z["step_time_s"], 0.0);
  ASSERT_EQ(z["warnings"].size(), 1u);
  EXPECT_NE(z["warnings"][0].get<std::string>().find("every compute node of the trace (2) has "
                                                     "duration 0"),
            std::string::npos);

  // Converter output: a host operator (is_cpu_op, 20 us) calling a GPU
  // kernel (100 us, ctrl_deps naming its caller), which also depends on a
  // node the converter dropped. Refused as it is; with the clean-up the
  // kernel alone is simulated (100 us) and what was removed is counted.
  for (int rank = 0; rank < 2; ++rank) {
    dtsim::plan::chakra_test::TraceWriter w;
    dtsim::chakra_format::Node* host = w.Compute(1, 20);
    dtsim::chakra_format::Node* kernel = w.Compute(2, 100, {1, 99});
    kernel->add_ctrl_deps(1);
    for (auto [node, cpu] : {std::pair{host, true}, std::pair{kernel, false}}) {
      dtsim::chakra_format::AttributeProto* is_cpu_op = node->add_attr();
      is_cpu_op->set_name("is_cpu_op");
      is_cpu_op->set_bool_val(cpu);
    }
    std::ofstream(dir_ / ("conv." + std::to_string(rank) + ".et"), std::ios::binary) << w.Bytes();
  }
  const std::string conv_args = "chakra " + (dir_ / "conv").string() + " --cluster " +
                                (dir_ / "c.yaml").string() + " --out " + (dir_ / "conv").string();
  bad = Dtsim(conv_args);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("depends on node 99, which the trace does not hold"), std::string::npos)
      << bad.err;
  const Result conv =
      Dtsim(conv_args + " --drop-dangling-deps --ignore-ctrl-deps --host-ops drop");
  ASSERT_EQ(conv.status, 0) << conv.err;
  const nlohmann::json cleaned = nlohmann::json::parse(Slurp(dir_ / "conv" / "summary.json"));
  EXPECT_DOUBLE_EQ(cleaned["step_time_s"].get<double>(), 100e-6);
  EXPECT_EQ(cleaned["cleanup"]["dangling_deps_dropped"], 2);  // one per rank
  EXPECT_EQ(cleaned["cleanup"]["ctrl_deps_ignored"], 2);
  EXPECT_EQ(cleaned["cleanup"]["host_ops_dropped"], 2);
  bad = Dtsim("chakra " + (dir_ / "none").string() + " --cluster " + (dir_ / "c.yaml").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("none.0.et: error: no Chakra trace at this path"), std::string::npos)
      << bad.err;
}

// Issue 15 item 4: `dtsim sweep --tensorboard` writes the axes as HParams:
// the experiment in tensorboard/, a session folder per point.
TEST_F(Cli, SweepWritesHParams) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "s.yaml")
      << "name: s\ncluster: {nodes: [1, 2], devices_per_node: 2, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: resnet50, batch_per_device: 32}\n"
         "parallelism: {algorithm: [ring, tree]}\n";
  const Result r = Dtsim("sweep " + (dir_ / "s.yaml").string() + " --tensorboard --quiet --out " +
                         (dir_ / "o").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path tb = dir_ / "o" / "tensorboard";
  const std::string experiment = Slurp(tb / "events.out.tfevents.dtsim");
  EXPECT_NE(experiment.find("_hparams_/experiment"), std::string::npos);
  EXPECT_NE(experiment.find("parallelism.algorithm"), std::string::npos);
  for (const char* point : {"p0000", "p0003"}) {
    const std::string session = Slurp(tb / point / "events.out.tfevents.dtsim");
    EXPECT_NE(session.find("_hparams_/session_start_info"), std::string::npos) << point;
    EXPECT_NE(session.find("throughput_samples_per_s"), std::string::npos) << point;
  }
  EXPECT_FALSE(fs::exists(tb / "p0004"));
  // A smaller sweep into the same folder leaves no session of the larger
  // one (TensorBoard would show both as one); a folder of the user's stays.
  fs::create_directories(tb / "p0009");
  std::ofstream(tb / "p0009" / "notes.txt") << "mine";
  std::ofstream(dir_ / "small.yaml")
      << "name: s\ncluster: {nodes: [1, 2], devices_per_node: 2, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: resnet50, batch_per_device: 32}\n";
  ASSERT_EQ(Dtsim("sweep " + (dir_ / "small.yaml").string() + " --tensorboard --quiet --out " +
                  (dir_ / "o").string())
                .status,
            0);
  EXPECT_TRUE(fs::exists(tb / "p0001"));
  EXPECT_FALSE(fs::exists(tb / "p0002"));
  EXPECT_FALSE(fs::exists(tb / "p0003"));
  EXPECT_TRUE(fs::exists(tb / "p0009" / "notes.txt"));
  // The same sweep gives the same bytes.
  ASSERT_EQ(Dtsim("sweep " + (dir_ / "s.yaml").string() + " --tensorboard --quiet --out " +
                  (dir_ / "o2").string())
                .status,
            0);
  ASSERT_EQ(Dtsim("sweep " + (dir_ / "s.yaml").string() + " --tensorboard --quiet --out " +
                  (dir_ / "o3").string())
                .status,
            0);
  EXPECT_EQ(Slurp(dir_ / "o2" / "tensorboard" / "p0002" / "events.out.tfevents.dtsim"),
            Slurp(dir_ / "o3" / "tensorboard" / "p0002" / "events.out.tfevents.dtsim"));
}

// Issue 16: `dtsim tta` on a small sweep (data parallelism and local SGD
// with H = 4 on 2 devices), the mnist-mlp proxy: every point gets a time to
// the target, the same seeds give the same bytes, and what cannot be
// answered is refused.
TEST_F(Cli, TtaGivesTimesToTheTargetDeterministically) {
  fs::create_directories(dir_);
  // A proxy that learns its synthetic class images in a few updates.
  WriteTinyCnn(dir_ / "tiny.yaml");
  std::ofstream(dir_ / "s.yaml")
      << "name: t\ncluster: {nodes: 1, devices_per_node: 2, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: {file: tiny.yaml}, batch_per_device: 4}\n"
         "parallelism: {strategy: local_sgd, averaging_period: [1, 4]}\n";
  const std::string args = "tta " + (dir_ / "s.yaml").string() +
                           " --steps 60 --eval-every 2 --eval-samples 32 --seeds 2 --lr 0.05 "
                           "--target 0.3 -j 2 --out ";
  const Result r = Dtsim(args + (dir_ / "a").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string csv = Slurp(dir_ / "a" / "tta.csv");
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("parallelism.averaging_period,point,setting,workers,", 0), 0u) << line;
  int rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    EXPECT_NE(line.find(",measured,"), std::string::npos) << line;  // 2 workers measured
  }
  EXPECT_EQ(rows, 2);
  EXPECT_NE(r.out.find("best: t/parallelism.averaging_period="), std::string::npos) << r.out;
  for (const char* f : {"curves.csv", "tta.svg", "index.html", "events.out.tfevents.dtsim",
                        "sweep.csv", "throughput.svg"})
    EXPECT_TRUE(fs::exists(dir_ / "a" / f)) << f;
  // The sweep's page, led by the time-to-accuracy section.
  const std::string page = Slurp(dir_ / "a" / "index.html");
  EXPECT_LT(page.find("<h2>Time to 30% of the initial loss</h2>"), page.find("<h2>Throughput</h2>"));
  ASSERT_EQ(Dtsim(args + (dir_ / "b").string()).status, 0);
  EXPECT_EQ(Slurp(dir_ / "b" / "tta.csv"), csv);
  EXPECT_EQ(Slurp(dir_ / "b" / "curves.csv"), Slurp(dir_ / "a" / "curves.csv"));

  // Parameter servers: asynchronous with the simulated staleness (4 workers
  // take turns: 3 updates between a pull and its push) and 3 of 4 (one
  // backup worker), each measured.
  std::ofstream(dir_ / "ps.yaml")
      << "name: ps\ncluster: {nodes: 4, devices_per_node: 1, device: K20m, intra_node_link: "
         "pcie2-x16, network: {link: 1GbE}}\nworkload: {model: {file: tiny.yaml}, "
         "batch_per_device: 4, iterations: 20}\nparallelism: {strategy: parameter_server, "
         "sync: [synchronous, asynchronous], parameter_server: {servers: 1, device: cpu-host, "
         "replicas_to_aggregate: 3}}\n";
  const Result ps = Dtsim("tta " + (dir_ / "ps.yaml").string() +
                          " --steps 80 --eval-every 2 --eval-samples 32 --seeds 2 --lr 0.05 "
                          "--target 0.3 -j 2 --out " + (dir_ / "ps").string());
  ASSERT_EQ(ps.status, 0) << ps.err;
  const std::string ps_csv = Slurp(dir_ / "ps" / "tta.csv");
  EXPECT_NE(ps_csv.find(",backup 25% dropped,4,"), std::string::npos) << ps_csv;
  EXPECT_NE(ps_csv.find(",asynchronous staleness=3,4,"), std::string::npos) << ps_csv;

  // A target no run reaches in 2 updates: the files say so, exit 3.
  const Result none = Dtsim("tta " + (dir_ / "s.yaml").string() +
                            " --steps 2 --eval-every 1 --eval-samples 8 --seeds 1 --target 0.01 "
                            "--out " + (dir_ / "c").string());
  EXPECT_EQ(none.status, 3) << none.err;
  EXPECT_NE(Slurp(dir_ / "c" / "tta.csv").find("did not reach the target"), std::string::npos);
  // A strategy whose synchronisation it does not measure: exit 2 at the key.
  std::ofstream(dir_ / "h.yaml")
      << "name: h\ncluster: {nodes: 1, devices_per_node: 2, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: gpt2}\n"
         "parallelism: {strategy: hybrid, tensor_parallel: 2, global_batch: 8}\n";
  const Result bad = Dtsim("tta " + (dir_ / "h.yaml").string() + " --out " + (dir_ / "d").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("strategy hybrid is not one of them"), std::string::npos) << bad.err;
}

}  // namespace
