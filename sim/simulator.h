// The simulator's public entry point: from a scenario to a prediction.
//
//   scenario --(models/)--> model graph --(plan/)--> plan
//            --(cost model, network)--> task costs --(engine)--> timeline
//            --(metrics)--> step time, throughput, breakdown
#pragma once

#include <string>
#include <vector>

#include "config/scenario.h"
#include "models/graph.h"
#include "plan/plan.h"
#include "sim/engine.h"
#include "sim/metrics.h"
#include "sim/network.h"

namespace dtsim::sim {

struct Prediction {
  models::ModelGraph graph;
  plan::Plan plan;
  EngineResult engine;
  RunMetrics metrics;
  TaskCosts costs;
  // The same workload on one device of the cluster's type, for scaling
  // efficiency = throughput / (devices x single_device_throughput).
  double single_device_throughput_samples_per_s = 0;
  double scaling_efficiency = 0;
  hw::DeviceSpec device;
  NetworkSpec network;
  double wall_seconds = 0;  // host time spent simulating (not part of reports)
};

// Everything the engine needs that comes from the scenario and the catalog.
NetworkSpec MakeNetworkSpec(const config::Scenario& scenario, const hw::HardwareCatalog& catalog);
plan::Plan MakePlan(const config::Scenario& scenario, const models::ModelGraph& graph);

struct SimulateOptions {
  // The workload's model graph, already built (e.g. shared by the points of
  // a sweep); nullptr = build it from the scenario. Must be what
  // config::BuildWorkloadModel(scenario) returns; must outlive the call.
  const models::ModelGraph* graph = nullptr;
};

// Runs the scenario. Throws UserError for inputs that only turn out wrong
// here (e.g. a hierarchical all-reduce the cluster cannot do). Thread-safe:
// several scenarios may be simulated at once.
Prediction Simulate(const config::Scenario& scenario, const SimulateOptions& options = {});

}  // namespace dtsim::sim
