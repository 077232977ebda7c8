#include "exec/calibrate/host_benchmarks.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <thread>

#include "common/error.h"

namespace dtsim::exec {
namespace {

// The first CPU this process may run on; -1 when unknown.
int FirstAllowedCpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// One run: `handoffs` handoffs between two threads pinned to `cpu`. False
// when a thread could not be pinned (both then stop at once).
bool HandOff(int cpu, int handoffs) {
  std::atomic<int> turn{0};
  std::atomic<bool> failed{false};
  const auto player = [&](int me) {
    if (!PinTo(cpu)) failed.store(true);
    for (int i = 0; i < handoffs && !failed.load(std::memory_order_relaxed); ++i) {
      if (i % 2 != me) continue;  // the other thread's handoff
      while (turn.load(std::memory_order_acquire) != me && !failed.load(std::memory_order_relaxed)) {
      }
      turn.store(1 - me, std::memory_order_release);
    }
  };
  std::thread a(player, 0), b(player, 1);
  a.join();
  b.join();
  return !failed.load();
}

}  // namespace

bool CanPinThreads() {
  const int cpu = FirstAllowedCpu();
  return cpu >= 0 && HandOff(cpu, 2);
}

std::optional<config::ProfileMeasurement> MeasureSchedulerHandoff(int handoffs,
                                                                  const TimingOptions& timing) {
  DTSIM_CHECK(handoffs >= 1, "handoffs must be >= 1");
  const int cpu = FirstAllowedCpu();
  if (cpu < 0 || !HandOff(cpu, 2)) return std::nullopt;
  const Timing t = TimeMedian([&] { HandOff(cpu, handoffs); }, timing);
  config::ProfileMeasurement m;
  m.group = "scheduler";
  m.name = "handoff between 2 busy-waiting threads on 1 core";
  m.seconds = t.median_s / handoffs;
  m.repeats = t.repeats;
  return m;
}

}  // namespace dtsim::exec
