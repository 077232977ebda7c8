// LatencyCommunicator: another Communicator's messages, each sent a fixed
// time late: the one-way latency of an emulated network whose kernel lacks
// netem (emulated_network.h), added in the transport instead.
//
// The delay is taken by the sender before it hands a message on (Send and
// Isend block for `latency`), so a receiver sees each message `latency`
// later than it would have. For the exchanges of ring and tree all-reduce,
// pipelines and parameter pulls/pushes, where each rank sends then waits
// for what its peers sent, that is the alpha of the alpha-beta model; a
// rank that sends k messages back to back pays k latencies where a wire
// would overlap them (a parameter server answering k workers). MPI's own
// all-reduce (kMpi) and barriers are not delayed: their messages are
// internal to MPI.
#pragma once

#include "exec/comm/communicator.h"

namespace dtsim::exec::netem {

class LatencyCommunicator final : public Communicator {
 public:
  // `inner` carries the messages and must outlive this object; latency_s
  // >= 0 (seconds). Statistics are this object's own (the inner
  // communicator counts its calls too).
  LatencyCommunicator(Communicator& inner, double latency_s);

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  double latency_s() const { return latency_s_; }

 protected:
  std::unique_ptr<SendRequest::Impl> DoIsend(int peer, int tag, const float* data,
                                             std::size_t count) override;
  void DoSend(int peer, int tag, const float* data, std::size_t count) override;
  void DoRecv(int peer, int tag, float* data, std::size_t count) override;
  int DoRecvAny(int tag, float* data, std::size_t count) override;
  void DoBarrier() override;
  void DoNativeAllReduceSum(float* data, std::size_t count,
                            const std::vector<int>& group) override;

 private:
  // Waits latency_s_: sleeps the bulk, spins the last 100 us (a sleep
  // overshoots by the kernel's timer slack, 50 us by default).
  void Delay() const;

  Communicator& inner_;
  double latency_s_;
};

}  // namespace dtsim::exec::netem
