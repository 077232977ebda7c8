#include "exec/calibrate/timing.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/error.h"

namespace dtsim::exec {

Timing TimeMedian(const std::function<void()>& run, const TimingOptions& options) {
  DTSIM_CHECK(options.warmup >= 0 && options.repeats >= 1, "bad timing options");
  for (int i = 0; i < options.warmup; ++i) {
    if (options.before_each) options.before_each();
    run();
  }
  std::vector<double> seconds;
  seconds.reserve(static_cast<std::size_t>(options.repeats));
  for (int i = 0; i < options.repeats; ++i) {
    if (options.before_each) options.before_each();
    const auto start = std::chrono::steady_clock::now();
    run();
    const auto end = std::chrono::steady_clock::now();
    seconds.push_back(std::chrono::duration<double>(end - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  const double median = n % 2 == 1 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  // A run too short for the clock would give 0; report one tick instead so
  // that rates stay finite.
  const double tick = std::chrono::duration<double>(std::chrono::steady_clock::duration(1)).count();
  return Timing{std::max(median, tick), options.repeats};
}

}  // namespace dtsim::exec
