#include "sim/link_traffic.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <map>
#include <tuple>

#include "sim/cost/collectives.h"
#include "sim/network/network.h"

namespace dtsim::sim {
namespace {

// A link's class and name from its index (network.h's layout: device ports
// up then down, NICs up then down, leaf uplinks up then down).
std::pair<std::string, std::string> ClassAndName(const Network& net, int link) {
  const int r = net.num_ranks(), n = net.num_nodes();
  if (link < 2 * r) {
    const bool up = link < r;
    return {"device_port", (up ? "dev_up" : "dev_down") + std::to_string(up ? link : link - r)};
  }
  link -= 2 * r;
  if (link < 2 * n) {
    const bool up = link < n;
    return {"nic", (up ? "nic_up" : "nic_down") + std::to_string(up ? link : link - n)};
  }
  link -= 2 * n;
  const int leaves = (net.num_links() - 2 * r - 2 * n) / 2;
  const bool up = link < leaves;
  return {"leaf_uplink", (up ? "leaf_up" : "leaf_down") + std::to_string(up ? link : link - leaves)};
}

// Bytes per link of one piece of network work, its copies and its span.
struct Work {
  const std::vector<std::pair<int, double>>* links;
  int copies;
  SimTime start, end;
};

// Calls `fn(work)` for each collective and send of iterations >= `first`.
template <typename Fn>
void ForEachWork(const Prediction& p, const Network& net, int first, Fn fn) {
  std::map<std::tuple<int, std::int32_t, std::uint64_t>, std::vector<std::pair<int, double>>> cache;
  for (const plan::Collective& c : p.plan.collectives()) {
    if (c.iteration < first || c.via_host || c.tasks.empty()) continue;
    const auto key = std::make_tuple(static_cast<int>(c.op) * 16 + static_cast<int>(c.algorithm),
                                     c.group, std::bit_cast<std::uint64_t>(c.bytes));
    auto it = cache.find(key);
    if (it == cache.end()) {
      const auto& members = p.plan.groups()[static_cast<std::size_t>(c.group)];
      std::map<int, double> per_link;
      for (const CollectiveStep& step :
           CollectiveSchedule(net, c.op, c.algorithm, std::vector<int>(members.begin(), members.end()),
                              c.bytes))
        for (const Transfer& t : step.transfers)
          for (int l : net.RouteLinks(t.src, t.dst)) per_link[l] += t.bytes * step.repeat;
      it = cache.emplace(key, std::vector<std::pair<int, double>>(per_link.begin(), per_link.end()))
               .first;
    }
    SimTime start = kMaxSimTime, end = 0;
    for (plan::TaskId t : c.tasks) {
      const TaskTiming& tm = p.engine.timing[static_cast<std::size_t>(t)];
      start = std::min(start, tm.start);
      end = std::max(end, tm.end);
    }
    fn(Work{&it->second, c.copies, start, end});
  }
  std::vector<std::pair<int, double>> links;
  for (std::size_t t = 0; t < p.plan.num_tasks(); ++t) {
    const plan::Task& task = p.plan.tasks()[t];
    if (task.kind != plan::TaskKind::kSend || task.iteration < first || task.bytes <= 0) continue;
    links.clear();
    for (int l : net.RouteLinks(task.rank, task.peer)) links.push_back({l, task.bytes});
    const TaskTiming& tm = p.engine.timing[t];
    fn(Work{&links, task.copies, tm.start, tm.end});
  }
}

}  // namespace

LinkTraffic ComputeLinkTraffic(const Prediction& p, int top) {
  const Network net(p.network);
  LinkTraffic out;
  const int first = p.plan.iterations > 1 ? 1 : 0;
  out.measured_iterations = std::max(1, p.plan.iterations - first);
  const double steps = out.measured_iterations;
  const auto nl = static_cast<std::size_t>(net.num_links());
  std::vector<double> bytes(nl, 0), with_copies(nl, 0);
  ForEachWork(p, net, first, [&](const Work& w) {
    for (const auto& [l, b] : *w.links) {
      bytes[static_cast<std::size_t>(l)] += b;
      with_copies[static_cast<std::size_t>(l)] += b * w.copies;
    }
  });
  const double step_s = p.metrics.step_time_s;
  const auto utilisation = [&](std::size_t l) {
    const double bw = net.LinkBandwidth(static_cast<int>(l));
    return step_s > 0 && bw > 0 ? bytes[l] / steps / (bw * step_s) : 0.0;
  };
  std::map<std::string, LinkClassLoad> classes;
  for (std::size_t l = 0; l < nl; ++l) {
    LinkClassLoad& c = classes[ClassAndName(net, static_cast<int>(l)).first];
    ++c.links;
    c.bytes_per_step += with_copies[l] / steps;
    if (bytes[l] <= 0) continue;
    ++c.busy_links;
    c.max_utilisation = std::max(c.max_utilisation, utilisation(l));
    c.mean_utilisation += utilisation(l);
  }
  for (const char* name : {"device_port", "nic", "leaf_uplink"}) {
    auto it = classes.find(name);
    if (it == classes.end() || it->second.busy_links == 0) continue;
    it->second.link_class = name;
    it->second.mean_utilisation /= it->second.busy_links;
    out.classes.push_back(it->second);
  }
  // The busiest links by utilisation (ties: the lower index first).
  std::vector<std::size_t> order;
  for (std::size_t l = 0; l < nl; ++l)
    if (bytes[l] > 0) order.push_back(l);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return utilisation(a) > utilisation(b); });
  order.resize(std::min(order.size(), static_cast<std::size_t>(std::max(1, top))));
  std::map<int, std::size_t> slot;  // link -> index in busiest
  std::vector<std::map<SimTime, double>> deltas(order.size());
  for (std::size_t l : order) {
    LinkLoad x;
    std::tie(x.link_class, x.name) = ClassAndName(net, static_cast<int>(l));
    x.bandwidth_bytes_per_s = net.LinkBandwidth(static_cast<int>(l));
    x.bytes_per_step = bytes[l] / steps;
    x.utilisation = utilisation(l);
    slot[static_cast<int>(l)] = out.busiest.size();
    out.busiest.push_back(std::move(x));
  }
  ForEachWork(p, net, first, [&](const Work& w) {
    if (w.end <= w.start) return;
    const double seconds = NsToSeconds(w.end - w.start);
    for (const auto& [l, b] : *w.links) {
      auto it = slot.find(l);
      if (it == slot.end()) continue;
      deltas[it->second][w.start] += b / seconds;
      deltas[it->second][w.end] -= b / seconds;
    }
  });
  for (std::size_t i = 0; i < order.size(); ++i) {
    double rate = 0;
    for (const auto& [t, d] : deltas[i]) {
      rate += d;
      if (rate < 1e-6 * out.busiest[i].bandwidth_bytes_per_s) rate = 0;  // summation residue
      out.busiest[i].rate.push_back({t, rate});
    }
  }
  return out;
}

