#include "exec/cuda/cuda_check.h"

#include <stdexcept>

namespace dtsim::exec {

void ThrowCudaError(int code, const char* error_string, const char* expr, const char* file,
                    int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": CUDA error " +
                           std::to_string(code) + " (" + error_string + ") in " + expr);
}

}  // namespace dtsim::exec
