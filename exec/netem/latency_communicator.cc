#include "exec/netem/latency_communicator.h"

#include <chrono>
#include <thread>

#include "common/error.h"

namespace dtsim::exec::netem {
namespace {

// A pending Isend of the inner communicator.
class InnerRequest final : public SendRequest::Impl {
 public:
  explicit InnerRequest(SendRequest request) : request_(std::move(request)) {}
  void Wait() override { request_.Wait(); }

 private:
  SendRequest request_;
};

}  // namespace

LatencyCommunicator::LatencyCommunicator(Communicator& inner, double latency_s)
    : inner_(inner), latency_s_(latency_s) {
  DTSIM_CHECK(latency_s >= 0, "latency must be >= 0");
}

void LatencyCommunicator::Delay() const {
  if (latency_s_ <= 0) return;
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(latency_s_));
  constexpr auto kSpin = std::chrono::microseconds(100);
  if (until - Clock::now() > kSpin) std::this_thread::sleep_until(until - kSpin);
  while (Clock::now() < until) {
  }
}

std::unique_ptr<SendRequest::Impl> LatencyCommunicator::DoIsend(int peer, int tag,
                                                                const float* data,
                                                                std::size_t count) {
  Delay();
  return std::make_unique<InnerRequest>(inner_.Isend(peer, tag, data, count));
}

void LatencyCommunicator::DoSend(int peer, int tag, const float* data, std::size_t count) {
  Delay();
  inner_.Send(peer, tag, data, count);
}

void LatencyCommunicator::DoRecv(int peer, int tag, float* data, std::size_t count) {
  inner_.Recv(peer, tag, data, count);
}

int LatencyCommunicator::DoRecvAny(int tag, float* data, std::size_t count) {
  return inner_.RecvAny(tag, data, count);
}

void LatencyCommunicator::DoBarrier() { inner_.Barrier(); }

void LatencyCommunicator::DoNativeAllReduceSum(float* data, std::size_t count,
                                               const std::vector<int>& group) {
  inner_.AllReduceSum(data, count, AllReduceAlgorithm::kMpi, group);
}

}  // namespace dtsim::exec::netem
