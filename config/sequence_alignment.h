// The longest common subsequence of two sequences under a match predicate,
// as the torch.profiler importer aligns a trace's ops with a graph's.
#pragma once

#include <functional>
#include <utility>
#include <vector>

namespace dtsim::config {

// Pairs (row, column), rows in [0, n) and columns in [0, m), in increasing
// order of both, with match(row, column) true for each: a longest such
// chain. Ties go to the earliest rows and, among them, the earliest
// columns (the traceback takes a match when it is on a longest path, else
// skips a row when that keeps the length, else a column).
//
// Rows that match no column cannot be part of any chain and are skipped
// before the table is built: `row_matches_some(row)` says whether one can
// (a cheap index the caller keeps); the table then has (rows that can
// match + 1) x (m + 1) cells, not (n + 1) x (m + 1), so the extra events of
// a long trace cost one call each. AlignSequencesFull builds the whole
// table; both give the same pairs (sequence_alignment_test).
std::vector<std::pair<int, int>> AlignSequences(int n, int m,
                                                const std::function<bool(int, int)>& match,
                                                const std::function<bool(int)>& row_matches_some);
std::vector<std::pair<int, int>> AlignSequencesFull(int n, int m,
                                                    const std::function<bool(int, int)>& match);

}  // namespace dtsim::config
