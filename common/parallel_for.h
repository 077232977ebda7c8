// Running independent pieces of work on all cores (sweep points, validation
// rows).
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>

namespace dtsim {

// Threads to use for `tasks` pieces of work: `jobs` (0 = one per core),
// at most `tasks`, at least 1.
int ResolveJobs(int jobs, std::size_t tasks);

struct ParallelFailure {
  std::size_t index;         // the first failing index
  std::exception_ptr error;  // what it threw
};

// Runs body(i) for every i in [0, n) on ResolveJobs(jobs, n) threads, which
// take indices in order. Once a body throws, no new index is started; as
// every index below the last one started is finished, the failure returned
// (the first in index order) does not depend on the number of threads.
// `progress` (may be empty) is called on this thread with (done, n) every
// `interval_s` while bodies run.
std::optional<ParallelFailure> ParallelFor(std::size_t n, int jobs,
                                           const std::function<void(int, int)>& progress,
                                           double interval_s,
                                           const std::function<void(std::size_t)>& body);

}  // namespace dtsim
