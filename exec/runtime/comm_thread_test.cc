#include "exec/runtime/comm_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace dtsim::exec {
namespace {

// Jobs run one at a time in submission order, off the caller's thread.
TEST(CommThread, RunsJobsInOrderOnAnotherThread) {
  CommThread comm;
  std::vector<int> order;  // written by the jobs only, read after Drain
  std::thread::id where;
  for (int k = 0; k < 50; ++k)
    comm.Submit([&order, &where, k] {
      order.push_back(k);
      where = std::this_thread::get_id();
    });
  EXPECT_EQ(comm.submitted(), 50);
  comm.Drain();
  ASSERT_EQ(order.size(), 50u);
  for (int k = 0; k < 50; ++k) EXPECT_EQ(order[static_cast<std::size_t>(k)], k);
  EXPECT_NE(where, std::this_thread::get_id());
}

// WaitFor(t) returns once job t has run, while later jobs may still run:
// the caller overlaps its own work with them.
TEST(CommThread, WaitForReturnsBeforeLaterJobsFinish) {
  CommThread comm;
  std::atomic<bool> release{false}, first_done{false};
  const std::int64_t first = comm.Submit([&] { first_done = true; });
  comm.Submit([&] {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  comm.WaitFor(first);
  EXPECT_TRUE(first_done);
  release = true;
  comm.Drain();
}

// A job's exception comes back at the next wait, and later jobs (which may
// need its result) do not run.
TEST(CommThread, AFailedJobIsRethrownAndStopsTheQueue) {
  CommThread comm;
  std::atomic<bool> later_ran{false};
  comm.Submit([] { throw std::runtime_error("peer vanished"); });
  const std::int64_t later = comm.Submit([&] { later_ran = true; });
  try {
    comm.WaitFor(later);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "peer vanished");
  }
  EXPECT_THROW(comm.Drain(), std::runtime_error);
  EXPECT_FALSE(later_ran);
}

// Destroying the thread with jobs queued skips them: it waits for the
// running job only.
TEST(CommThread, DestructionSkipsQueuedJobs) {
  std::atomic<int> ran{0};
  std::atomic<bool> started{false}, release{false};
  std::thread releaser;
  {
    CommThread comm;
    comm.Submit([&] {
      started = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++ran;
    });
    for (int k = 0; k < 10; ++k) comm.Submit([&] { ++ran; });
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Lets the running job end while the destructor below waits for it.
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      release = true;
    });
  }
  releaser.join();
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace dtsim::exec
