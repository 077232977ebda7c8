// Ring all-reduce over any Communicator's point-to-point calls: the schedule
// sim::RingAllReduce simulates.
//
//   positions 0 -> 1 -> ... -> N-1 -> 0   (group order, each to its successor)
//
// The buffer is split into N parts (EvenPart). Reduce-scatter: in step s
// (0 <= s < N-1) position p sends part (p - s) mod N to p+1 and adds the part
// (p - s - 1) mod N it receives from p-1 into its own; afterwards p holds the
// full sum of part (p + 1) mod N. All-gather: in step s, p sends part
// (p + 1 - s) mod N and stores the part (p - s) mod N it receives. 2(N-1)
// steps, each rank sending about count/N elements per step; in all, ranks
// send 2(N-1) x count elements (sim::AllReduceTotalBytes for kRing).
//
// Part c is summed in ring order starting at its owner:
//   ((x_c + x_{c+1}) + x_{c+2}) + ... + x_{c+N-1}   (positions mod N)
// so results are the same bits on every member and every run.
#pragma once

#include <cstddef>
#include <vector>

#include "exec/comm/communicator.h"

namespace dtsim::exec {

// Replaces `data` on every member of `group` with the element-wise sum over
// the group, by the ring above. Messages use kRingAllReduceTag; parts of
// zero elements are not sent.
// REQUIRES: every member calls it with the same count and group; group is
// strictly increasing world ranks and contains comm.rank().
void RingAllReduceSum(Communicator& comm, float* data, std::size_t count,
                      const std::vector<int>& group);

}  // namespace dtsim::exec
