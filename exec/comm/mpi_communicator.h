// MpiCommunicator: the Communicator over MPI_COMM_WORLD. Point-to-point calls
// map to MPI_Send/Isend/Recv on MPI_FLOAT; kMpi all-reduces run
// MPI_Allreduce(MPI_SUM) on a sub-communicator per group, created the first
// time a group is used and kept until destruction.
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
#include <vector>

#include "exec/comm/communicator.h"

namespace dtsim::exec {

class MpiCommunicator final : public Communicator {
 public:
  // REQUIRES: MPI is initialised and not finalised (an MpiSession is live
  // and outlives this object). Throws MpiError if MPI fails.
  MpiCommunicator();
  // Frees the cached group communicators (failures are ignored: a
  // destructor cannot report them).
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

 protected:
  // Counts above INT_MAX floats throw UserError (MPI counts are int).
  std::unique_ptr<SendRequest::Impl> DoIsend(int peer, int tag, const float* data,
                                             std::size_t count) override;
  void DoSend(int peer, int tag, const float* data, std::size_t count) override;
  // Throws MpiError if the message holds more or fewer than `count` floats.
  void DoRecv(int peer, int tag, float* data, std::size_t count) override;
  int DoRecvAny(int tag, float* data, std::size_t count) override;
  void DoBarrier() override;
  // The first use of a group creates its communicator: collective over the
  // group's members (MPI_Comm_create_group), which every member's first
  // all-reduce on the group performs.
  void DoNativeAllReduceSum(float* data, std::size_t count,
                            const std::vector<int>& group) override;

 private:
  // MPI_COMM_WORLD for the whole world, else the cached communicator.
  MPI_Comm CommFor(const std::vector<int>& group);

  int rank_ = 0;
  int size_ = 1;
  std::map<std::vector<int>, MPI_Comm> group_comms_;  // group -> its communicator
};

}  // namespace dtsim::exec
