// Links whose bandwidth drops, or that go down, for a while during a run
// (config::LinkEvent), and when network work priced on the nominal network
// ends under them: the analytic engine's side of `link_events:`.
//
// Work (a collective, a transfer) progresses at rate s0 / sS of nominal,
// where s0 is its time on the nominal network and sS its time on the network
// as it is while the events active at that moment last (the links of each
// scaled by its bandwidth fraction; a NIC that is down and rerouted, by
// (nics - 1) / nics). Only events on links the work uses count; while a
// link it uses is down and waited for, it makes no progress. So work that
// straddles an event is slowed for the part that overlaps it, and work that
// does not touch the link is not slowed at all.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common/units.h"
#include "config/scenario.h"
#include "sim/network/network.h"

namespace dtsim::sim {

class LinkEventTimeline {
 public:
  // Identifies a piece of work whose prices can be reused: collectives of
  // the same op, algorithm, group and size, transfers of the same ends and
  // size.
  using WorkKey = std::tuple<int, int, std::int64_t, std::uint64_t>;
  // Seconds the work takes on a network.
  using Price = std::function<double(Network&)>;

  // `events` name links of `nominal` (the loader checked them against the
  // cluster of `cluster`).
  LinkEventTimeline(const Network& nominal, const std::vector<config::LinkEvent>& events,
                    const config::ClusterConfig& cluster);

  bool empty() const { return events_.empty(); }
  // When work that takes `ns` on the nominal network, started at `start`,
  // ends. `price` is called a few times per key and state, never per call.
  SimTime End(const WorkKey& key, SimTime start, SimTime ns, const Price& price);

 private:
  struct Event {
    SimTime begin = 0;
    SimTime end = 0;         // kMaxSimTime: until the end of the run
    std::vector<int> links;  // of the network, both directions
    double factor = 1;       // bandwidth kept; 0 = down, waited for
  };
  struct Work {
    std::vector<char> uses;  // per event: the work uses one of its links
    double nominal_s = 0;
    std::map<std::string, double> rate;  // per set of active events: s0 / sS
  };
  Work& Find(const WorkKey& key, const Price& price);
  double Rate(Work& w, const std::string& active, const Price& price);

  Network nominal_;
  std::vector<Event> events_;
  std::vector<SimTime> breakpoints_;  // every begin and end, sorted, unique
  std::map<WorkKey, Work> work_;
};

}  // namespace dtsim::sim
