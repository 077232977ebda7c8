#include "sim/failures.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.h"
#include "common/units.h"
#include "sim/engine/random.h"

namespace dtsim::sim {
namespace {

// CounterHash's stream for failure arrivals (sim/engine/stragglers.cc uses 1-3).
// Arrival k's gap is drawn from (seed, k, 0, kFailureStream): the failure
// times depend only on the seed and the system MTBF, not on the checkpoint
// settings, so a scan over intervals with one seed compares them on the same
// failures (common random numbers).
constexpr std::uint64_t kFailureStream = 4;
constexpr double kMaxEvents = 1e8;  // keeps one call well under a few seconds

enum class Phase { kTrain, kCheckpoint, kRestart };

}  // namespace

int FailureUnits(const config::FailureConfig& config, int num_devices, int devices_per_node) {
  DTSIM_CHECK(num_devices >= 1 && devices_per_node >= 1, "need at least one device per node");
  if (config.scope == config::FailureScope::kDevice) return num_devices;
  return (num_devices + devices_per_node - 1) / devices_per_node;
}

double SystemMtbfSeconds(const config::FailureConfig& config, int num_devices,
                         int devices_per_node) {
  DTSIM_CHECK(config.Enabled(), "failures are disabled");
  return config.mtbf_s / FailureUnits(config, num_devices, devices_per_node);
}

double FirstOrderWaste(double interval_s, double checkpoint_cost_s, double restart_cost_s,
                       double system_mtbf_s) {
  DTSIM_CHECK(interval_s > 0 && system_mtbf_s > 0, "interval and MTBF must be > 0");
  return checkpoint_cost_s / interval_s + interval_s / (2 * system_mtbf_s) +
         restart_cost_s / system_mtbf_s;
}

GoodputResult SimulateFailures(const config::FailureConfig& config, int num_devices,
                               int devices_per_node, std::uint64_t seed) {
  const double tau = config.checkpoint_interval_s;
  const double ckpt = config.checkpoint_cost_s;
  const double restart = config.restart_cost_s;
  const double horizon = config.horizon_s;
  DTSIM_CHECK(tau > 0 && horizon > 0 && ckpt >= 0 && restart >= 0,
              "failures: interval and horizon must be > 0, costs >= 0");
  constexpr double kNever = std::numeric_limits<double>::infinity();
  const double mtbf =
      config.Enabled() ? SystemMtbfSeconds(config, num_devices, devices_per_node) : kNever;

  GoodputResult r;
  if (config.Enabled()) r.young_daly_interval_s = std::sqrt(2 * ckpt * mtbf);
  r.first_order_goodput = std::clamp(1 - FirstOrderWaste(tau, ckpt, restart, mtbf), 0.0, 1.0);

  if (const double events = horizon / tau + horizon / mtbf; events > kMaxEvents) {
    throw UserError("failures: simulating " + FormatSeconds(horizon) + " with a checkpoint every " +
                        FormatSeconds(tau) + " and a system MTBF of " + FormatSeconds(mtbf) +
                        " takes about " + FormatCount(events) + " events, more than 10^8",
                    "shorten failures.horizon or lengthen failures.checkpoint_interval");
  }

  std::uint64_t arrivals = 0;
  auto next_gap = [&] {
    if (!config.Enabled()) return kNever;
    return ExponentialFromBits(mtbf, CounterHash(seed, arrivals++, 0, kFailureStream));
  };

  double t = 0;         // wall time
  double kept = 0;      // training saved by completed checkpoints
  double progress = 0;  // training since the last completed checkpoint
  double next_failure = next_gap();
  Phase phase = Phase::kTrain;
  double left = tau;  // wall time left in the current phase
  while (t < horizon) {
    const double phase_end = t + left;
    const double stop = std::min({phase_end, horizon, next_failure});
    const double dt = stop - t;
    switch (phase) {
      case Phase::kTrain: progress += dt; break;
      case Phase::kCheckpoint: r.checkpoint_time_s += dt; break;
      case Phase::kRestart: r.time_lost_s += dt; break;
    }
    left -= dt;
    t = stop;
    // A failure wins a tie with the end of a phase; one at the horizon is
    // outside it, while a checkpoint that completes at the horizon counts.
    if (next_failure <= t && t < horizon) {
      ++r.failures;
      r.time_lost_s += progress;
      progress = 0;
      phase = Phase::kRestart;
      left = restart;
      next_failure = t + next_gap();
      continue;
    }
    if (stop == phase_end) {
      switch (phase) {
        case Phase::kTrain:
          phase = Phase::kCheckpoint;
          left = ckpt;
          break;
        case Phase::kCheckpoint:
          ++r.checkpoints;
          kept += progress;
          progress = 0;
          phase = Phase::kTrain;
          left = tau;
          break;
        case Phase::kRestart:
          phase = Phase::kTrain;
          left = tau;
          break;
      }
    }
  }
  r.goodput = (kept + progress) / horizon;
  return r;
}

}  // namespace dtsim::sim
