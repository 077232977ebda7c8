// The SimGrid module, libdtsim-simgrid.so beside the dtsim executable: the
// platform and the run of sim/engine/simgrid_engine.h, loaded only by the child
// process RunSimgridEngine forks, so that dtsim itself starts without
// SimGrid (and ns-3, which SimGrid's Debian build pulls in): about 90 ms of
// start-up on a 2-core VM.
#include <malloc.h>
#include <unistd.h>
#include <xbt/log.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <simgrid/kernel/ProfileBuilder.hpp>
#include <simgrid/s4u.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/error.h"
#include "sim/cost/collectives.h"
#include "sim/engine/simgrid_child.h"
#include "sim/engine/stragglers.h"

// GCC defines __SANITIZE_ADDRESS__ under -fsanitize=address; clang reports
// it through __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define DTSIM_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DTSIM_ADDRESS_SANITIZER 1
#endif
#endif
#ifndef DTSIM_ADDRESS_SANITIZER
#define DTSIM_ADDRESS_SANITIZER 0
#endif

namespace dtsim::sim {
namespace {

namespace sg4 = simgrid::s4u;
using plan::TaskId;

constexpr double kHostSpeed = 1e9;  // flop/s per core: a task of N ns executes N flops
// Plans of more ranks run their actors without stack guard pages (ChildMain).
constexpr plan::RankId kGuardedRanks = 8192;

SimTime NowNs() { return std::llround(sg4::Engine::get_clock() * 1e9); }

std::size_t StreamOf(const plan::Task& t) {
  return static_cast<std::size_t>(t.rank) * plan::kNumStreams + static_cast<std::size_t>(t.stream);
}

// The cluster as a SimGrid platform (see the header for the layout).
class Platform {
 public:
  // `stragglers` (may be nullptr) sets the speed and speed profile of the
  // first stragglers->num_ranks() hosts.
  Platform(const Network& network, const std::set<std::pair<int, int>>& pairs,
           const StragglerModel* stragglers, const std::vector<SimgridLinkEvent>& events)
      : net_(network) {
    const NetworkSpec& s = network.spec();
    const int r = network.num_ranks(), n = network.num_nodes();
    const int leaves = s.fat_tree ? (n + s.nodes_per_leaf - 1) / s.nodes_per_leaf : 0;
    zone_ = sg4::create_full_zone("cluster");
    simgrid::kernel::profile::Profile* interference = InterferenceProfile(stragglers);
    for (int i = 0; i < r; ++i) {
      const bool slowed = stragglers != nullptr && i < stragglers->num_ranks();
      double speed = kHostSpeed;
      if (slowed) speed /= stragglers->FixedFactor(i);
      const bool interfered = slowed && stragglers->Interfered(i);
      if (interfered && interference == nullptr) speed /= stragglers->InterferenceSlowdown();
      sg4::Host* host = zone_->create_host("rank" + std::to_string(i), speed);
      host->set_core_count(plan::kNumStreams);
      if (interfered && interference != nullptr) host->set_speed_profile(interference);
      hosts_.push_back(host->seal());
    }
    using Kind = SimgridLinkEvent::Link;
    auto link = [&](const std::string& name, double bw, double latency, Kind kind,
                    int index) -> sg4::Link* {
      if (bw <= 0) return nullptr;  // never routed over (one device per node, one node)
      sg4::Link* l = zone_->create_link(name, bw)->set_latency(latency);
      if (simgrid::kernel::profile::Profile* p = BandwidthProfile(name, bw, events, kind, index))
        l->set_bandwidth_profile(p);
      return l->seal();
    };
    // Each node's own links (NetworkSpec's per-node values of a mixed
    // cluster); the bandwidths are Network's, link by link.
    for (int i = 0; i < r; ++i) {
      const int node = network.NodeOf(i);
      const double bw = network.LinkBandwidth(network.DeviceLink(i, true));
      dev_up_.push_back(link("dev_up" + std::to_string(i), bw, s.IntraLatency(node), Kind::kDevice, i));
      dev_down_.push_back(link("dev_down" + std::to_string(i), bw, 0, Kind::kDevice, i));
    }
    for (int i = 0; i < n; ++i) {
      const double bw = network.LinkBandwidth(network.NicLink(i, true));
      nic_up_.push_back(link("nic_up" + std::to_string(i), bw, s.NetLatency(i), Kind::kNic, i));
      nic_down_.push_back(link("nic_down" + std::to_string(i), bw, 0, Kind::kNic, i));
    }
    for (int i = 0; i < leaves; ++i) {
      const double leaf_bw = network.LinkBandwidth(network.LeafLink(i, true));
      leaf_up_.push_back(
          link("leaf_up" + std::to_string(i), leaf_bw, s.spine_latency_s, Kind::kLeaf, i));
      leaf_down_.push_back(link("leaf_down" + std::to_string(i), leaf_bw, 0, Kind::kLeaf, i));
    }
    for (const auto& [src, dst] : pairs) {
      std::vector<sg4::LinkInRoute> route;
      for (sg4::Link* l : Route(src, dst)) {
        DTSIM_CHECK(l != nullptr, "route over a link of zero bandwidth");
        route.emplace_back(l);
      }
      zone_->add_route(hosts_[static_cast<std::size_t>(src)]->get_netpoint(),
                       hosts_[static_cast<std::size_t>(dst)]->get_netpoint(), nullptr, nullptr,
                       route,
                       /*symmetrical=*/false);
    }
    zone_->seal();
  }

