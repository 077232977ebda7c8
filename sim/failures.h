// Failures and checkpoint/restart over a long training run
// (config::FailureConfig, docs/scenario.md `failures:`).
//
// Not part of the per-iteration simulation: training is one fluid stream of
// work, and what is simulated is the wall time it loses to failures.
//
//   wall time:  |-- train tau --|C|-- train tau --|C|-- train ..X  R  |-- train tau --|C| ...
//                                                    lost since the   restart
//                                                    last checkpoint
//
// Failures form a Poisson process in wall time of rate units / mtbf (each of
// `units` devices or nodes fails after an Exp(mtbf) time and is replaced at
// once). They can strike at any moment: while training (the work since the
// last completed checkpoint is lost), while writing a checkpoint (it does not
// complete; the work it would have saved is lost) and while restarting (the
// restart begins again).
#pragma once

#include <cstdint>

#include "config/scenario.h"

namespace dtsim::sim {

struct GoodputResult {
  // Useful training time / horizon. Useful = training kept by a completed
  // checkpoint, plus the training done since the last checkpoint when the
  // horizon ends (the run ends there and loses nothing more).
  double goodput = 1.0;
  double time_lost_s = 0;        // recomputation (training lost to failures) + restarts
  double checkpoint_time_s = 0;  // writing checkpoints, including ones a failure cut short
  int failures = 0;              // failures within the horizon
  int checkpoints = 0;           // checkpoints completed within the horizon
  // sqrt(2 C M): Young's optimal checkpoint interval for checkpoint cost C
  // and system MTBF M. 0 when failures are disabled (the optimum is never).
  double young_daly_interval_s = 0;
  // 1 - (C / tau + tau / (2 M) + R / M), the first-order (Young/Daly) estimate
  // of the goodput; clamped to [0, 1]. See FirstOrderWaste.
  double first_order_goodput = 1.0;
};
// The horizon splits exactly into useful + checkpoint_time_s + time_lost_s.

// Devices or nodes that fail independently: num_devices for scope device,
// the number of nodes (num_devices / devices_per_node, rounded up) for scope
// node.
int FailureUnits(const config::FailureConfig& config, int num_devices, int devices_per_node);

// The system's MTBF M = mtbf / units, in seconds. REQUIRES: config.Enabled().
double SystemMtbfSeconds(const config::FailureConfig& config, int num_devices,
                         int devices_per_node);

// The first-order fraction of wall time wasted with checkpoint interval tau,
// checkpoint cost C, restart cost R and system MTBF M (Young 1974; Daly 2006):
//
//   waste = C / tau + tau / (2 M) + R / M
//
// (a checkpoint every tau of work; a failure loses on average half an
// interval, plus the restart). Valid when C, R << tau << M; the simulation
// agrees with it within 2 percentage points for M / tau >= 50, C / tau <=
// 0.1 and R / tau <= 1 (sim/failures_test.cc). With M = infinity (failures
// disabled) it is C / tau. Not clamped.
double FirstOrderWaste(double interval_s, double checkpoint_cost_s, double restart_cost_s,
                       double system_mtbf_s);

// Simulates `config.horizon_s` of wall time, seeded by `seed` (same inputs,
// same result). With failures disabled the run only checkpoints:
// goodput = tau / (tau + C) when the horizon is a whole number of
// (tau + C) cycles. Throws UserError when the run would take more than 10^8
// events (horizon too long for the interval or the MTBF).
// REQUIRES: num_devices >= 1, devices_per_node >= 1, checkpoint_interval_s > 0,
// horizon_s > 0, costs >= 0.
GoodputResult SimulateFailures(const config::FailureConfig& config, int num_devices,
                               int devices_per_node, std::uint64_t seed);

}  // namespace dtsim::sim
