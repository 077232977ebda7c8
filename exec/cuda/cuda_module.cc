// The CUDA module, libdtsim-cuda.so (exec/cuda_module.h): the CUDA backend,
// NCCL and the GPU list behind one table, so that dtsim loads the CUDA
// runtime, cuBLAS and NCCL only for the commands that use a GPU.
#include <memory>

#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/local_gpus.h"
#include "exec/cuda_module.h"
#if DTSIM_WITH_NCCL
#include "exec/cuda/nccl_communicator.h"
#endif

namespace dtsim::exec {
namespace {

#if DTSIM_WITH_NCCL
class NcclAllReduce final : public DeviceAllReduce {
 public:
  NcclAllReduce(const NcclId& id, int size, int rank, CudaBackend& backend)
      : comm_(id, size, rank, backend) {}
  void Sum(float* device_buffer, std::int64_t count) override {
    comm_.AllReduceSum(device_buffer, count);
  }

 private:
  NcclCommunicator comm_;
};
#endif

int VisibleDevices(std::string* why) { return CudaBackend::VisibleDevices(why); }

Backend* NewBackend(int device) { return new CudaBackend(device); }

#if DTSIM_WITH_NCCL
NcclId NcclNewId() { return NcclCommunicator::NewUniqueId(); }

DeviceAllReduce* NewAllReduce(const NcclId& id, int ranks, int rank, Backend& backend) {
  // Only backends this module made reach here (MakeCudaRuntime).
  return new NcclAllReduce(id, ranks, rank, static_cast<CudaBackend&>(backend));
}
#endif

CudaModuleApi MakeApi() {
  CudaModuleApi api;
  api.version = kCudaModuleVersion;
  api.visible_devices = VisibleDevices;
  api.local_gpus = CudaRuntimeGpus;
  api.new_backend = NewBackend;
#if DTSIM_WITH_NCCL
  api.has_nccl = true;
  api.nccl_new_id = NcclNewId;
  api.new_all_reduce = NewAllReduce;
#endif
  return api;
}

}  // namespace
}  // namespace dtsim::exec

// The one symbol the module exports (the others are hidden).
extern "C" __attribute__((visibility("default"))) const dtsim::exec::CudaModuleApi*
dtsim_cuda_module_api() {
  static const dtsim::exec::CudaModuleApi api = dtsim::exec::MakeApi();
  return &api;
}
