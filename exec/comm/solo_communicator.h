// SoloCommunicator: a world of one rank, for runs without MPI. Collectives
// over the group {0} leave data as it is; point-to-point has no peer and is
// an internal error.
#pragma once

#include "exec/comm/communicator.h"

namespace dtsim::exec {

class SoloCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }

 protected:
  std::unique_ptr<SendRequest::Impl> DoIsend(int peer, int tag, const float* data,
                                             std::size_t count) override;
  void DoSend(int peer, int tag, const float* data, std::size_t count) override;
  void DoRecv(int peer, int tag, float* data, std::size_t count) override;
  int DoRecvAny(int tag, float* data, std::size_t count) override;
  void DoBarrier() override {}
  void DoNativeAllReduceSum(float*, std::size_t, const std::vector<int>&) override {}
};

}  // namespace dtsim::exec
