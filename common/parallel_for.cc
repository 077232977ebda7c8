#include "common/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace dtsim {

int ResolveJobs(int jobs, std::size_t tasks) {
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto wanted = static_cast<std::size_t>(jobs > 0 ? jobs : all);
  return static_cast<int>(std::max<std::size_t>(1, std::min(wanted, tasks)));
}

std::optional<ParallelFailure> ParallelFor(std::size_t n, int jobs,
                                   const std::function<void(int, int)>& progress,
                                   double interval_s,
                                   const std::function<void(std::size_t)>& body) {
  if (n == 0) return std::nullopt;
  const int threads = ResolveJobs(jobs, n);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::exception_ptr> errors(n);
  std::mutex mutex;
  std::condition_variable finished;
  int done = 0;            // guarded by mutex
  int running = threads;   // guarded by mutex
  auto work = [&] {
    while (!failed.load()) {
      const std::size_t i = next.fetch_add(1);
      if (i >= n) break;
      try {
        body(i);
      } catch (...) {
        errors[i] = std::current_exception();
        failed.store(true);
      }
      std::lock_guard<std::mutex> lock(mutex);
      ++done;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (--running == 0) finished.notify_all();
  };

  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(work);
  {
    std::unique_lock<std::mutex> lock(mutex);
    const auto interval = std::chrono::duration<double>(interval_s);
    while (running > 0) {
      if (!progress) {
        finished.wait(lock, [&] { return running == 0; });
        break;
      }
      finished.wait_for(lock, interval, [&] { return running == 0; });
      if (running > 0) {
        const int now_done = done;
        lock.unlock();
        progress(now_done, static_cast<int>(n));
        lock.lock();
      }
    }
  }
  for (std::thread& w : workers) w.join();
  for (std::size_t i = 0; i < n; ++i) {
    if (errors[i]) return ParallelFailure{i, errors[i]};
  }
  return std::nullopt;
}

}  // namespace dtsim
