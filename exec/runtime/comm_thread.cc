#include "exec/runtime/comm_thread.h"

#include <utility>

namespace dtsim::exec {

CommThread::CommThread() : thread_([this] { Loop(); }) {}

CommThread::~CommThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

std::int64_t CommThread::Submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  cv_.notify_all();
  return ++submitted_;
}

void CommThread::WaitFor(std::int64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_ >= ticket || error_ != nullptr; });
  if (error_ != nullptr) std::rethrow_exception(error_);
}

void CommThread::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::exception_ptr error;
    try {
      job();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error != nullptr) {
      error_ = error;
      queue_.clear();  // later jobs may need this one's result
    } else {
      ++done_;
    }
    cv_.notify_all();
    if (error_ != nullptr) {
      // Run nothing more; wait to be stopped.
      cv_.wait(lock, [&] { return stop_; });
      return;
    }
  }
}

}  // namespace dtsim::exec
