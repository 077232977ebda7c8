// Combines what each rank of a real run measured into the run-wide fields
// of ExecResult. Workers (RankRunner) and parameter servers (ps_runner.h)
// both end their run with it.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/comm/communicator.h"
#include "exec/runtime/plan_executor.h"

namespace dtsim::exec {

// What a parameter-server rank counted; all zero on other ranks.
struct ServerCounters {
  std::int64_t updates = 0;          // optimizer steps or averages applied
  std::int64_t pushes_applied = 0;   // pushes that went into an update
  std::int64_t pushes_dropped = 0;   // late pushes received and discarded
  std::int64_t staleness_sum = 0;    // over applied pushes
  std::int64_t staleness_max = 0;
  // Whether this rank is a server, the elements it holds, push bytes
  // received and pull bytes sent (ExecResult::ServerTraffic).
  bool is_server = false;
  std::int64_t params = 0, push_bytes = 0, pull_bytes = 0;
};

// One rank's measurements.
struct RankReport {
  std::vector<IterationTimes> times;  // per real iteration (options.iterations)
  // Per real iteration; empty when the rank holds no loss.
  std::vector<double> losses;
  ServerCounters server;
};

// Collective over every rank of `comm` (each calls it once, with reports of
// the same number of iterations). Fills result->times (ranks x iterations),
// result->losses (mean over the ranks holding the loss; 0 when none does)
// and the parameter-server fields (sums over ranks; the maximum for
// max_staleness), and result->servers. Counters travel as float: exact
// below 2^24; the traffic figures as three 21-bit pieces each, exact below
// 2^63.
void GatherResult(Communicator& comm, const RankReport& mine, ExecResult* result);

// Collective over every rank of `comm`: rank 0's result->timeline gets every
// rank's events (ranks without any pass an empty list), in rank order.
void GatherTimeline(Communicator& comm, const std::vector<TimelineEvent>& mine,
                    ExecResult* result);

}  // namespace dtsim::exec
