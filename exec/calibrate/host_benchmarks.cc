#include "exec/calibrate/host_benchmarks.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <memory>
#include <thread>

#include "common/error.h"
#include "exec/data/synthetic_dataset.h"

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

const std::vector<std::string>& SyntheticDatasetKinds() {
  static const std::vector<std::string> kKinds = {"class_image", "teacher", "tokens"};
  return kKinds;
}

config::ProfileMeasurement MeasureSyntheticDraw(const std::string& kind,
                                                const TimingOptions& timing) {
  std::unique_ptr<Dataset> data;
  if (kind == "class_image") {
    data = std::make_unique<ClassImageDataset>(ClassImageDatasetOptions{});
  } else if (kind == "teacher") {
    data = std::make_unique<TeacherDataset>(TeacherDatasetOptions{.shape = {1024}});
  } else {
    DTSIM_CHECK(kind == "tokens", "unknown synthetic dataset kind " + kind);
    data = std::make_unique<TokenDataset>(TokenDatasetOptions{.vocab = 1000, .seq_len = 128});
  }
  constexpr std::int64_t kSamples = 64;
  std::int64_t per_sample = 1, per_label = 1;
  for (std::int64_t d : data->sample_shape()) per_sample *= d;
  for (std::int64_t d : data->label_shape()) per_label *= d;
  std::vector<float> x(static_cast<std::size_t>(kSamples * per_sample));
  std::vector<float> labels(static_cast<std::size_t>(kSamples * per_label));
  std::int64_t first = 0;
  const Timing t = TimeMedian(
      [&] {
        data->Fill(first, kSamples, x.data(), labels.data());
        first += kSamples;  // new samples every run, as training draws them
      },
      timing);
  config::ProfileMeasurement m;
  m.group = "input_draw";
  m.name = kind;
  m.bytes = static_cast<double>(kSamples * per_sample);
  m.seconds = t.median_s / m.bytes;
  m.repeats = t.repeats;
  return m;
}

}  // namespace dtsim::exec
