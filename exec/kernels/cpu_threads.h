// WorkerPool: the threads one CPU rank runs its kernels on (dtsim exec
// --threads). A job is split into parts by the caller; each part writes
// outputs of its own, so which thread runs a part never changes a result,
// and a kernel split the same way gives the same bits run after run.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dtsim::exec {

class WorkerPool {
 public:
  // `threads` >= 1 threads in all: the caller of Run and threads - 1 started
  // here (and joined by the destructor).
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(0) .. fn(parts - 1), part p on thread p % size() (the caller is
  // thread 0), and returns once every part has returned. The first
  // exception a part throws is rethrown here, after all parts ended. Not
  // reentrant: one Run at a time.
  void Run(int parts, const std::function<void(int)>& fn);

 private:
  void Work(int id);
  void RunParts(int id);

  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* job_ = nullptr;  // guarded by mu_
  int parts_ = 0;
  std::uint64_t generation_ = 0;  // counts jobs; workers wait for a new one
  int pending_ = 0;               // workers still running this job
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> workers_;
};

// The part of [0, count) that part p of `parts` covers: [Begin(p), Begin(p + 1)).
inline std::int64_t PartBegin(std::int64_t count, int parts, int p) {
  return count * p / parts;
}

}  // namespace dtsim::exec
