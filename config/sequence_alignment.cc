#include "config/sequence_alignment.h"

#include <algorithm>

namespace dtsim::config {
namespace {

// The LCS of `rows` (indices into the first sequence, increasing) and
// columns [0, m), traced back as AlignSequences states.
std::vector<std::pair<int, int>> Lcs(const std::vector<int>& rows, int m,
                                     const std::function<bool(int, int)>& match) {
  const int n = static_cast<int>(rows.size());
  const auto width = static_cast<std::size_t>(m + 1);
  std::vector<int> lcs(static_cast<std::size_t>(n + 1) * width, 0);
  const auto at = [&](int i, int j) -> int& {
    return lcs[static_cast<std::size_t>(i) * width + static_cast<std::size_t>(j)];
  };
  for (int i = n - 1; i >= 0; --i)
    for (int j = m - 1; j >= 0; --j)
      at(i, j) = match(rows[static_cast<std::size_t>(i)], j) ? at(i + 1, j + 1) + 1
                                                             : std::max(at(i + 1, j), at(i, j + 1));
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0, j = 0; i < n && j < m;) {
    const int row = rows[static_cast<std::size_t>(i)];
    if (match(row, j) && at(i, j) == at(i + 1, j + 1) + 1) {
      pairs.push_back({row, j});
      ++i, ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
  return pairs;
}

}  // namespace

std::vector<std::pair<int, int>> AlignSequences(int n, int m,
                                                const std::function<bool(int, int)>& match,
                                                const std::function<bool(int)>& row_matches_some) {
  std::vector<int> rows;
  for (int i = 0; i < n; ++i)
    if (row_matches_some(i)) rows.push_back(i);
  return Lcs(rows, m, match);
}

std::vector<std::pair<int, int>> AlignSequencesFull(int n, int m,
                                                    const std::function<bool(int, int)>& match) {
  std::vector<int> rows(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) rows[static_cast<std::size_t>(i)] = i;
  return Lcs(rows, m, match);
}

}  // namespace dtsim::config