  sg4::Host* host(int rank) const { return hosts_[static_cast<std::size_t>(rank)]; }

  // The interference windows as a speed profile: the speed scale is 1/s
  // from k P and 1 from k P + D (SimGrid repeats the list every `P`, the
  // periodicity argument, counted from its first date 0):
  //
  //   scale 1   |   +-----------+   +-----------+
  //   scale 1/s |---+           +---+           +---
  //             0   D           P  P+D          2P
  //
  // nullptr when no rank has windows, or when D == P (the hosts then run at
  // speed / s throughout, see the constructor).
  static simgrid::kernel::profile::Profile* InterferenceProfile(const StragglerModel* stragglers) {
    if (stragglers == nullptr || !stragglers->HasInterference()) return nullptr;
    const SimTime period = stragglers->InterferencePeriodNs();
    const SimTime window = stragglers->InterferenceWindowNs();
    if (window >= period) return nullptr;
    char events[128];
    std::snprintf(events, sizeof events, "0 %.17g\n%.17g 1\n",
                  1.0 / stragglers->InterferenceSlowdown(), NsToSeconds(window));
    return simgrid::kernel::profile::ProfileBuilder::from_string("interference", events,
                                                                 NsToSeconds(period));
  }

  // The bandwidth profile of link `name` (of `kind` and `index`, `bw`
  // bytes/s) under `events`: at each event's start and end, the lowest
  // factor of the events then active (1 when none) x `bw` (SimGrid's link
  // bandwidth profiles hold absolute values, not a share of the peak as
  // host speed profiles do); nullptr when no event names it.
  static simgrid::kernel::profile::Profile* BandwidthProfile(
      const std::string& name, double bw, const std::vector<SimgridLinkEvent>& events,
      SimgridLinkEvent::Link kind, int index) {
    std::vector<const SimgridLinkEvent*> mine;
    std::set<double> dates;
    for (const SimgridLinkEvent& e : events)
      if (e.link == kind && e.index == index) {
        mine.push_back(&e);
        dates.insert(e.begin_s);
        if (e.end_s >= 0) dates.insert(e.end_s);
      }
    if (mine.empty()) return nullptr;
    std::string text;
    char line[96];
    for (const double t : dates) {
      double factor = 1;
      for (const SimgridLinkEvent* e : mine)
        if (e->begin_s <= t && (e->end_s < 0 || t < e->end_s)) factor = std::min(factor, e->factor);
      std::snprintf(line, sizeof line, "%.17g %.17g\n", t, factor * bw);
      text += line;
    }
    return simgrid::kernel::profile::ProfileBuilder::from_string(name + "_events", text, -1);
  }

  // Network::Route's links and latency.
  double PathLatency(int src, int dst) const {
    double latency = 0;
    for (sg4::Link* l : Route(src, dst)) latency += l->get_latency();
    return latency;
  }

