// Every CUDA runtime call goes through DTSIM_CUDA_CHECK, which turns a
// failure into an exception naming the call's file and line.
#pragma once

#include <string>

namespace dtsim::exec {

[[noreturn]] void ThrowCudaError(int code, const char* error_string, const char* expr,
                                 const char* file, int line);

}  // namespace dtsim::exec

#define DTSIM_CUDA_CHECK(call)                                                         \
  do {                                                                                 \
    const cudaError_t dtsim_cuda_status = (call);                                      \
    if (dtsim_cuda_status != cudaSuccess)                                              \
      ::dtsim::exec::ThrowCudaError(static_cast<int>(dtsim_cuda_status),               \
                                    cudaGetErrorString(dtsim_cuda_status), #call,      \
                                    __FILE__, __LINE__);                               \
  } while (0)
