#include "exec/netem/latency_communicator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <vector>

namespace dtsim::exec::netem {
namespace {

// A world of one rank whose messages to itself wait in a queue.
class LoopbackCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }

 protected:
  std::unique_ptr<SendRequest::Impl> DoIsend(int, int, const float* data,
                                             std::size_t count) override {
    queue_.emplace_back(data, data + count);
    return nullptr;  // complete at once
  }
  void DoSend(int peer, int tag, const float* data, std::size_t count) override {
    (void)DoIsend(peer, tag, data, count);
  }
  void DoRecv(int, int, float* data, std::size_t count) override {
    ASSERT_FALSE(queue_.empty());
    ASSERT_EQ(queue_.front().size(), count);
    std::copy(queue_.front().begin(), queue_.front().end(), data);
    queue_.pop_front();
  }
  int DoRecvAny(int tag, float* data, std::size_t count) override {
    DoRecv(0, tag, data, count);
    return 0;
  }
  void DoBarrier() override {}
  void DoNativeAllReduceSum(float*, std::size_t, const std::vector<int>&) override {}

 private:
  std::deque<std::vector<float>> queue_;
};

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Every send waits the latency; receives do not; the data arrives intact.
TEST(LatencyCommunicator, EachSendTakesTheLatency) {
  LoopbackCommunicator inner;
  constexpr double kLatency = 2e-3;  // seconds, well above clock and sleep granularity
  LatencyCommunicator comm(inner, kLatency);
  const std::vector<float> sent = {1, 2, 3};
  std::vector<float> got(3);
  const auto t0 = std::chrono::steady_clock::now();
  comm.Isend(0, 7, sent.data(), sent.size()).Wait();
  comm.Send(0, 7, sent.data(), sent.size());
  const double two_sends = Seconds(std::chrono::steady_clock::now() - t0);
  comm.Recv(0, 7, got.data(), got.size());
  EXPECT_EQ(got, sent);
  EXPECT_EQ(comm.RecvAny(7, got.data(), got.size()), 0);
  EXPECT_EQ(got, sent);
  // Two sends, one latency each: at least 2 x 2 ms.
  EXPECT_GE(two_sends, 2 * kLatency);
  EXPECT_EQ(comm.stats().messages_sent, 2);
  EXPECT_EQ(comm.stats().bytes_sent, 2 * 3 * 4);  // 2 messages x 3 floats x 4 bytes
}

TEST(LatencyCommunicator, ZeroLatencyForwardsOnly) {
  LoopbackCommunicator inner;
  LatencyCommunicator comm(inner, 0);
  const float x = 5;
  float y = 0;
  comm.Send(0, 1, &x, 1);
  comm.Recv(0, 1, &y, 1);
  EXPECT_EQ(y, 5);
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
}

}  // namespace
}  // namespace dtsim::exec::netem
