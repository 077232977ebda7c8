#include "tools/interrupt_watcher.h"

#include <signal.h>

#include <ctime>

namespace dtsim::tools {
namespace {

sigset_t Watched() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

InterruptWatcher::InterruptWatcher() {
  const sigset_t set = Watched();
  pthread_sigmask(SIG_BLOCK, &set, &old_mask_);
  thread_ = std::thread([this] { Watch(); });
}

InterruptWatcher::~InterruptWatcher() {
  stop_ = true;
  thread_.join();
  // Drop signals still pending, so that unblocking does not raise them.
  const sigset_t set = Watched();
  const timespec zero{0, 0};
  while (sigtimedwait(&set, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

void InterruptWatcher::ForwardTo(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  target_ = pid;
  if (target_ > 0 && signal_ != 0) ::kill(target_, SIGTERM);
}

void InterruptWatcher::Watch() {
  const sigset_t set = Watched();
  const timespec tick{0, 100'000'000};  // 100 ms: how soon the destructor's stop is seen
  while (!stop_) {
    const int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig <= 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    int none = 0;
    signal_.compare_exchange_strong(none, sig);
    if (target_ > 0) ::kill(target_, SIGTERM);
  }
}

}  // namespace dtsim::tools
