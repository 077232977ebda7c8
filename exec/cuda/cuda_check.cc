#include "exec/cuda/cuda_check.h"

#include <stdexcept>

namespace dtsim::exec {
namespace {

[[noreturn]] void ThrowLibraryError(const char* library, int code, const char* error_string,
                                    const char* expr, const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + library +
                           " error " + std::to_string(code) + " (" + error_string + ") in " +
                           expr);
}

}  // namespace

void ThrowCudaError(int code, const char* error_string, const char* expr, const char* file,
                    int line) {
  ThrowLibraryError("CUDA", code, error_string, expr, file, line);
}

void ThrowCublasError(int code, const char* error_string, const char* expr, const char* file,
                      int line) {
  ThrowLibraryError("cuBLAS", code, error_string, expr, file, line);
}

void ThrowNcclError(int code, const char* error_string, const char* expr, const char* file,
                    int line) {
  ThrowLibraryError("NCCL", code, error_string, expr, file, line);
}

}  // namespace dtsim::exec
