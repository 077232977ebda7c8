#include "sim/engine/simgrid_engine.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/module_loader.h"
#include "sim/engine/simgrid_child.h"
#include "sim/engine/stragglers.h"

namespace dtsim::sim {

std::vector<SimgridLinkEvent> SimgridLinkEvents(const std::vector<config::LinkEvent>& events,
                                                const config::ClusterConfig& cluster) {
  std::vector<SimgridLinkEvent> out;
  for (const config::LinkEvent& e : events) {
    SimgridLinkEvent x;
    if (e.leaf >= 0) {
      x.link = SimgridLinkEvent::Link::kLeaf;
      x.index = e.leaf;
    } else if (e.device >= 0) {
      x.link = SimgridLinkEvent::Link::kDevice;
      x.index = e.node * cluster.devices_per_node + e.device;
    } else {
      x.link = SimgridLinkEvent::Link::kNic;
      x.index = e.node;
    }
    x.begin_s = e.at_s;
    x.end_s = e.duration_s > 0 ? e.at_s + e.duration_s : -1;
    x.factor = e.bandwidth;
    if (e.bandwidth == 0)
      x.factor = e.when_down == config::LinkDownPolicy::kReroute
                     ? (cluster.network.nics_per_node - 1.0) / cluster.network.nics_per_node
                     : kDownBandwidthFraction;
    if (x.factor <= 0) x.factor = kDownBandwidthFraction;
    out.push_back(x);
  }
  return out;
}

namespace {

void RequireSupported(const plan::Plan& plan, const NetworkSpec& spec,
                      const StragglerModel* stragglers) {
  const std::size_t endpoints = static_cast<std::size_t>(spec.nodes) *
                                    static_cast<std::size_t>(spec.devices_per_node) +
                                spec.extra_endpoint_nodes.size();
  DTSIM_CHECK(static_cast<std::size_t>(plan.num_ranks()) == endpoints,
              "the network needs one endpoint per plan rank (servers as extra endpoints)");
  DTSIM_CHECK(stragglers == nullptr || stragglers->num_ranks() <= plan.num_ranks(),
              "stragglers for more ranks than the plan has");
  for (plan::RankId r = 0; r < plan.num_ranks(); ++r) {
    if (!plan.IsMaterialized(r))
      throw UserError(
          "engine simgrid does not support symmetric plans (representative ranks) yet",
          "use engine: analytic, or raise outputs.trace_max_ranks to the number of workers "
          "(identical workers beyond it are represented by one)");
  }
  for (const plan::Collective& c : plan.collectives())
    if (c.via_host)
      throw UserError("engine simgrid does not simulate collectives summed on the host yet",
                      "use engine: analytic, or parallelism.aggregation: device");
  for (const plan::Task& t : plan.tasks())
    if (t.kind == plan::TaskKind::kRecv)
      throw UserError("engine simgrid: plans express transfers as kSend tasks");
}

// The module's entry (sim/engine/simgrid_child.h), from $DTSIM_SIMGRID_MODULE when
// set, else libdtsim-simgrid.so beside the running executable, else in the
// build's tools/ folder (tests run from other folders). Null with `why` set
// when none loads.
SimgridChildMain LoadSimgridChild(std::string* why) {
  ModuleSpec spec;
  spec.what = "SimGrid";
  spec.file_name = "libdtsim-simgrid.so";
  spec.env_var = "DTSIM_SIMGRID_MODULE";
  spec.entry = kSimgridChildSymbol;
#ifdef DTSIM_BUILD_TOOLS_DIR
  spec.build_dir = DTSIM_BUILD_TOOLS_DIR;
#endif
  return reinterpret_cast<SimgridChildMain>(LoadModuleEntry(spec, why));
}

std::string ReadAll(int fd) {
  std::string data;
  char buf[1 << 16];
  for (;;) {
    const ssize_t k = read(fd, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    data.append(buf, static_cast<std::size_t>(k));
  }
  return data;
}

}  // namespace

void WriteAllOrExit(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t k = write(fd, p, size);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) _exit(3);
    p += k;
    size -= static_cast<std::size_t>(k);
  }
}

EngineResult RunSimgridEngine(const plan::Plan& plan, const TaskCosts& costs,
                              const NetworkSpec& network, const SimgridOptions& options) {
  RequireSupported(plan, network, options.stragglers);
  int fds[2];
  std::fflush(nullptr);  // the child's SimGrid may flush stdio: write nothing twice
  if (pipe(fds) != 0) throw InternalError(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw InternalError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // The child dies with this process (killed, even with SIGKILL): the
    // kernel sends SIGKILL when the forking thread ends, and that thread
    // waits for the child below. Should we already be gone, stop now.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    // Keep only stdio and our pipe: a sweep's other threads may be running
    // their own children, whose pipes must see end-of-file when they finish.
    const int out = fds[1];
    close_range(3, static_cast<unsigned>(out) - 1, 0);
    close_range(static_cast<unsigned>(out) + 1, ~0u, 0);
    fds[0] = -1;
    std::string why;
    if (const SimgridChildMain child = LoadSimgridChild(&why)) {
      child(out, plan, costs, network, options);  // writes the result
    } else {
      const char status = 1;  // a setup problem, said as such (not an internal error)
      WriteAllOrExit(out, &status, 1);
      WriteAllOrExit(out, why.data(), why.size());
    }
    close(out);
    _exit(0);
  }
  close(fds[1]);
  const std::string data = ReadAll(fds[0]);
  close(fds[0]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (data.empty())
    throw InternalError("SimGrid run failed (child " +
                        (WIFSIGNALED(wstatus)
                             ? "killed by signal " + std::to_string(WTERMSIG(wstatus))
                             : "exit status " + std::to_string(WEXITSTATUS(wstatus))) +
                        ")");
  if (data[0] == 1) throw UserError(data.substr(1));
  if (data[0] != 0) throw InternalError("SimGrid run failed: " + data.substr(1));
  EngineResult result;
  std::size_t pos = 1;
  auto take = [&](void* dst, std::size_t size) {
    DTSIM_CHECK(pos + size <= data.size(), "short result from the SimGrid child");
    std::memcpy(dst, data.data() + pos, size);
    pos += size;
  };
  std::uint64_t n = 0;
  take(&result.makespan, sizeof result.makespan);
  take(&result.events, sizeof result.events);
  take(&n, sizeof n);
  DTSIM_CHECK(n == plan.num_tasks(), "SimGrid child returned the wrong number of tasks");
  result.timing.resize(n);
  take(result.timing.data(), n * sizeof(TaskTiming));
  return result;
}

}  // namespace dtsim::sim
