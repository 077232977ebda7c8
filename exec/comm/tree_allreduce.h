// Double-binary-tree all-reduce (NCCL) over any Communicator's point-to-point
// calls: the schedule sim::TreeAllReduce simulates.
//
// Tree A is heap-shaped over group positions (parent of i is (i-1)/2); tree B
// has the same shape over the reversed order (tree position i is group
// position N-1-i), so A's leaves are B's inner nodes:
//
//   N = 6    tree A (positions)       tree B (positions)
//                  0                        5
//                1   2                    4   3
//               3 4 5                    2 1 0
//
// Tree A carries the first half of the buffer ((count+1)/2 elements), tree B
// the rest. Each half is cut into chunks of about chunk_bytes (EvenPart, as
// the simulator's per_tree / chunks). For each chunk, A then B: reduce up
// (receive the left child's partial sum, then the right's, add each into
// one's own, send to the parent); once every chunk is up, broadcast down
// from the roots in the same order. Sends are non-blocking so chunks
// pipeline. Every node adds own + left + right in that order: the same bits
// on every member and every run. Each of the N-1 edges of each tree carries
// its half up and down: ranks send 2(N-1) x count elements in all.
#pragma once

#include <cstddef>
#include <vector>

#include "exec/comm/communicator.h"

namespace dtsim::exec {

struct TreeAllReduceOptions {
  // Pipeline chunk per tree, in bytes (default 1 MiB, as sim::TreeAllReduce).
  // Smaller chunks overlap the tree levels better but send more messages.
  // REQUIRES: >= sizeof(float).
  std::size_t chunk_bytes = std::size_t{1} << 20;
};

// Position of the parent of tree position `position` (-1 for the root) and
// of its children (-1 where absent) in a heap-shaped tree of `size` nodes.
struct TreeLinks {
  int parent = -1;
  int left = -1;
  int right = -1;
};
// REQUIRES: 0 <= position < size.
TreeLinks HeapTreeLinks(int position, int size);

// Replaces `data` on every member of `group` with the element-wise sum over
// the group, by the double binary tree above. Messages use
// kTreeAllReduceTagA / kTreeAllReduceTagB.
// REQUIRES: every member calls it with the same count, group and options;
// group is strictly increasing world ranks and contains comm.rank().
void TreeAllReduceSum(Communicator& comm, float* data, std::size_t count,
                      const std::vector<int>& group, const TreeAllReduceOptions& options = {});

}  // namespace dtsim::exec