 private:
  std::vector<sg4::Link*> Route(int src, int dst) const {
    const NetworkSpec& s = net_.spec();
    const int src_node = net_.NodeOf(src), dst_node = net_.NodeOf(dst);
    if (src_node == dst_node)
      return {dev_up_[static_cast<std::size_t>(src)], dev_down_[static_cast<std::size_t>(dst)]};
    std::vector<sg4::Link*> links{nic_up_[static_cast<std::size_t>(src_node)]};
    if (s.fat_tree) {
      const int src_leaf = src_node / s.nodes_per_leaf, dst_leaf = dst_node / s.nodes_per_leaf;
      if (src_leaf != dst_leaf) {
        links.push_back(leaf_up_[static_cast<std::size_t>(src_leaf)]);
        links.push_back(leaf_down_[static_cast<std::size_t>(dst_leaf)]);
      }
    }
    links.push_back(nic_down_[static_cast<std::size_t>(dst_node)]);
    return links;
  }

  const Network& net_;
  sg4::NetZone* zone_ = nullptr;
  std::vector<sg4::Host*> hosts_;
  std::vector<sg4::Link*> dev_up_, dev_down_, nic_up_, nic_down_, leaf_up_, leaf_down_;
};

// The plan's execution as SimGrid actors. Actors run one at a time (SimGrid
// schedules them), so they share this state without locks.
class Run {
 public:
  Run(const plan::Plan& plan, const TaskCosts& costs, const Network& network,
      const SimgridOptions& options)
      : plan_(plan), costs_(costs), options_(options) {
    const std::size_t n = plan.num_tasks();
    DTSIM_CHECK(costs.task_ns.size() == n, "one cost per task");
    result_.timing.assign(n, {});
    done_.assign(n, false);
    remaining_.assign(n, 0);
    succ_.resize(n);
    for (std::size_t t = 0; t < n; ++t) {
      auto deps = plan.deps(static_cast<TaskId>(t));
      const plan::Task& task = plan.tasks()[t];
      remaining_[t] = task.min_deps > 0 ? task.min_deps : static_cast<std::int32_t>(deps.size());
      for (TaskId d : deps) succ_[static_cast<std::size_t>(d)].push_back(static_cast<TaskId>(t));
    }
    // Schedules, priced once per (algorithm, group, bytes), and the host
    // pairs that need a route.
    std::set<std::pair<int, int>> pairs;
    std::map<std::tuple<int, std::int32_t, std::uint64_t>, std::size_t> cache;
    for (const plan::Collective& c : plan.collectives()) {
      const auto key = std::make_tuple(static_cast<int>(c.op) * 16 + static_cast<int>(c.algorithm),
                                       c.group, std::bit_cast<std::uint64_t>(c.bytes));
      auto it = cache.find(key);
      if (it == cache.end()) {
        const auto& members = plan.groups()[static_cast<std::size_t>(c.group)];
        schedules_.push_back(CollectiveSchedule(network, c.op, c.algorithm,
                                                std::vector<int>(members.begin(), members.end()),
                                                c.bytes));
        for (const CollectiveStep& step : schedules_.back())
          for (const Transfer& tr : step.transfers)
            if (tr.src != tr.dst) pairs.emplace(tr.src, tr.dst);
        it = cache.emplace(key, schedules_.size() - 1).first;
      }
      schedule_of_.push_back(it->second);
    }
    for (const plan::Task& t : plan.tasks())
      if (t.kind == plan::TaskKind::kSend && t.rank != t.peer) pairs.emplace(t.rank, t.peer);
    platform_.emplace(network, pairs, options.stragglers, options.link_events);
    collective_latency_s_ = network.spec().collective_latency_s;
    stragglers_ = options.stragglers;
    delayed_until_.assign(static_cast<std::size_t>(plan.num_ranks()), -1);
    const std::size_t streams = static_cast<std::size_t>(plan.num_ranks()) * plan::kNumStreams;
    unordered_.assign(streams, false);
    for (std::size_t s = 0; s < streams; ++s)
      unordered_[s] = plan.IsServer(static_cast<plan::RankId>(s / plan::kNumStreams));
  }

