// Splitting a buffer into nearly equal contiguous parts, as the ring and tree
// all-reduce do (and as sim/cost/collectives.cc assumes: bytes / parts each).
#pragma once

#include <cstddef>

namespace dtsim::exec {

// Elements [begin, end) of a buffer.
struct ElementRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
};

// Part `index` of `count` elements split into `parts` contiguous parts whose
// sizes differ by at most one (the first count % parts parts hold one more).
// REQUIRES: parts >= 1, 0 <= index < parts.
inline ElementRange EvenPart(std::size_t count, std::size_t parts, std::size_t index) {
  const std::size_t base = count / parts;
  const std::size_t extra = count % parts;
  const std::size_t begin = index * base + (index < extra ? index : extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

}  // namespace dtsim::exec
