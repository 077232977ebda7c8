// Timing of a piece of work on a real device: warm-up runs, then repeated
// timed runs with std::chrono::steady_clock, reporting the median (robust to
// the odd run slowed by the OS, unlike the mean).
#pragma once

#include <functional>

namespace dtsim::exec {

struct TimingOptions {
  // Untimed runs first: page faults of fresh buffers, caches, lazy set-up.
  int warmup = 1;
  // Timed runs; the median is reported. An odd count gives a measured value
  // rather than the mean of the two middle ones.
  int repeats = 5;
  // Called, untimed, before every run (warm-up and timed), e.g. to evict the
  // caches; empty = nothing.
  std::function<void()> before_each = {};
};

struct Timing {
  double median_s = 0;  // median of the timed runs, seconds
  int repeats = 0;      // timed runs
};

// Runs `run` options.warmup + options.repeats times and returns the median
// duration of the timed runs. `run` must finish its work before returning
// (call the backend's Synchronize inside it for asynchronous backends).
// REQUIRES: warmup >= 0, repeats >= 1 (DTSIM_CHECK).
Timing TimeMedian(const std::function<void()>& run, const TimingOptions& options);

}  // namespace dtsim::exec
