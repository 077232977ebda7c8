#include "exec/comm/ring_allreduce.h"

#include <algorithm>

#include "common/error.h"
#include "exec/comm/chunks.h"

namespace dtsim::exec {

void RingAllReduceSum(Communicator& comm, float* data, std::size_t count,
                      const std::vector<int>& group) {
  const auto me = std::lower_bound(group.begin(), group.end(), comm.rank());
  DTSIM_CHECK(me != group.end() && *me == comm.rank(), "ring group must contain the caller");
  const std::size_t n = group.size();
  if (n <= 1 || count == 0) return;
  DTSIM_CHECK(data != nullptr, "null buffer with a non-zero count");
  const std::size_t p = static_cast<std::size_t>(me - group.begin());
  const int next = group[(p + 1) % n];
  const int prev = group[(p + n - 1) % n];
  // part(k) for any k, taken mod n (k is kept non-negative by adding n).
  const auto part = [&](std::size_t k) { return EvenPart(count, n, k % n); };

  // Exchanges one step: sends part `out`, receives part `in` into `into`
  // (which must not overlap part `out`). Zero-element parts are skipped on
  // both sides, which compute the same sizes.
  const auto exchange = [&](ElementRange out, ElementRange in, float* into) {
    SendRequest send;
    if (out.size() > 0) send = comm.Isend(next, kRingAllReduceTag, data + out.begin, out.size());
    if (in.size() > 0) comm.Recv(prev, kRingAllReduceTag, into, in.size());
    send.Wait();
  };

  // Reduce-scatter: step s sends part p - s, receives and adds part p - s - 1.
  std::vector<float> incoming(EvenPart(count, n, 0).size());  // part 0 is the largest
  for (std::size_t s = 0; s + 1 < n; ++s) {
    const ElementRange in = part(p + 2 * n - s - 1);
    exchange(part(p + n - s), in, incoming.data());
    // incoming holds x_c + ... + x_{p-1}; add ours last, in ring order.
    for (std::size_t i = 0; i < in.size(); ++i)
      data[in.begin + i] = incoming[i] + data[in.begin + i];
  }
  // All-gather: step s sends part p + 1 - s, receives part p - s in place.
  for (std::size_t s = 0; s + 1 < n; ++s) {
    const ElementRange in = part(p + n - s);
    exchange(part(p + n + 1 - s), in, data + in.begin);
  }
}

}  // namespace dtsim::exec
