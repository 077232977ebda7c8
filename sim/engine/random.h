// Counter-based random numbers for the simulator: a draw is a pure function
// of (seed, counters), so results never depend on the order in which draws
// are made, and any thread may make any draw (no state, no globals).
//
// The bits come from SplitMix64 (Steele, Lea, Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014; the finalizer of Java's
// SplittableRandom). Distributions are explicit inverse-CDF or Box-Muller
// transforms rather than <random>'s, whose algorithms the standard leaves to
// each library: the same seed gives bit-identical draws everywhere.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace dtsim::sim {

// One SplitMix64 step: a bijection of 64-bit words with good avalanche.
constexpr std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// 64 random bits for the counter (a, b, c) of the stream `seed`. Integers
// are hashed as their two's-complement bits, so negative counters are fine.
constexpr std::uint64_t CounterHash(std::uint64_t seed, std::uint64_t a, std::uint64_t b,
                                    std::uint64_t c) {
  std::uint64_t h = SplitMix64(seed);
  h = SplitMix64(h ^ a);
  h = SplitMix64(h ^ b);
  return SplitMix64(h ^ c);
}

// Uniform in [0, 1): the top 53 bits, scaled.
constexpr double UnitInterval(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// Exp(mean) by inverse CDF: -mean ln(1 - u), u in [0, 1) so 1 - u > 0.
inline double ExponentialFromBits(double mean, std::uint64_t bits) {
  return -mean * std::log1p(-UnitInterval(bits));
}

// N(0, 1) by Box-Muller from two independent words (the cosine branch).
inline double StandardNormalFromBits(std::uint64_t bits1, std::uint64_t bits2) {
  const double u1 = 1.0 - UnitInterval(bits1);  // (0, 1]: ln(u1) is finite
  const double u2 = UnitInterval(bits2);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace dtsim::sim
