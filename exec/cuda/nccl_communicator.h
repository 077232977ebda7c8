// NcclCommunicator: one rank of an NCCL communicator, ordered with a
// CudaBackend's stream. The caller creates the unique id on one rank
// (NewUniqueId), hands its bytes to every rank (MPI_Bcast, a file, ...), and
// each rank constructs a communicator with its own rank index:
//
//   NcclCommunicator::UniqueId id;
//   if (rank == 0) id = NcclCommunicator::NewUniqueId();
//   MPI_Bcast(id.data(), id.size(), MPI_BYTE, 0, MPI_COMM_WORLD);
//   NcclCommunicator comm(id, world, rank, backend);
//   comm.AllReduceSum(grads, count);
//
// Collectives are asynchronous on the backend's stream, like its methods;
// backend.Synchronize() waits for them. Plain C++ header (no NCCL types).
// Built only when NCCL was found (DTSIM_HAVE_NCCL).
#pragma once

#include <array>
#include <cstdint>

#include "exec/cuda/cuda_backend.h"

struct ncclComm;

namespace dtsim::exec {

class NcclCommunicator {
 public:
  // The bytes of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES = 128).
  using UniqueId = std::array<char, 128>;

  // A fresh id (ncclGetUniqueId); call on one rank only.
  static UniqueId NewUniqueId();

  // Joins the communicator of `world_size` ranks as `rank` (0-based) on
  // backend's device; blocks until every rank has joined. `backend` must
  // outlive the communicator. Throws std::runtime_error on NCCL errors.
  NcclCommunicator(const UniqueId& id, int world_size, int rank, CudaBackend& backend);
  // Destroys the communicator (errors ignored; call Destroy() to see them).
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

  // buffer (count floats, on backend's device) = sum over ranks, in place.
  // Every rank must call it with the same count.
  void AllReduceSum(float* buffer, std::int64_t count);
  // Sends count floats to rank `peer`, which must call Recv with the same
  // count. A lone Send blocks the stream until the peer receives.
  void Send(const float* buffer, std::int64_t count, int peer);
  // Receives count floats from rank `peer` into buffer.
  void Recv(float* buffer, std::int64_t count, int peer);
  // Send and Recv in one NCCL group, so two ranks exchanging with each other
  // (pipeline stages passing activations one way, gradients the other) do
  // not deadlock. A count of 0 skips that half.
  void SendRecv(const float* send_buffer, std::int64_t send_count, int send_peer,
                float* recv_buffer, std::int64_t recv_count, int recv_peer);

  // Waits for pending work, then destroys the communicator; later calls of
  // any method but the destructor are errors. Throws on NCCL errors.
  void Destroy();

 private:
  ncclComm* comm_ = nullptr;
  CudaBackend& backend_;
  int world_size_, rank_;
};

}  // namespace dtsim::exec
