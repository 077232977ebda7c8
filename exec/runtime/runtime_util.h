// Small helpers shared by exec/runtime's files (not part of its API).
#pragma once

#include <chrono>
#include <cstdint>

#include "models/op.h"

namespace dtsim::exec::runtime_util {

// Product of dimensions [from, to) of `s` (to clamped to its rank); 1 when
// empty. Per-sample element counts of a tensor's leading or trailing part.
inline std::int64_t Product(const models::Shape& s, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

inline std::int64_t Elements(const models::Shape& s) { return Product(s, 0, s.size()); }

using Clock = std::chrono::steady_clock;

// Wall seconds from a to b.
inline double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace dtsim::exec::runtime_util
