// Readers of the `stragglers:` and `failures:` sections (format:
// docs/scenario.md). Like the other sections, every key is checked, every
// time needs a unit and every range error is reported at the value.
//
// What is checked here is what the section alone can tell. Whether the ranks
// named exist in the cluster is checked where the cluster is known
// (sim::StragglerModel, sim/engine/stragglers.h).
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "config/section_readers.h"

namespace dtsim::config {
namespace {

// The slowest a straggler may be: a device 1000 times slower is as good as
// failed (model that with `failures:`); beyond, its step times leave what
// the simulation's clock holds.
constexpr double kMaxSlowdown = 1000;
// The widest lognormal noise: draws reach about 8.6 standard deviations
// (Box-Muller from 53-bit uniforms), so sigma 2 slows a task at most
// e^17 (2.4e7) times; sigma 1 is already a mean slowdown of 1.65.
constexpr double kMaxSigma = 2;
// The failures section describes months or years of training.
constexpr double kMaxFailureTime = 1e10;  // seconds, about 317 years

// A number in [1, kMaxSlowdown]: a factor by which compute is slower.
double ReadSlowdown(const YamlValue& v, const std::string& hint) {
  const double x = v.AsNumber();
  if (!(x >= 1)) v.Fail("expected a number >= 1, got " + v.Describe(), hint);
  if (x > kMaxSlowdown) {
    v.Fail("expected a number <= 1000, got " + v.Describe(),
           "a device 1000 times slower is as good as failed: use the failures section");
  }
  return x;
}

// A non-empty list of distinct ranks (integers >= 0). `seen` collects ranks
// across several lists that must not overlap; pass nullptr when only
// duplicates within this list matter.
std::vector<int> ReadRanks(const YamlValue& v, std::vector<int>* seen) {
  if (!v.IsSequence() || v.node().size() == 0) {
    v.Fail("expected a non-empty list of ranks, got " + v.Describe(),
           "ranks are worker indices, 0-based and node-major: [0, 3]");
  }
  std::vector<int> local;
  if (seen == nullptr) seen = &local;
  std::vector<int> ranks;
  for (const YamlValue& item : v.AsSequence()) {
    const int rank = item.AsInt(0);
    if (std::find(seen->begin(), seen->end(), rank) != seen->end()) {
      item.Fail("rank " + std::to_string(rank) + " is listed twice",
                "each rank may appear in one slow_devices entry only");
    }
    seen->push_back(rank);
    ranks.push_back(rank);
  }
  return ranks;
}

SlowDevices ReadSlowDevices(const YamlValue& v, std::vector<int>* seen) {
  const YamlMap m = v.AsMap({"ranks", "factor"});
  SlowDevices s;
  s.ranks = ReadRanks(m.Require("ranks", "a list of ranks, e.g. [3]"), seen);
  s.factor = ReadSlowdown(m.Require("factor", "a number >= 1, e.g. 1.5"),
                          "compute on these ranks takes factor x as long: 1.5 is 50% slower");
  return s;
}

// `noise:` fills the noise fields of `c`. The keys allowed depend on the
// distribution, and each distribution's parameters are required.
void ReadNoise(const YamlValue& v, StragglerConfig* c) {
  constexpr std::array kDistributions = {NoiseDistribution::kNone, NoiseDistribution::kLognormal,
                                         NoiseDistribution::kExponential,
                                         NoiseDistribution::kStall};
  std::vector<std::string> names;
  for (NoiseDistribution d : kDistributions) names.emplace_back(NoiseDistributionName(d));
  const YamlValue selector =
      v.RequireSelector("distribution", "none, lognormal, exponential or stall");
  c->noise = kDistributions[selector.AsChoice(names, "noise distribution")];
  switch (c->noise) {
    case NoiseDistribution::kNone:
      v.AsMap({"distribution"});
      break;
    case NoiseDistribution::kLognormal: {
      const YamlMap m = v.AsMap({"distribution", "sigma"});
      const YamlValue x = m.Require("sigma", "a number >= 0, e.g. 0.2");
      c->sigma = x.AsNumber();
      if (!(c->sigma >= 0)) {
        x.Fail("expected a sigma >= 0, got " + x.Describe(),
               "each compute task of a step takes exp(N(0, sigma^2)) x as long; 0.2 gives "
               "about +-20%");
      }
      if (c->sigma > kMaxSigma) {
        x.Fail("expected a sigma <= 2, got " + x.Describe(),
               "sigma 2 already slows the slowest draws 10^7 times; 0.2 gives about +-20%");
      }
      break;
    }
    case NoiseDistribution::kExponential: {
      const YamlMap m = v.AsMap({"distribution", "mean"});
      c->mean_s = m.Require("mean", "a time, e.g. 5ms").AsQuantity(Dimension::kTime);
      break;
    }
    case NoiseDistribution::kStall: {
      const YamlMap m = v.AsMap({"distribution", "probability", "delay"});
      const YamlValue p = m.Require("probability", "a number in [0, 1], e.g. 0.02");
      c->probability = p.AsNumber();
      if (!(c->probability >= 0 && c->probability <= 1)) {
        p.Fail("expected a probability in [0, 1], got " + p.Describe(),
               "the chance that a worker's step stalls: 0.02 is one step in fifty");
      }
      c->delay_s = m.Require("delay", "a time, e.g. 300ms").AsQuantity(Dimension::kTime);
      break;
    }
  }
}

// `interference:` fills the interference fields of `c`.
void ReadInterference(const YamlValue& v, StragglerConfig* c) {
  const YamlMap m = v.AsMap({"period", "duration", "slowdown", "ranks"});
  c->interference_period_s =
      m.Require("period", "a time > 0, e.g. 10s").AsPositiveQuantity(Dimension::kTime);
  const YamlValue duration = m.Require("duration", "a time, e.g. 1s");
  c->interference_duration_s = duration.AsQuantity(Dimension::kTime);
  if (c->interference_duration_s > c->interference_period_s) {
    duration.Fail("the duration " + duration.Describe() + " is longer than the period '" +
                      m.Require("period").node().Scalar() + "'",
                  "the slow window repeats every period and lasts `duration` of it");
  }
  c->interference_slowdown =
      ReadSlowdown(m.Require("slowdown", "a number >= 1, e.g. 2"),
                   "during a window compute runs slowdown x slower: 2 is half speed");
  if (auto x = m.Get("ranks")) c->interference_ranks = ReadRanks(*x, nullptr);
}

}  // namespace

StragglerConfig ReadStragglers(const YamlValue& v) {
  const YamlMap m = v.AsMap({"slow_devices", "noise", "interference"});
  StragglerConfig c;
  if (auto x = m.Get("slow_devices")) {
    std::vector<int> seen;
    for (const YamlValue& item : x->AsSequence()) {
      c.slow_devices.push_back(ReadSlowDevices(item, &seen));
    }
  }
  if (auto x = m.Get("noise")) ReadNoise(*x, &c);
  if (auto x = m.Get("interference")) ReadInterference(*x, &c);
  return c;
}

FailureConfig ReadFailures(const YamlValue& v) {
  const YamlMap m = v.AsMap({"mtbf", "scope", "checkpoint_interval", "checkpoint_cost",
                             "restart_cost", "horizon"});
  FailureConfig f;
  // A failures section without mtbf would do nothing; say so instead.
  f.mtbf_s = m.Require("mtbf", "the mean time between failures of one device or node, e.g. 20000h")
                 .AsPositiveQuantity(Dimension::kTime, kMaxFailureTime);
  if (auto x = m.Get("scope")) {
    const std::vector<std::string> scopes = {FailureScopeName(FailureScope::kDevice),
                                             FailureScopeName(FailureScope::kNode)};
    f.scope = x->AsChoice(scopes, "failure scope") == 0 ? FailureScope::kDevice
                                                       : FailureScope::kNode;
  }
  if (auto x = m.Get("checkpoint_interval")) {
    f.checkpoint_interval_s = x->AsPositiveQuantity(Dimension::kTime, kMaxFailureTime);
  }
  if (auto x = m.Get("checkpoint_cost")) {
    f.checkpoint_cost_s = x->AsQuantity(Dimension::kTime, kMaxFailureTime);
  }
  if (auto x = m.Get("restart_cost")) {
    f.restart_cost_s = x->AsQuantity(Dimension::kTime, kMaxFailureTime);
  }
  if (auto x = m.Get("horizon")) f.horizon_s = x->AsPositiveQuantity(Dimension::kTime, kMaxFailureTime);
  // The simulation steps through every checkpoint (sim/failures.cc): bound
  // their number where the interval is written (failures add horizon /
  // system MTBF more, checked where the cluster is known).
  if (const double checkpoints = f.horizon_s / f.checkpoint_interval_s; checkpoints > 1e8) {
    const YamlValue at = m.Get("checkpoint_interval") ? *m.Get("checkpoint_interval") : v;
    at.Fail("a checkpoint every " + FormatSeconds(f.checkpoint_interval_s) + " over a horizon of " +
                FormatSeconds(f.horizon_s) + " is " + FormatCount(checkpoints) +
                " checkpoints, more than the 10^8 dtsim simulates",
            "lengthen failures.checkpoint_interval or shorten failures.horizon");
  }
  return f;
}

}  // namespace dtsim::config
