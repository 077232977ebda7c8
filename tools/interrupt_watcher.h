// Interrupts as an orderly stop, for commands that must undo what they set
// up (the emulated network of `dtsim exec --network`): SIGINT, SIGTERM and
// SIGHUP are blocked and a thread waits for them; on one it records it and
// passes SIGTERM on to the child process it was told about (mpirun, which
// stops its ranks and exits), so the command fails, unwinds and its
// destructors clean up; main() then exits with 128 + the signal.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace dtsim::tools {

class InterruptWatcher {
 public:
  // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and so in the
  // threads it starts later) and starts the waiting thread. REQUIRES: no
  // other thread exists yet (one started earlier could still take the
  // signals and die of them); construct it in main().
  InterruptWatcher();
  // Stops the waiting thread and restores the signal mask; a signal
  // received meanwhile stays recorded but is not raised again.
  ~InterruptWatcher();
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

  // The process to send SIGTERM to when a signal arrives; 0 = none. When a
  // signal has already arrived, sends it at once. Thread-safe.
  void ForwardTo(pid_t pid);
  // The first signal received; 0 while none has. Thread-safe.
  int signal() const { return signal_.load(); }

 private:
  void Watch();

  std::mutex mu_;              // orders a signal's arrival against ForwardTo
  pid_t target_ = 0;           // guarded by mu_
  std::atomic<int> signal_{0};
  std::atomic<bool> stop_{false};
  sigset_t old_mask_;
  std::thread thread_;
};

}  // namespace dtsim::tools
