// Traffic per network link of a simulated run (outputs.link_traffic): the
// bytes each link carries per step and its utilisation, per link class and
// for the busiest links, and the busiest links' bandwidth over time for the
// timeline's counter tracks.
//
// Links are those of sim/network/network.h (and of the SimGrid platform,
// sim/engine/simgrid_engine.h), one per direction:
//   device_port  a device's port into its node's switch (dev_up/dev_down)
//   nic          a node's NICs together (nic_up/nic_down)
//   leaf_uplink  a fat-tree leaf's uplinks to the spine (leaf_up/leaf_down)
// Bytes: every transfer of the measured iterations (the report's: those
// after the first when there are several) routed over its path; a
// collective's transfers are those of its schedule (sim/cost/collectives.h),
// the same on both engines. Per step = their sum / measured iterations.
// Utilisation = bytes per step / (bandwidth x step time): the share of the
// step the link would be busy at full bandwidth (the same definition on
// both engines; the step time is the engine's). Symmetric plans (one rank
// standing for identical ones): the per-link figures are those of the
// simulated ranks' links, the class totals count the copies.
// Over time: each collective's bytes spread evenly over its span (first
// member's start to last member's end), each send's over its own.
// Collectives summed on the hosts are not counted.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/units.h"
#include "sim/simulator.h"

namespace dtsim::sim {

struct LinkLoad {
  std::string name;            // "nic_up2", "dev_down5", "leaf_up0" (SimGrid's link names)
  std::string link_class;      // "device_port", "nic", "leaf_uplink"
  double bandwidth_bytes_per_s = 0;
  double bytes_per_step = 0;
  double utilisation = 0;      // bytes per step / (bandwidth x step time)
  // Bandwidth over time, bytes/s from each time on (ns), a step function
  // starting and ending at 0.
  std::vector<std::pair<SimTime, double>> rate;
};

struct LinkClassLoad {
  std::string link_class;
  int links = 0;               // links of the class in the network
  int busy_links = 0;          // of which carried bytes
  double bytes_per_step = 0;   // summed over the class (copies counted)
  double max_utilisation = 0;  // of its busiest link
  double mean_utilisation = 0; // over its links that carried bytes
};

struct LinkTraffic {
  int measured_iterations = 0;
  std::vector<LinkClassLoad> classes;  // those that carried bytes
  std::vector<LinkLoad> busiest;       // the `top` busiest links, busiest first
};

// The traffic of `p`'s run; `top` busiest links (>= 1) with their rate over
// time.
LinkTraffic ComputeLinkTraffic(const Prediction& p, int top);

// report.json's "link_traffic" object (without the rates over time).
nlohmann::ordered_json LinkTrafficJson(const LinkTraffic& traffic);

// The step log's lines: one per class, then the busiest links.
std::string LinkTrafficLog(const LinkTraffic& traffic);

// Chrome-trace counter events (ph "C") of the busiest links' bandwidth in
// GB/s, on process `pid` (named "network links").
std::vector<nlohmann::ordered_json> LinkCounterEvents(const LinkTraffic& traffic, int pid);

}  // namespace dtsim::sim
