#include "sim/network/link_events.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace dtsim::sim {

LinkEventTimeline::LinkEventTimeline(const Network& nominal,
                                     const std::vector<config::LinkEvent>& events,
                                     const config::ClusterConfig& cluster)
    : nominal_(nominal) {
  for (const config::LinkEvent& e : events) {
    Event ev;
    ev.begin = SecondsToNs(e.at_s);
    ev.end = e.duration_s > 0 ? AddSimTime(ev.begin, SecondsToNs(e.duration_s)) : kMaxSimTime;
    for (const bool up : {true, false}) {
      if (e.leaf >= 0) {
        ev.links.push_back(nominal.LeafLink(e.leaf, up));
      } else if (e.device >= 0) {
        ev.links.push_back(nominal.DeviceLink(e.node * cluster.devices_per_node + e.device, up));
      } else {
        ev.links.push_back(nominal.NicLink(e.node, up));
      }
    }
    ev.factor = e.bandwidth;
    if (e.bandwidth == 0 && e.when_down == config::LinkDownPolicy::kReroute)
      ev.factor = (cluster.NicsOfNode(e.node) - 1.0) / cluster.NicsOfNode(e.node);
    breakpoints_.push_back(ev.begin);
    if (ev.end < kMaxSimTime) breakpoints_.push_back(ev.end);
    events_.push_back(std::move(ev));
  }
  std::sort(breakpoints_.begin(), breakpoints_.end());
  breakpoints_.erase(std::unique(breakpoints_.begin(), breakpoints_.end()), breakpoints_.end());
}

LinkEventTimeline::Work& LinkEventTimeline::Find(const WorkKey& key, const Price& price) {
  auto it = work_.find(key);
  if (it != work_.end()) return it->second;
  Work w;
  std::vector<char> used(static_cast<std::size_t>(nominal_.num_links()), 0);
  nominal_.RecordUse(&used);
  w.nominal_s = price(nominal_);
  nominal_.RecordUse(nullptr);
  for (const Event& e : events_) {
    char uses = 0;
    for (int l : e.links) uses |= used[static_cast<std::size_t>(l)];
    w.uses.push_back(uses);
  }
  return work_.emplace(key, std::move(w)).first->second;
}

double LinkEventTimeline::Rate(Work& w, const std::string& active, const Price& price) {
  auto it = w.rate.find(active);
  if (it != w.rate.end()) return it->second;
  Network net = nominal_;
  for (std::size_t i = 0; i < events_.size(); ++i) {
    if (active[i] == '0') continue;
    // Two events on one link: the lower bandwidth holds.
    for (int l : events_[i].links) net.ScaleLink(l, events_[i].factor);
  }
  const double seconds = price(net);
  const double rate = seconds > 0 ? w.nominal_s / seconds : 1.0;
  return w.rate.emplace(active, rate).first->second;
}

SimTime LinkEventTimeline::End(const WorkKey& key, SimTime start, SimTime ns, const Price& price) {
  if (ns <= 0 || events_.empty()) return AddSimTime(start, ns);
  Work& w = Find(key, price);
  if (std::find(w.uses.begin(), w.uses.end(), 1) == w.uses.end()) return AddSimTime(start, ns);
  SimTime t = start;
  double remaining = static_cast<double>(ns);  // nominal nanoseconds of work left
  std::string active(events_.size(), '0');
  for (;;) {
    bool stalled = false, any = false;
    for (std::size_t i = 0; i < events_.size(); ++i) {
      const bool on = w.uses[i] && events_[i].begin <= t && t < events_[i].end;
      active[i] = on ? '1' : '0';
      any |= on;
      stalled |= on && events_[i].factor == 0;
    }
    const auto next_it = std::upper_bound(breakpoints_.begin(), breakpoints_.end(), t);
    const SimTime next = next_it == breakpoints_.end() ? kMaxSimTime : *next_it;
    if (stalled) {
      DTSIM_CHECK(next < kMaxSimTime, "a link that is down is never repaired");
      t = next;
      continue;
    }
    if (any) {
      // Two events on one link scale it twice; the lower fraction is what
      // a link can carry, so scale by that alone.
      for (std::size_t i = 0; i < events_.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (active[i] == '1' && active[j] == '1' && events_[i].links == events_[j].links)
            active[events_[i].factor < events_[j].factor ? j : i] = '0';
    }
    const double rate = any ? Rate(w, active, price) : 1.0;
    const double span = static_cast<double>(next - t);
    if (next == kMaxSimTime || span * rate >= remaining)
      return AddSimTime(t, static_cast<SimTime>(std::ceil(remaining / rate)));
    remaining -= span * rate;
    t = next;
  }
}

}  // namespace dtsim::sim