nlohmann::ordered_json LinkTrafficJson(const LinkTraffic& traffic) {
  nlohmann::ordered_json j;
  j["measured_iterations"] = traffic.measured_iterations;
  j["classes"] = nlohmann::ordered_json::array();
  for (const LinkClassLoad& c : traffic.classes)
    j["classes"].push_back({{"class", c.link_class},
                            {"links", c.links},
                            {"busy_links", c.busy_links},
                            {"bytes_per_step", c.bytes_per_step},
                            {"max_utilisation", c.max_utilisation},
                            {"mean_utilisation", c.mean_utilisation}});
  j["busiest"] = nlohmann::ordered_json::array();
  for (const LinkLoad& l : traffic.busiest)
    j["busiest"].push_back({{"link", l.name},
                            {"class", l.link_class},
                            {"bandwidth_bytes_per_s", l.bandwidth_bytes_per_s},
                            {"bytes_per_step", l.bytes_per_step},
                            {"utilisation", l.utilisation}});
  return j;
}

std::string LinkTrafficLog(const LinkTraffic& traffic) {
  std::string out;
  char line[200];
  for (const LinkClassLoad& c : traffic.classes) {
    std::snprintf(line, sizeof line,
                  "link traffic %-12s %d of %d links busy, %.3f GB per step, utilisation max "
                  "%.1f%%, mean %.1f%%\n",
                  c.link_class.c_str(), c.busy_links, c.links, c.bytes_per_step / 1e9,
                  100 * c.max_utilisation, 100 * c.mean_utilisation);
    out += line;
  }
  for (const LinkLoad& l : traffic.busiest) {
    std::snprintf(line, sizeof line, "  busiest %-12s %.3f GB per step, utilisation %.1f%%\n",
                  l.name.c_str(), l.bytes_per_step / 1e9, 100 * l.utilisation);
    out += line;
  }
  return out;
}

std::vector<nlohmann::ordered_json> LinkCounterEvents(const LinkTraffic& traffic, int pid) {
  std::vector<nlohmann::ordered_json> events;
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid},
                    {"args", {{"name", "network links"}}}});
  events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid},
                    {"args", {{"sort_index", pid}}}});
  for (const LinkLoad& l : traffic.busiest)
    for (const auto& [t, rate] : l.rate)
      events.push_back({{"name", l.name},
                        {"ph", "C"},
                        {"pid", pid},
                        {"ts", static_cast<double>(t) / 1000.0},
                        {"args", {{"GB/s", rate / 1e9}}}});
  return events;
}

}  // namespace dtsim::sim
