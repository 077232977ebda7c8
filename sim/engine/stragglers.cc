#include "sim/engine/stragglers.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "sim/engine/random.h"

namespace dtsim::sim {
namespace {

// The last argument of CounterHash: one stream per kind of draw, so that
// draws of different kinds for the same (rank, iteration) are independent.
// sim/failures.cc uses stream 4.
constexpr std::uint64_t kNormalStream1 = 1;  // lognormal: Box-Muller's u1
constexpr std::uint64_t kNormalStream2 = 2;  // lognormal: Box-Muller's u2
constexpr std::uint64_t kDelayStream = 3;    // exponential and stall

std::uint64_t Counter(int i) { return static_cast<std::uint64_t>(static_cast<std::int64_t>(i)); }

}  // namespace

StragglerModel::StragglerModel(const config::StragglerConfig& config, std::uint64_t seed,
                               int num_ranks)
    : config_(config), seed_(seed), num_ranks_(num_ranks) {
  DTSIM_CHECK(num_ranks >= 1, "a straggler model needs at least one rank");
  if (const std::string problem = config::StragglerRanksProblem(config, num_ranks); !problem.empty()) {
    throw UserError(problem, "ranks are worker indices, 0-based and node-major");
  }
  const auto n = static_cast<std::size_t>(num_ranks);
  fixed_factor_.assign(n, 1.0);
  for (const config::SlowDevices& slow : config.slow_devices) {
    DTSIM_CHECK(slow.factor >= 1, "slow_devices factor must be >= 1");
    for (int rank : slow.ranks) fixed_factor_[static_cast<std::size_t>(rank)] = slow.factor;
  }

  bool noisy = false;
  switch (config.noise) {
    case config::NoiseDistribution::kNone: break;
    case config::NoiseDistribution::kLognormal:
      DTSIM_CHECK(config.sigma >= 0, "lognormal sigma must be >= 0");
      noisy = config.sigma > 0;
      break;
    case config::NoiseDistribution::kExponential:
      DTSIM_CHECK(config.mean_s >= 0, "exponential mean must be >= 0");
      noisy = config.mean_s > 0;
      break;
    case config::NoiseDistribution::kStall:
      DTSIM_CHECK(config.probability >= 0 && config.probability <= 1,
                  "stall probability must be in [0, 1]");
      DTSIM_CHECK(config.delay_s >= 0, "stall delay must be >= 0");
      noisy = config.probability > 0 && config.delay_s > 0;
      break;
  }

  interfered_.assign(n, false);
  if (config.interference_period_s > 0) {
    DTSIM_CHECK(config.interference_duration_s >= 0 &&
                    config.interference_duration_s <= config.interference_period_s,
                "interference duration must be in [0, period]");
    DTSIM_CHECK(config.interference_slowdown >= 1, "interference slowdown must be >= 1");
    period_ns_ = SecondsToNs(config.interference_period_s);
    DTSIM_CHECK(period_ns_ >= 1, "interference period must be at least 1 ns");
    window_ns_ = std::min(SecondsToNs(config.interference_duration_s), period_ns_);
    if (window_ns_ > 0 && config.interference_slowdown > 1) {
      if (config.interference_ranks.empty()) {
        interfered_.assign(n, true);
      } else {
        for (int rank : config.interference_ranks) {
          interfered_[static_cast<std::size_t>(rank)] = true;
        }
      }
      has_interference_ = true;
    }
  }

  const bool slow =
      std::any_of(fixed_factor_.begin(), fixed_factor_.end(), [](double f) { return f != 1.0; });
  trivial_ = !slow && !noisy && !has_interference_;
}

double StragglerModel::ComputeFactor(int rank, int iteration) const {
  DTSIM_CHECK(rank >= 0 && rank < num_ranks_, "rank out of range");
  const double fixed = fixed_factor_[static_cast<std::size_t>(rank)];
  if (config_.noise != config::NoiseDistribution::kLognormal || config_.sigma == 0) return fixed;
  const double z =
      StandardNormalFromBits(CounterHash(seed_, Counter(rank), Counter(iteration), kNormalStream1),
                             CounterHash(seed_, Counter(rank), Counter(iteration), kNormalStream2));
  return fixed * std::exp(config_.sigma * z);
}

double StragglerModel::FixedFactor(int rank) const {
  DTSIM_CHECK(rank >= 0 && rank < num_ranks_, "rank out of range");
  return fixed_factor_[static_cast<std::size_t>(rank)];
}

bool StragglerModel::Interfered(int rank) const {
  DTSIM_CHECK(rank >= 0 && rank < num_ranks_, "rank out of range");
  return interfered_[static_cast<std::size_t>(rank)];
}

SimTime StragglerModel::ExtraDelayNs(int rank, int iteration) const {
  DTSIM_CHECK(rank >= 0 && rank < num_ranks_, "rank out of range");
  const std::uint64_t bits = CounterHash(seed_, Counter(rank), Counter(iteration), kDelayStream);
  switch (config_.noise) {
    case config::NoiseDistribution::kExponential:
      return SecondsToNs(ExponentialFromBits(config_.mean_s, bits));
    case config::NoiseDistribution::kStall:
      return UnitInterval(bits) < config_.probability ? SecondsToNs(config_.delay_s) : 0;
    case config::NoiseDistribution::kNone:
    case config::NoiseDistribution::kLognormal: return 0;
  }
  return 0;
}

// Walks the period containing `start` window by window; whole periods in
// between are skipped at once. With P the period, D the window and s the
// slowdown, one whole period does D / s + (P - D) ns of undisturbed work.
//
//   t:    kP        kP+D                 (k+1)P     (k+1)P+D
//         |##########|--------------------|##########|-----
//          progress     progress at full
//          at 1/s       speed
SimTime StragglerModel::FinishTime(int rank, SimTime start, SimTime work_ns) const {
  DTSIM_CHECK(rank >= 0 && rank < num_ranks_, "rank out of range");
  DTSIM_CHECK(start >= 0 && work_ns >= 0, "FinishTime needs start >= 0 and work_ns >= 0");
  if (!interfered_[static_cast<std::size_t>(rank)] || work_ns == 0) return AddSimTime(start, work_ns);

  const double s = config_.interference_slowdown;
  const auto period = static_cast<double>(period_ns_);
  const auto window = static_cast<double>(window_ns_);
  const double work_per_period = window / s + (period - window);

  SimTime base = start - start % period_ns_;     // start of the current period
  double x = static_cast<double>(start - base);  // position in it, [0, P)
  double work = static_cast<double>(work_ns);    // undisturbed ns still to do
  bool skipped = false;
  for (;;) {
    if (x < window) {  // inside the window: (D - x) ns of wall time do (D - x) / s of work
      const double can = (window - x) / s;
      if (work <= can) return AddSimTime(base, SecondsToNs((x + work * s) * 1e-9));
      work -= can;
      x = window;
    }
    const double can = period - x;  // after the window, at full speed
    if (work <= can) return AddSimTime(base, SecondsToNs((x + work) * 1e-9));
    work -= can;
    base += period_ns_;
    x = 0;
    if (!skipped) {  // whole periods
      const double whole = std::floor(work / work_per_period);
      base = AddSimTime(base, SecondsToNs(whole * period * 1e-9));
      work = std::max(0.0, work - whole * work_per_period);
      skipped = true;
      if (work == 0) return base;
    }
  }
}

SimTime StragglerModel::ScaledWorkNs(int rank, int iteration, SimTime base_ns) const {
  const double factor = ComputeFactor(rank, iteration);
  if (factor == 1.0) return base_ns;
  return SecondsToNs(NsToSeconds(base_ns) * factor);
}

SimTime StragglerModel::TaskEnd(int rank, int iteration, SimTime start, SimTime base_ns) const {
  return FinishTime(rank, start, ScaledWorkNs(rank, iteration, base_ns));
}

}  // namespace dtsim::sim
