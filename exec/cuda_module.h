// The CUDA backend lives in a module, libdtsim-cuda.so beside the dtsim
// executable, that dtsim loads only when a command needs a GPU (`exec
// --backend cuda`, `devices`). Every other command starts without the CUDA
// runtime, cuBLAS and NCCL (0.4 s and 220 MB of start-up on a 2-core VM);
// see exec/cuda/cuda_module.cc for the module's side. No CUDA type crosses
// this interface.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "exec/backend.h"
#include "exec/device_runtime.h"
#include "hw/catalog.h"

namespace dtsim::exec {

// Bumped whenever the table below changes; the loader refuses another.
inline constexpr int kCudaModuleVersion = 1;

using NcclId = std::array<char, 128>;  // the bytes of an ncclUniqueId

// What the module provides. The functions throw as the backend does.
struct CudaModuleApi {
  int version = 0;
  bool has_nccl = false;
  // GPUs the CUDA runtime sees (0 with `why` set when none).
  int (*visible_devices)(std::string* why) = nullptr;
  // One DeviceSpec per visible GPU (LocalGpus).
  std::vector<hw::DeviceSpec> (*local_gpus)(std::string* why) = nullptr;
  // A CudaBackend on GPU `device`; the caller deletes it.
  Backend* (*new_backend)(int device) = nullptr;
  // A fresh NCCL id (on one rank), and an all-reduce over `ranks` ranks on
  // `backend` (one made by new_backend); the caller deletes it. Null when
  // !has_nccl.
  NcclId (*nccl_new_id)() = nullptr;
  DeviceAllReduce* (*new_all_reduce)(const NcclId& id, int ranks, int rank,
                                     Backend& backend) = nullptr;
};

// The module's table, loaded (dlopen; again on each call, which returns the
// loaded module) from $DTSIM_CUDA_MODULE when set, else libdtsim-cuda.so in
// the folder of the running executable. Null when it cannot be loaded; `why`
// then says why.
const CudaModuleApi* LoadCudaModule(std::string* why);

}  // namespace dtsim::exec
