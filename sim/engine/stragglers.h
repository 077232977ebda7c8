// Stragglers: how much longer each rank's compute takes in each iteration
// (config::StragglerConfig, docs/scenario.md `stragglers:`).
//
// Three independent effects, applied by whoever prices and runs compute tasks:
//   1. a fixed factor per rank (slow_devices) times a lognormal draw per
//      (rank, iteration): ComputeFactor() scales every compute task of that
//      rank's iteration;
//   2. an extra time per (rank, iteration), exponential or stall:
//      ExtraDelayNs(), added once to the rank's iteration;
//   3. periodic interference windows on some ranks, during which compute
//      progresses at 1/slowdown: FinishTime() says when a task that needs
//      `work_ns` of undisturbed compute and starts at `start` ends.
//
// Randomness is counter-based (sim/engine/random.h): every draw is a function of
// (seed, rank, iteration, stream) alone, so results do not depend on the order
// of calls or on which thread asks. The model is immutable after construction
// and therefore thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/units.h"
#include "config/scenario.h"

namespace dtsim::sim {

class StragglerModel {
 public:
  // Throws UserError when `config` names a rank outside [0, num_ranks) or a
  // rank twice in slow_devices (StragglerRanksProblem). REQUIRES: num_ranks >=
  // 1 and the ranges the loader checks (factor >= 1, sigma >= 0, ...).
  StragglerModel(const config::StragglerConfig& config, std::uint64_t seed, int num_ranks);

  // True when the model changes nothing: ComputeFactor() is always 1,
  // ExtraDelayNs() 0 and FinishTime() start + work_ns.
  bool Trivial() const { return trivial_; }
  // True when some rank has interference windows, i.e. when a task's duration
  // depends on its start time and must be computed as it starts
  // (FinishTime/TaskEnd) rather than priced in advance.
  bool HasInterference() const { return has_interference_; }

  // The factor by which every compute task of `rank` in `iteration` is
  // longer: slow_devices' factor x exp(sigma z), z ~ N(0, 1) drawn once per
  // (rank, iteration). Its median is the fixed factor; its mean is
  // factor x exp(sigma^2 / 2). REQUIRES: 0 <= rank < num_ranks.
  double ComputeFactor(int rank, int iteration) const;

  // Extra time added once to `rank`'s `iteration`: Exp(mean) for
  // exponential noise; `delay` with probability p (else 0) for stall; 0
  // otherwise. REQUIRES: 0 <= rank < num_ranks.
  SimTime ExtraDelayNs(int rank, int iteration) const;

  // When a task of `rank` that needs `work_ns` of undisturbed compute and
  // starts at `start` finishes. Interference windows are
  // [k P, k P + D) for k = 0, 1, ... (P = period, D = duration, t = 0 is the
  // start of the simulation); inside them the rank progresses at 1/slowdown.
  // Ranks without interference: start + work_ns. Rounded to the nearest ns.
  // REQUIRES: 0 <= rank < num_ranks, start >= 0, work_ns >= 0.
  SimTime FinishTime(int rank, SimTime start, SimTime work_ns) const;

  // The undisturbed work of a compute task priced at `base_ns`:
  // base_ns x ComputeFactor(rank, iteration), rounded.
  SimTime ScaledWorkNs(int rank, int iteration, SimTime base_ns) const;
  // The end of a compute task priced at `base_ns` (without stragglers) that
  // starts at `start`: FinishTime(rank, start, ScaledWorkNs(...)). The one
  // call an engine needs per compute task; ExtraDelayNs is added separately,
  // once per rank-iteration.
  SimTime TaskEnd(int rank, int iteration, SimTime start, SimTime base_ns) const;

  int num_ranks() const { return num_ranks_; }

  // The model's parts, for engines that replay them their own way (the
  // SimGrid engine: host speeds and speed profiles). REQUIRES for the
  // per-rank ones: 0 <= rank < num_ranks.
  //
  // slow_devices' factor of `rank` (1 when not slow): ComputeFactor without
  // the lognormal draw.
  double FixedFactor(int rank) const;
  // True when `rank` has interference windows (never when HasInterference()
  // is false).
  bool Interfered(int rank) const;
  // The windows [k P, k P + D): P and D in ns (D == P means always slowed),
  // and the slowdown s inside them. Meaningful only when HasInterference():
  // then P >= 1, 0 < D <= P and s > 1.
  SimTime InterferencePeriodNs() const { return period_ns_; }
  SimTime InterferenceWindowNs() const { return window_ns_; }
  double InterferenceSlowdown() const { return config_.interference_slowdown; }

 private:
  config::StragglerConfig config_;
  std::uint64_t seed_;
  int num_ranks_;
  std::vector<double> fixed_factor_;  // per rank, 1 when not slow
  std::vector<bool> interfered_;      // per rank
  SimTime period_ns_ = 0;             // interference period P; 0 = none
  SimTime window_ns_ = 0;             // interference duration D <= P
  bool trivial_ = true;
  bool has_interference_ = false;
};

}  // namespace dtsim::sim
