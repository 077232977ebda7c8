// Every CUDA runtime, cuBLAS and NCCL call goes through a check macro, which
// turns a failure into an exception naming the call, its file and line:
//   DTSIM_CUDA_CHECK(cudaMalloc(&p, bytes));
//   DTSIM_CUBLAS_CHECK(cublasSgemm(...));
//   DTSIM_NCCL_CHECK(ncclAllReduce(...));
//   my_kernel<<<grid, block, 0, stream>>>(...); DTSIM_CUDA_CHECK_LAUNCH();
// This header includes no CUDA header; the macros need the library's header
// (cuda_runtime.h, cublas_v2.h, nccl.h) included where they are used.
#pragma once

#include <string>

namespace dtsim::exec {

// Throw std::runtime_error "file:line: <library> error <code> (<text>) in
// <expr>". `error_string` is the library's own text for `code`.
[[noreturn]] void ThrowCudaError(int code, const char* error_string, const char* expr,
                                 const char* file, int line);
[[noreturn]] void ThrowCublasError(int code, const char* error_string, const char* expr,
                                   const char* file, int line);
[[noreturn]] void ThrowNcclError(int code, const char* error_string, const char* expr,
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

// After a kernel launch: reports a bad launch configuration (or an earlier
// asynchronous error) at the launch site.
#define DTSIM_CUDA_CHECK_LAUNCH() DTSIM_CUDA_CHECK(cudaGetLastError())

#define DTSIM_CUBLAS_CHECK(call)                                                       \
  do {                                                                                 \
    const cublasStatus_t dtsim_cublas_status = (call);                                 \
    if (dtsim_cublas_status != CUBLAS_STATUS_SUCCESS)                                  \
      ::dtsim::exec::ThrowCublasError(static_cast<int>(dtsim_cublas_status),           \
                                      cublasGetStatusString(dtsim_cublas_status), #call, \
                                      __FILE__, __LINE__);                             \
  } while (0)

#define DTSIM_NCCL_CHECK(call)                                                         \
  do {                                                                                 \
    const ncclResult_t dtsim_nccl_status = (call);                                     \
    if (dtsim_nccl_status != ncclSuccess)                                              \
      ::dtsim::exec::ThrowNcclError(static_cast<int>(dtsim_nccl_status),               \
                                    ncclGetErrorString(dtsim_nccl_status), #call,      \
                                    __FILE__, __LINE__);                               \
  } while (0)