  EngineResult Execute() {
    const std::size_t n = plan_.num_tasks();
    ready_.assign(n, false);
    ready_order_.resize(unordered_.size());
    waiting_for_.assign(unordered_.size(), -1);
    for (std::size_t s = 0; s < unordered_.size(); ++s)
      stream_ready_.push_back(sg4::Semaphore::create(0));
    arrived_.assign(plan_.collectives().size(), 0);
    collective_done_.resize(plan_.collectives().size());
    // Stream queues in program order; a send gets an actor when it is
    // ready (MakeReady).
    std::vector<std::vector<TaskId>> queues(static_cast<std::size_t>(plan_.num_ranks()) *
                                            plan::kNumStreams);
    for (std::size_t t = 0; t < n; ++t) {
      const plan::Task& task = plan_.tasks()[t];
      if (task.kind != plan::TaskKind::kSend) queues[StreamOf(task)].push_back(static_cast<TaskId>(t));
    }
    for (std::size_t s = 0; s < queues.size(); ++s) {
      if (queues[s].empty()) continue;
      const int rank = static_cast<int>(s / plan::kNumStreams);
      if (unordered_[s]) {
        sg4::Actor::create("server_stream" + std::to_string(s), platform_->host(rank),
                           [this, s, count = queues[s].size()] { RunServerStream(s, count); });
      } else {
        sg4::Actor::create("stream" + std::to_string(s), platform_->host(rank),
                           [this, q = std::move(queues[s])] { RunStream(q); });
      }
    }
    // Tasks without dependencies are ready from the start; the actors
    // above take them once the engine runs.
    for (std::size_t t = 0; t < n; ++t)
      if (remaining_[t] == 0) MakeReady(static_cast<TaskId>(t));
    sg4::Engine::get_instance()->run();
    for (std::size_t t = 0; t < n; ++t)
      DTSIM_CHECK(done_[t], "plan deadlocked on the SimGrid engine: a task never ran");
    return std::move(result_);
  }

 private:
  // An ordered stream: its tasks in program order, each once it is ready
  // (MakeReady wakes the stream when the task it waits for becomes ready).
  void RunStream(const std::vector<TaskId>& queue) {
    for (TaskId id : queue) {
      const std::size_t stream = StreamOf(plan_.task(id));
      if (!ready_[static_cast<std::size_t>(id)]) {
        waiting_for_[stream] = id;
        stream_ready_[stream]->acquire();
        waiting_for_[stream] = -1;
      }
      RunTask(id);
    }
  }

  // A server stream: its `count` tasks in the order they become ready.
  // Tasks that become ready at the same instant from different finishing
  // tasks come in the order SimGrid runs those actors, which may differ from
  // the analytic engine's event order.
  void RunServerStream(std::size_t stream, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) {
      stream_ready_[stream]->acquire();
      const TaskId id = ready_order_[stream].front();
      ready_order_[stream].pop_front();
      RunTask(id);
    }
  }

  // Runs task `id` (not a send) on the calling stream actor.
  void RunTask(TaskId id) {
    const plan::Task& task = plan_.task(id);
    if (task.kind == plan::TaskKind::kCollective) {
      RunCollectiveMember(id);
      return;
    }
    const auto t = static_cast<std::size_t>(id);
    result_.timing[t].start = NowNs();
    double flops = static_cast<double>(costs_.task_ns[t]);
    if (stragglers_ != nullptr && task.rank < stragglers_->num_ranks()) {
      // As the analytic engine's hooks: the rank-iteration's delay before its
      // first compute task, then the lognormal part of the factor (the fixed
      // part is the host's speed).
      auto& seen = delayed_until_[static_cast<std::size_t>(task.rank)];
      if (task.iteration > seen) {
        seen = task.iteration;
        const SimTime delay = stragglers_->ExtraDelayNs(task.rank, task.iteration);
        if (delay > 0) sg4::this_actor::sleep_for(NsToSeconds(delay));
      }
      flops *= stragglers_->ComputeFactor(task.rank, task.iteration) /
               stragglers_->FixedFactor(task.rank);
    }
    if (flops > 0) {
      ++result_.events;
      sg4::this_actor::execute(flops);
    }
    Finish(id);
  }

