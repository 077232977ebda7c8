// How big the plan of a scenario would be, checked before it is built.
//
// A plan holds one task per compute step, transfer and collective of every
// materialized rank and simulated iteration; sizes without bounds
// (1e9 devices, `iterations: 1000000`, thousands of parameter servers, an
// averaging period of 2^31 - 1 iterations) would end in std::bad_alloc or
// run for hours. CheckPlanSize estimates the task count from the scenario
// and the model and refuses, with the number and the limit, what would not
// fit in a few GB of memory.
#pragma once

#include <cstdint>
#include <vector>

#include "config/scenario.h"
#include "models/graph.h"

namespace dtsim::sim {

// The most devices a cluster may have (the largest GPU clusters built have
// about 10^5).
constexpr std::int64_t kMaxDevices = std::int64_t{1} << 20;
// The most tasks a plan may have: about 3 GB of tasks, dependencies and
// engine state (~150 bytes a task).
constexpr std::int64_t kMaxPlanTasks = 20'000'000;

// An upper estimate of the tasks sim::Simulate's plan of `s` has (`graph` is
// the workload's model), counting the ranks the simulator materializes.
std::int64_t EstimatePlanTasks(const config::Scenario& s, const models::ModelGraph& graph);

// Throws UserError (at the scenario's key that drives the size, when the
// file gave it) when the cluster has more than kMaxDevices devices or the
// plan would have more than kMaxPlanTasks tasks, saying how many.
void CheckPlanSize(const config::Scenario& s, const models::ModelGraph& graph);

// The same for a PipeDream schedule once its replicas per stage are known
// (`stage_replicas: auto` leaves them to PipeDream's planner): an iteration
// is a round of lcm(replicas) minibatches.
void CheckPipeDreamPlanSize(const config::Scenario& s, const models::ModelGraph& graph,
                            const std::vector<int>& replicas);

}  // namespace dtsim::sim
