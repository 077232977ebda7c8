// CommThread: a rank's communication stream on a thread of its own. The
// executor hands it a plan's collectives in task order and goes on with the
// backward pass, as frameworks overlap gradient all-reduces with the backward
// (PyTorch DDP's buckets, Horovod's background thread); a task that needs a
// collective's result waits for it. Jobs run one at a time, in submission
// order, so every rank issues its collectives in the plan's order.
//
// The caller must not use the communicator itself while jobs are queued or
// running (Drain first): MPI is initialised MPI_THREAD_SERIALIZED, which
// allows calls from several threads, one at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace dtsim::exec {

class CommThread {
 public:
  CommThread();
  // Skips the jobs that have not started, waits for the running one and
  // joins the thread.
  ~CommThread();
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  // Queues `job`; returns its ticket (1, 2, ... in submission order).
  std::int64_t Submit(std::function<void()> job);

  // Waits until the job with `ticket` and every job before it have run. If a
  // job threw, rethrows its exception (here and in every later wait) and runs
  // no further jobs.
  void WaitFor(std::int64_t ticket);

  // Waits for every job submitted so far.
  void Drain() { WaitFor(submitted_); }

  // The last ticket handed out (0 before the first).
  std::int64_t submitted() const { return submitted_; }

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::int64_t submitted_ = 0;  // tickets handed out (caller's thread only)
  std::int64_t done_ = 0;       // jobs finished, guarded by mu_
  std::exception_ptr error_;    // the first job's exception, guarded by mu_
  bool stop_ = false;           // guarded by mu_
  std::thread thread_;          // last: started after the state above
};

}  // namespace dtsim::exec