  // Task `id` has the dependencies it waits for: start its send actor, or
  // wake its stream actor if it waits for this task (a server stream takes
  // its tasks in this order).
  void MakeReady(TaskId id) {
    const plan::Task& task = plan_.task(id);
    if (task.kind == plan::TaskKind::kSend) {
      sg4::Actor::create("send", platform_->host(task.rank), [this, id] { RunSend(id); });
      return;
    }
    const std::size_t stream = StreamOf(task);
    if (unordered_[stream]) {
      ready_order_[stream].push_back(id);
      stream_ready_[stream]->release();
      return;
    }
    ready_[static_cast<std::size_t>(id)] = true;
    if (waiting_for_[stream] == id) stream_ready_[stream]->release();
  }

  // A ready send: its transfer, then its successors.
  void RunSend(TaskId id) {
    const plan::Task& task = plan_.task(id);
    result_.timing[static_cast<std::size_t>(id)].start = NowNs();
    if (task.rank != task.peer) {
      ++result_.events;
      sg4::Comm::sendto(platform_->host(task.rank), platform_->host(task.peer),
                        static_cast<std::uint64_t>(std::llround(task.bytes)));
    }
    Finish(id);
  }

  // The last member to arrive plays the collective; the others wait for it.
  void RunCollectiveMember(TaskId id) {
    const auto c = static_cast<std::size_t>(plan_.task(id).collective);
    const plan::Collective& coll = plan_.collectives()[c];
    if (++arrived_[c] < static_cast<std::int32_t>(coll.tasks.size())) {
      if (!collective_done_[c]) collective_done_[c] = sg4::Semaphore::create(0);
      const sg4::SemaphorePtr done = collective_done_[c];  // alive until this member wakes
      done->acquire();
      return;
    }
    const SimTime start = NowNs();
    for (TaskId m : coll.tasks) result_.timing[static_cast<std::size_t>(m)].start = start;
    if (collective_latency_s_ > 0) sg4::this_actor::sleep_for(collective_latency_s_);
    for (const CollectiveStep& step : schedules_[schedule_of_[c]]) {
      if (step.repeat > options_.max_step_repeats) {
        double latency = 0;
        for (const Transfer& tr : step.transfers)
          if (tr.src != tr.dst) latency = std::max(latency, platform_->PathLatency(tr.src, tr.dst));
        sg4::this_actor::sleep_for((step.repeat - 1) * latency);
        PlayStep(step, step.repeat);
      } else {
        for (int k = 0; k < step.repeat; ++k) PlayStep(step, 1);
      }
    }
    for (TaskId m : coll.tasks) Finish(m);
    for (std::size_t k = 1; k < coll.tasks.size(); ++k) collective_done_[c]->release();
    collective_done_[c] = nullptr;  // the waiting members hold their own references
  }

  // All of the step's transfers at once, `scale` x their bytes; returns when
  // the last has arrived.
  void PlayStep(const CollectiveStep& step, int scale) {
    std::vector<sg4::CommPtr> comms;
    comms.reserve(step.transfers.size());
    for (const Transfer& tr : step.transfers) {
      if (tr.src == tr.dst) continue;
      comms.push_back(
          sg4::Comm::sendto_async(platform_->host(tr.src), platform_->host(tr.dst),
                                  static_cast<std::uint64_t>(std::llround(tr.bytes * scale))));
    }
    result_.events += comms.size();
    sg4::Comm::wait_all(comms);
  }

  void Finish(TaskId id) {
    const auto t = static_cast<std::size_t>(id);
    const SimTime now = NowNs();
    done_[t] = true;
    result_.timing[t].end = now;
    result_.makespan = std::max(result_.makespan, now);
    for (TaskId succ : succ_[t]) {
      const auto s = static_cast<std::size_t>(succ);
      if (--remaining_[s] == 0) {
        result_.timing[s].ready = now;
        MakeReady(succ);
      }
    }
  }

