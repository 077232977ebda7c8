// MakeCudaRuntime for CUDA builds, through the CUDA module
// (exec/cuda_module.h).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "exec/cuda_module.h"
#include "exec/device_runtime.h"

namespace dtsim::exec {
namespace {

// Rank 0's fresh id, sent to every rank as the float words of its bytes
// (MPI copies bytes, so any bit pattern survives).
NcclId SharedId(const CudaModuleApi& cuda, Communicator& world) {
  NcclId id{};
  if (world.rank() == 0) id = cuda.nccl_new_id();
  std::vector<float> words(id.size() / sizeof(float));
  std::memcpy(words.data(), id.data(), id.size());
  std::vector<int> all(static_cast<std::size_t>(world.size()));
  for (int r = 0; r < world.size(); ++r) all[static_cast<std::size_t>(r)] = r;
  world.Broadcast(words.data(), words.size(), 0, all);
  std::memcpy(id.data(), words.data(), id.size());
  return id;
}

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
  const CudaModuleApi* cuda = LoadCudaModule(&why);
  if (cuda == nullptr) throw UserError("no GPU backend: " + why, "use --backend cpu");
  const int gpus = cuda->visible_devices(&why);
  if (gpus == 0) throw UserError("no GPU for --backend cuda: " + why, "use --backend cpu");
  std::unique_ptr<Backend> backend(cuda->new_backend(LocalRank(world) % gpus));
  DeviceRuntime runtime;
  // NCCL refuses two ranks of one communicator on the same GPU ("Duplicate
  // GPU detected", NCCL 2.x); ranks that share GPUs all-reduce through MPI,
  // staged in host memory, as without NCCL. Every rank of a node sees the
  // same counts, so all of them take the same path.
  if (cuda->has_nccl && world.size() > 1 && LocalSize(world) <= gpus)
    runtime.all_reduce.reset(
        cuda->new_all_reduce(SharedId(*cuda, world), world.size(), world.rank(), *backend));
  runtime.backend = std::move(backend);
  runtime.shares_device = LocalSize(world) > gpus;
  return runtime;
}

}  // namespace dtsim::exec
