// Simulating a plan that came from a trace (plan/chakra_import.h) instead of
// a model and a strategy: its compute tasks carry their own durations, its
// communication is priced by the scenario's network and run by the
// scenario's engine (analytic or SimGrid).
#pragma once

#include <string>

#include "config/scenario.h"
#include "plan/plan.h"
#include "sim/engine/engine.h"
#include "sim/metrics.h"
#include "sim/network/network.h"

namespace dtsim::sim {

struct TracePrediction {
  plan::Plan plan;
  TaskCosts costs;
  EngineResult engine;
  RunMetrics metrics;
  NetworkSpec network;
  std::string engine_name;  // "analytic" or "simgrid"
  double compute_s = 0;     // the compute tasks' durations, summed over ranks
  double collective_s = 0;  // the collectives' priced times, summed (once each)
};

// Runs `plan` on the cluster of `scenario` (its cluster, network, engine
// and SimGrid settings; its workload is not used). Every compute task of
// the plan must carry its duration (plan::Task::seconds). Throws UserError
// when the plan's ranks are not the cluster's devices.
TracePrediction SimulateTracePlan(const config::Scenario& scenario, plan::Plan plan);

}  // namespace dtsim::sim