  const plan::Plan& plan_;
  const TaskCosts& costs_;
  const SimgridOptions& options_;
  std::optional<Platform> platform_;
  double collective_latency_s_ = 0;
  std::vector<std::vector<CollectiveStep>> schedules_;
  std::vector<std::size_t> schedule_of_;  // per collective
  EngineResult result_;
  std::vector<bool> done_;
  std::vector<std::int32_t> remaining_;
  std::vector<std::vector<TaskId>> succ_;
  std::vector<bool> ready_;                         // per task (ordered streams): deps met
  std::vector<std::int32_t> arrived_;               // per collective: members arrived
  // Per collective: wakes the members waiting for the last (created by the
  // first to wait, released once played).
  std::vector<sg4::SemaphorePtr> collective_done_;
  std::vector<bool> unordered_;                     // per stream: a server's (ready order)
  std::vector<std::deque<TaskId>> ready_order_;     // per server stream: ready tasks, in order
  // Per stream: a server stream's count of ready_order_; an ordered
  // stream's wake-up when waiting_for_ becomes ready.
  std::vector<sg4::SemaphorePtr> stream_ready_;
  std::vector<TaskId> waiting_for_;                 // per ordered stream: its blocked head, or -1
  const StragglerModel* stragglers_ = nullptr;      // options.stragglers
  std::vector<int> delayed_until_;  // per rank: last iteration whose delay was applied
};

}  // namespace

// Message layout: status byte (0 ok, 1 user error, 2 internal error); then
// for ok: makespan, events, task count, (start, end, ready) per task; else
// the error text.
void ChildMain(int fd, const plan::Plan& plan, const TaskCosts& costs, const NetworkSpec& spec,
               const SimgridOptions& options) {
  char status = 2;
  std::string error;
  EngineResult result;
  try {
    const std::string log = "root.thres:" + options.log_threshold;
    xbt_log_control_set(log.c_str());
    // The context factory is chosen when the engine starts, from its
    // command line. Under AddressSanitizer, SimGrid's default contexts
    // switch stacks by hand (Debian's build lacks ASan's fiber
    // annotations), which ASan's stack checks take for use-after-return;
    // system threads are contexts it understands.
    std::string program = "dtsim";
    std::string factory = "--cfg=contexts/factory:thread";
    std::vector<char*> argv{program.data()};
    if (DTSIM_ADDRESS_SANITIZER) argv.push_back(factory.data());
    int argc = static_cast<int>(argv.size());
    argv.push_back(nullptr);
    sg4::Engine engine(&argc, argv.data());
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/crosstraffic:0");
    sg4::Engine::set_config("network/TCP-gamma:0");
    // Every actor's stack is one memory mapping, two with its guard page;
    // Linux allows 65,530 per process by default (vm.max_map_count). Large
    // plans (a 16,384-GPU plan has 32,768 stream actors, and the sends in
    // flight) run without guard pages. SimGrid then callocs the stacks: a
    // fixed mmap threshold keeps each one a fresh mapping, whose untouched
    // pages take no memory (with glibc's adaptive threshold, stacks freed
    // by finished sends raise it, and later stacks come zeroed, all 8 MiB
    // resident, from the heap).
    if (plan.num_ranks() > kGuardedRanks) {
      sg4::Engine::set_config("contexts/guard-size:0");
      mallopt(M_MMAP_THRESHOLD, 1 << 20);
    }
    for (const std::string& c : options.config) sg4::Engine::set_config(c);
    Network network(spec);
    Run run(plan, costs, network, options);
    result = run.Execute();
    status = 0;
  } catch (const UserError& e) {
    status = 1;
    error = e.message();
  } catch (const std::exception& e) {
    error = e.what();
  }
  WriteAllOrExit(fd, &status, 1);
  if (status == 0) {
    const std::uint64_t n = result.timing.size();
    WriteAllOrExit(fd, &result.makespan, sizeof result.makespan);
    WriteAllOrExit(fd, &result.events, sizeof result.events);
    WriteAllOrExit(fd, &n, sizeof n);
    WriteAllOrExit(fd, result.timing.data(), n * sizeof(TaskTiming));
  } else {
    WriteAllOrExit(fd, error.data(), error.size());
  }
}


}  // namespace dtsim::sim

extern "C" __attribute__((visibility("default"))) void dtsim_simgrid_child_main(
    int fd, const dtsim::plan::Plan& plan, const dtsim::sim::TaskCosts& costs,
    const dtsim::sim::NetworkSpec& spec, const dtsim::sim::SimgridOptions& options) {
  dtsim::sim::ChildMain(fd, plan, costs, spec, options);
}
