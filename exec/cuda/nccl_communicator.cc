#include "exec/cuda/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "exec/cuda/cuda_check.h"

namespace dtsim::exec {
namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(NcclCommunicator::UniqueId),
              "NcclCommunicator::UniqueId must hold an ncclUniqueId");

std::size_t Count(std::int64_t count, const char* what) {
  if (count < 0) throw std::invalid_argument(std::string("NcclCommunicator::") + what +
                                             ": negative count");
  return static_cast<std::size_t>(count);
}

}  // namespace

NcclCommunicator::UniqueId NcclCommunicator::NewUniqueId() {
  ncclUniqueId id;
  DTSIM_NCCL_CHECK(ncclGetUniqueId(&id));
  UniqueId bytes;
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

NcclCommunicator::NcclCommunicator(const UniqueId& id, int world_size, int rank,
                                   CudaBackend& backend)
    : backend_(backend), world_size_(world_size), rank_(rank) {
  if (world_size <= 0 || rank < 0 || rank >= world_size)
    throw std::invalid_argument("NcclCommunicator: rank " + std::to_string(rank) +
                                " outside a world of " + std::to_string(world_size));
  ncclUniqueId nccl_id;
  std::memcpy(&nccl_id, id.data(), sizeof nccl_id);
  DTSIM_CUDA_CHECK(cudaSetDevice(backend_.device()));
  ncclComm_t comm = nullptr;
  DTSIM_NCCL_CHECK(ncclCommInitRank(&comm, world_size, nccl_id, rank));
  comm_ = comm;
}

NcclCommunicator::~NcclCommunicator() {
  if (!comm_) return;
  // Destructors must not throw: errors are ignored here.
  cudaSetDevice(backend_.device());
  cudaStreamSynchronize(backend_.stream());
  ncclCommDestroy(comm_);
}

void NcclCommunicator::Destroy() {
  if (!comm_) return;
  DTSIM_CUDA_CHECK(cudaSetDevice(backend_.device()));
  DTSIM_CUDA_CHECK(cudaStreamSynchronize(backend_.stream()));
  ncclComm_t comm = comm_;
  comm_ = nullptr;
  DTSIM_NCCL_CHECK(ncclCommDestroy(comm));
}

void NcclCommunicator::AllReduceSum(float* buffer, std::int64_t count) {
  if (!comm_) throw std::logic_error("NcclCommunicator::AllReduceSum after Destroy");
  DTSIM_CUDA_CHECK(cudaSetDevice(backend_.device()));
  DTSIM_NCCL_CHECK(ncclAllReduce(buffer, buffer, Count(count, "AllReduceSum"), ncclFloat,
                                 ncclSum, comm_, backend_.stream()));
}

void NcclCommunicator::Send(const float* buffer, std::int64_t count, int peer) {
  if (!comm_) throw std::logic_error("NcclCommunicator::Send after Destroy");
  DTSIM_CUDA_CHECK(cudaSetDevice(backend_.device()));
  DTSIM_NCCL_CHECK(
      ncclSend(buffer, Count(count, "Send"), ncclFloat, peer, comm_, backend_.stream()));
}

void NcclCommunicator::Recv(float* buffer, std::int64_t count, int peer) {
  if (!comm_) throw std::logic_error("NcclCommunicator::Recv after Destroy");
  DTSIM_CUDA_CHECK(cudaSetDevice(backend_.device()));
  DTSIM_NCCL_CHECK(
      ncclRecv(buffer, Count(count, "Recv"), ncclFloat, peer, comm_, backend_.stream()));
}

void NcclCommunicator::SendRecv(const float* send_buffer, std::int64_t send_count,
                                int send_peer, float* recv_buffer, std::int64_t recv_count,
                                int recv_peer) {
  if (!comm_) throw std::logic_error("NcclCommunicator::SendRecv after Destroy");
  DTSIM_CUDA_CHECK(cudaSetDevice(backend_.device()));
  DTSIM_NCCL_CHECK(ncclGroupStart());
  ncclResult_t send_status = ncclSuccess, recv_status = ncclSuccess;
  if (send_count > 0)
    send_status = ncclSend(send_buffer, Count(send_count, "SendRecv"), ncclFloat, send_peer,
                           comm_, backend_.stream());
  if (recv_count > 0)
    recv_status = ncclRecv(recv_buffer, Count(recv_count, "SendRecv"), ncclFloat, recv_peer,
                           comm_, backend_.stream());
  // The group must be closed even when an operation was refused.
  DTSIM_NCCL_CHECK(ncclGroupEnd());
  DTSIM_NCCL_CHECK(send_status);
  DTSIM_NCCL_CHECK(recv_status);
}

}  // namespace dtsim::exec
