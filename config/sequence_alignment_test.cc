#include "config/sequence_alignment.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace dtsim::config {
namespace {

// Fast path equals slow path: skipping the rows that match nothing gives
// the full table's alignment, on random sequences with few letters (many
// ties) and extra rows that match nothing.
TEST(SequenceAlignment, SkippingUnmatchableRowsGivesTheFullAlignment) {
  std::mt19937 rng(7);
  for (int round = 0; round < 500; ++round) {
    const int n = std::uniform_int_distribution<int>(0, 40)(rng);
    const int m = std::uniform_int_distribution<int>(0, 25)(rng);
    const int letters = std::uniform_int_distribution<int>(1, 5)(rng);
    std::vector<int> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(m));
    // Letter -1: an extra event that matches nothing.
    for (int& x : a) x = std::uniform_int_distribution<int>(-1, letters - 1)(rng);
    for (int& x : b) x = std::uniform_int_distribution<int>(0, letters - 1)(rng);
    const auto match = [&](int i, int j) {
      return a[static_cast<std::size_t>(i)] == b[static_cast<std::size_t>(j)];
    };
    const auto some = [&](int i) {
      for (int j = 0; j < m; ++j)
        if (match(i, j)) return true;
      return false;
    };
    EXPECT_EQ(AlignSequences(n, m, match, some), AlignSequencesFull(n, m, match)) << round;
  }
}

TEST(SequenceAlignment, TakesTheEarliestLongestChain) {
  // "abcb" against "bcb": b, c, b from row 1 on.
  const std::vector<char> a = {'a', 'b', 'c', 'b'}, b = {'b', 'c', 'b'};
  const auto match = [&](int i, int j) {
    return a[static_cast<std::size_t>(i)] == b[static_cast<std::size_t>(j)];
  };
  const std::vector<std::pair<int, int>> expected = {{1, 0}, {2, 1}, {3, 2}};
  EXPECT_EQ(AlignSequencesFull(4, 3, match), expected);
}

}  // namespace
}  // namespace dtsim::config
