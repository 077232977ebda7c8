// The priced duration of every task of a plan (sim/cost/plan_costs.h
// prices them; the engine, sim/engine/engine.h, runs the plan with them).
#pragma once

#include <cstdint>
#include <vector>

#include "common/units.h"

namespace dtsim::sim {

struct TaskCosts {
  std::vector<SimTime> task_ns;        // per task; ignored for collective members
  std::vector<SimTime> collective_ns;  // per collective
  // The host (sim/cost/host_costs.h); empty = no host model. Each rank's host
  // thread issues the rank's tasks one after another in task id order
  // (program order across its streams), spending host_ns[t] on task t. A
  // task starts no earlier than host_lead_ns[t] (<= host_ns[t]) after the
  // host began issuing it (the step's setup and its first kernel's launch)
  // and ends no earlier than the host finished issuing it (a task of many
  // kernels runs as they are launched); a collective starts once issued.
  // After issuing a task with host_sync[t] set, the host waits until that
  // task has finished before it issues the next.
  std::vector<SimTime> host_ns = {};
  std::vector<SimTime> host_lead_ns = {};
  std::vector<std::uint8_t> host_sync = {};
  // Before issuing a task with host_await[t] set, the host spends
  // host_await_setup_ns[t] (the step's setup, part of host_ns[t]), then
  // waits until the task's dependencies on server ranks have finished: a
  // parameter server's reply, which the worker's framework receives on the
  // host before it runs the step. Empty = no such task.
  std::vector<std::uint8_t> host_await = {};
  std::vector<SimTime> host_await_setup_ns = {};
  // The input pipeline; empty = none. input_ns[r]: time rank r's share of
  // its node's pipeline takes to prepare one iteration's batch (0: the
  // rank reads no input). The first compute task of each iteration of
  // rank r waits for its batch; batch k is prepared after batch k - 1 and
  // once batch k - input_prefetch has been taken; with input_prefetch = 0,
  // once that task asks for it (it is able to start otherwise): the step
  // loads its own batch.
  std::vector<SimTime> input_ns = {};
  int input_prefetch = 2;
  // The priced time of every compute task of the plan summed (seconds), and
  // of it fp8's FP8 GEMMs and its casts and amax/scale updates
  // (sim/cost/cost_model.h ComputeParts), for the reports' split of compute.
  double compute_priced_s = 0;
  double fp8_gemm_s = 0;
  double fp8_cast_s = 0;
  // The same sum with the optimizer steps, by where each time came from
  // (sim/cost/measured_costs.h CostSource: measured, interpolated, modelled).
  double priced_by_source_s[3] = {0, 0, 0};
  // With an op-cost table: the ops (model op ids, ascending) some pass of
  // which the table could not price.
  std::vector<std::int32_t> modelled_ops = {};
};

}  // namespace dtsim::sim
