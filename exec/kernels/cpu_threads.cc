#include "exec/kernels/cpu_threads.h"

#include "common/error.h"

namespace dtsim::exec {

WorkerPool::WorkerPool(int threads) {
  DTSIM_CHECK(threads >= 1, "WorkerPool needs at least one thread");
  workers_.reserve(static_cast<std::size_t>(threads - 1));
  for (int id = 1; id < threads; ++id) workers_.emplace_back([this, id] { Work(id); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void WorkerPool::RunParts(int id) {
  for (int p = id; p < parts_; p += size()) {
    try {
      (*job_)(p);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void WorkerPool::Work(int id) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    RunParts(id);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --pending_;
    }
    done_.notify_one();
  }
}

void WorkerPool::Run(int parts, const std::function<void(int)>& fn) {
  if (parts <= 0) return;
  if (workers_.empty() || parts == 1) {
    for (int p = 0; p < parts; ++p) fn(p);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    parts_ = parts;
    pending_ = static_cast<int>(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
  RunParts(0);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace dtsim::exec
