// MakeCudaRuntime for CUDA builds. NCCL is optional inside exec/cuda/
// (cuda_sources.cmake): DTSIM_WITH_NCCL says whether NcclCommunicator exists.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/device_runtime.h"
#if DTSIM_WITH_NCCL
#include "exec/cuda/nccl_communicator.h"
#endif

namespace dtsim::exec {
namespace {

#if DTSIM_WITH_NCCL
class NcclAllReduce final : public DeviceAllReduce {
 public:
  NcclAllReduce(const NcclCommunicator::UniqueId& id, int size, int rank, CudaBackend& backend)
      : comm_(id, size, rank, backend) {}
  void Sum(float* device_buffer, std::int64_t count) override {
    comm_.AllReduceSum(device_buffer, count);
  }

 private:
  NcclCommunicator comm_;
};

// Rank 0's fresh id, sent to every rank as the float words of its bytes
// (MPI copies bytes, so any bit pattern survives).
NcclCommunicator::UniqueId SharedId(Communicator& world) {
  NcclCommunicator::UniqueId id{};
  if (world.rank() == 0) id = NcclCommunicator::NewUniqueId();
  std::vector<float> words(id.size() / sizeof(float));
  std::memcpy(words.data(), id.data(), id.size());
  std::vector<int> all(static_cast<std::size_t>(world.size()));
  for (int r = 0; r < world.size(); ++r) all[static_cast<std::size_t>(r)] = r;
  world.Broadcast(words.data(), words.size(), 0, all);
  std::memcpy(id.data(), words.data(), id.size());
  return id;
}
#endif

int LocalRank(const Communicator& world) {
  if (const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) return std::atoi(s);
  return world.rank();
}

// Ranks on this node (OMPI_COMM_WORLD_LOCAL_SIZE, else the world's size).
int LocalSize(const Communicator& world) {
  if (const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) return std::atoi(s);
  return world.size();
}

}  // namespace

DeviceRuntime MakeCudaRuntime(Communicator& world) {
  std::string why;
  const int gpus = CudaBackend::VisibleDevices(&why);
  if (gpus == 0) throw UserError("no GPU for --backend cuda: " + why, "use --backend cpu");
  auto backend = std::make_unique<CudaBackend>(LocalRank(world) % gpus);
  DeviceRuntime runtime;
#if DTSIM_WITH_NCCL
  // NCCL refuses two ranks of one communicator on the same GPU ("Duplicate
  // GPU detected", NCCL 2.x); ranks that share GPUs all-reduce through MPI,
  // staged in host memory, as without NCCL. Every rank of a node sees the
  // same counts, so all of them take the same path.
  if (world.size() > 1 && LocalSize(world) <= gpus)
    runtime.all_reduce =
        std::make_unique<NcclAllReduce>(SharedId(world), world.size(), world.rank(), *backend);
#endif
  runtime.backend = std::move(backend);
  return runtime;
}

}  // namespace dtsim::exec
