// LoadCudaModule (exec/cuda_module.h) refuses, with a reason, what is not
// dtsim's CUDA module. Loading the real one is covered where a GPU is: the
// CLI tests run `dtsim exec --backend cuda` through it.
#include "exec/cuda_module.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace dtsim::exec {
namespace {

// Sets DTSIM_CUDA_MODULE for one test and restores it after.
class ModulePath {
 public:
  explicit ModulePath(const char* value) {
    if (const char* old = std::getenv("DTSIM_CUDA_MODULE")) old_ = old;
    ::setenv("DTSIM_CUDA_MODULE", value, 1);
  }
  ~ModulePath() {
    if (old_) ::setenv("DTSIM_CUDA_MODULE", old_->c_str(), 1);
    else ::unsetenv("DTSIM_CUDA_MODULE");
  }
  ModulePath(const ModulePath&) = delete;
  ModulePath& operator=(const ModulePath&) = delete;

 private:
  std::optional<std::string> old_;
};

TEST(CudaModule, MissingFileIsNamed) {
  ModulePath path("/nonexistent/libdtsim-cuda.so");
  std::string why;
  EXPECT_EQ(LoadCudaModule(&why), nullptr);
  EXPECT_NE(why.find("cannot load the CUDA module /nonexistent/libdtsim-cuda.so"),
            std::string::npos)
      << why;
}

// The C maths library loads but has no dtsim_cuda_module_api.
TEST(CudaModule, AnotherLibraryIsRefused) {
  ModulePath path("libm.so.6");
  std::string why;
  EXPECT_EQ(LoadCudaModule(&why), nullptr);
  EXPECT_NE(why.find("libm.so.6 is not dtsim's CUDA module"), std::string::npos) << why;
}

// Without the variable, the module is looked for beside the executable:
// this test's folder has none.
TEST(CudaModule, DefaultIsBesideTheExecutable) {
  if (std::getenv("DTSIM_CUDA_MODULE") != nullptr) GTEST_SKIP() << "DTSIM_CUDA_MODULE is set";
  std::string why;
  EXPECT_EQ(LoadCudaModule(&why), nullptr);
  EXPECT_NE(why.find("libdtsim-cuda.so"), std::string::npos) << why;
}

}  // namespace
}  // namespace dtsim::exec
