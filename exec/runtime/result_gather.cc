#include "exec/runtime/result_gather.h"

#include <algorithm>

#include "common/error.h"

namespace dtsim::exec {

void GatherResult(Communicator& comm, const RankReport& mine, ExecResult* result) {
  const std::size_t n = mine.times.size();
  DTSIM_CHECK(mine.losses.empty() || mine.losses.size() == n, "losses per iteration");
  const std::size_t ranks = static_cast<std::size_t>(comm.size());
  const std::size_t me = static_cast<std::size_t>(comm.rank());
  constexpr std::size_t kCounters = 5;  // ServerCounters' fields
  // Layout: times (ranks x n x 4), losses (n), loss holders (1), counters
  // (ranks x kCounters); every rank fills only its own slots.
  const std::size_t loss_at = ranks * n * 4;
  const std::size_t holders_at = loss_at + n;
  const std::size_t counters_at = holders_at + 1;
  std::vector<float> buf(counters_at + ranks * kCounters, 0.0f);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t at = (me * n + i) * 4;
    buf[at] = static_cast<float>(mine.times[i].seconds);
    buf[at + 1] = static_cast<float>(mine.times[i].compute);
    buf[at + 2] = static_cast<float>(mine.times[i].comm);
    buf[at + 3] = static_cast<float>(mine.times[i].input);
  }
  if (!mine.losses.empty()) {
    for (std::size_t i = 0; i < n; ++i) buf[loss_at + i] = static_cast<float>(mine.losses[i]);
    buf[holders_at] = 1.0f;
  }
  const ServerCounters& c = mine.server;
  const std::size_t my_counters = counters_at + me * kCounters;
  buf[my_counters] = static_cast<float>(c.updates);
  buf[my_counters + 1] = static_cast<float>(c.pushes_applied);
  buf[my_counters + 2] = static_cast<float>(c.pushes_dropped);
  buf[my_counters + 3] = static_cast<float>(c.staleness_sum);
  buf[my_counters + 4] = static_cast<float>(c.staleness_max);
  if (ranks > 1) {
    std::vector<int> world(ranks);
    for (std::size_t r = 0; r < ranks; ++r) world[r] = static_cast<int>(r);
    comm.AllReduceSum(buf.data(), buf.size(), AllReduceAlgorithm::kMpi, world);
  }
  result->times.assign(ranks, std::vector<IterationTimes>(n));
  for (std::size_t r = 0; r < ranks; ++r)
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t at = (r * n + i) * 4;
      result->times[r][i] = {buf[at], buf[at + 1], buf[at + 2], buf[at + 3]};
    }
  result->losses.assign(n, 0.0);
  if (buf[holders_at] > 0)
    for (std::size_t i = 0; i < n; ++i) result->losses[i] = buf[loss_at + i] / buf[holders_at];
  std::int64_t staleness_sum = 0;
  result->server_updates = result->pushes_applied = result->pushes_dropped = 0;
  result->max_staleness = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    const float* rc = buf.data() + counters_at + r * kCounters;
    result->server_updates += static_cast<std::int64_t>(rc[0]);
    result->pushes_applied += static_cast<std::int64_t>(rc[1]);
    result->pushes_dropped += static_cast<std::int64_t>(rc[2]);
    staleness_sum += static_cast<std::int64_t>(rc[3]);
    result->max_staleness = std::max(result->max_staleness, static_cast<std::int64_t>(rc[4]));
  }
  // Server traffic: per rank [is_server, params, push_bytes, pull_bytes],
  // each value as three 21-bit pieces in floats (exact through the sum:
  // every slot has one non-zero contributor).
  constexpr std::size_t kValues = 4, kPieces = 3;
  constexpr int kBits = 21;
  std::vector<float> traffic(ranks * kValues * kPieces, 0.0f);
  const std::int64_t values[kValues] = {c.is_server ? 1 : 0, c.params, c.push_bytes, c.pull_bytes};
  for (std::size_t v = 0; v < kValues; ++v)
    for (std::size_t k = 0; k < kPieces; ++k)
      traffic[(me * kValues + v) * kPieces + k] = static_cast<float>(
          (static_cast<std::uint64_t>(values[v]) >> (kBits * k)) & ((1u << kBits) - 1));
  if (ranks > 1) {
    std::vector<int> world(ranks);
    for (std::size_t r = 0; r < ranks; ++r) world[r] = static_cast<int>(r);
    comm.AllReduceSum(traffic.data(), traffic.size(), AllReduceAlgorithm::kMpi, world);
  }
  result->servers.clear();
  for (std::size_t r = 0; r < ranks; ++r) {
    std::int64_t got[kValues] = {};
    for (std::size_t v = 0; v < kValues; ++v) {
      std::uint64_t x = 0;
      for (std::size_t k = 0; k < kPieces; ++k)
        x |= static_cast<std::uint64_t>(traffic[(r * kValues + v) * kPieces + k]) << (kBits * k);
      got[v] = static_cast<std::int64_t>(x);
    }
    if (got[0] == 1) result->servers.push_back({static_cast<int>(r), got[1], got[2], got[3]});
  }
  result->mean_staleness = result->pushes_applied > 0 ? static_cast<double>(staleness_sum) /
                                                            static_cast<double>(result->pushes_applied)
                                                      : 0.0;
}

// Rank 0 gets every rank's events: counts first, then one buffer where each
// rank fills its slice (6 floats an event; times in microseconds, exact to
// ~1 us over minutes of run).
void GatherTimeline(Communicator& comm, const std::vector<TimelineEvent>& mine,
                    ExecResult* result) {
  const int ranks = comm.size();
  const int me = comm.rank();
  std::vector<int> world(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) world[static_cast<std::size_t>(r)] = r;
  std::vector<float> counts(static_cast<std::size_t>(ranks), 0.0f);
  counts[static_cast<std::size_t>(me)] = static_cast<float>(mine.size());
  comm.AllReduceSum(counts.data(), counts.size(), AllReduceAlgorithm::kMpi, world);
  std::size_t offset = 0, total = 0;
  for (int r = 0; r < ranks; ++r) {
    if (r < me) offset += static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
    total += static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
  }
  constexpr std::size_t kFields = 6;
  std::vector<float> buf(total * kFields, 0.0f);
  for (std::size_t e = 0; e < mine.size(); ++e) {
    float* f = buf.data() + (offset + e) * kFields;
    const TimelineEvent& ev = mine[e];
    f[0] = static_cast<float>(ev.rank);
    f[1] = static_cast<float>(ev.task);
    f[2] = static_cast<float>(ev.iteration);
    f[3] = ev.receive ? 1.0f : 0.0f;
    f[4] = static_cast<float>(ev.start_us);
    f[5] = static_cast<float>(ev.end_us);
  }
  comm.AllReduceSum(buf.data(), buf.size(), AllReduceAlgorithm::kMpi, world);
  if (me != 0) return;
  result->timeline.reserve(total);
  for (std::size_t e = 0; e < total; ++e) {
    const float* f = buf.data() + e * kFields;
    result->timeline.push_back({static_cast<std::int32_t>(f[0]), static_cast<std::int32_t>(f[1]),
                               static_cast<std::int32_t>(f[2]), f[3] != 0.0f, f[4], f[5]});
  }
}

}  // namespace dtsim::exec
