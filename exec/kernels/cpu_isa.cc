#include "exec/kernels/cpu_isa.h"

#include <string>

#include <Eigen/Core>

#include "common/error.h"
#include "exec/kernels/cpu_backend.h"

#if DTSIM_HAVE_X86_ISA_KERNELS
// cpu_backend.cc built with DTSIM_CPU_NS=cpu_avx2 and cpu_avx512.
namespace dtsim::exec::cpu_avx2 {
std::unique_ptr<Backend> NewCpuBackend(int threads);
}  // namespace dtsim::exec::cpu_avx2
namespace dtsim::exec::cpu_avx512 {
std::unique_ptr<Backend> NewCpuBackend(int threads);
}  // namespace dtsim::exec::cpu_avx512
#endif

namespace dtsim::exec {

const char* CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kPortable: return "sse2 (portable)";
    case CpuIsa::kAvx2Fma: return "avx2+fma";
    case CpuIsa::kAvx512: return "avx512";
  }
  return "?";
}

bool CpuIsaAvailable(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kPortable: return true;
    // libgcc's CPUID check also asks the OS (XGETBV) whether it saves the
    // AVX (and AVX-512) registers.
    case CpuIsa::kAvx2Fma:
#if DTSIM_HAVE_X86_ISA_KERNELS
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
      return false;
#endif
    case CpuIsa::kAvx512:
#if DTSIM_HAVE_X86_ISA_KERNELS
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("fma");
#else
      return false;
#endif
  }
  return false;
}

CpuIsa BestCpuIsa() {
  for (CpuIsa isa : {CpuIsa::kAvx512, CpuIsa::kAvx2Fma})
    if (CpuIsaAvailable(isa)) return isa;
  return CpuIsa::kPortable;
}

std::unique_ptr<Backend> MakeCpuBackend(CpuIsa isa, int threads) {
  if (!CpuIsaAvailable(isa))
    throw UserError(std::string("the CPU kernels for ") + CpuIsaName(isa) +
                        " are not in this build or this CPU lacks those instructions",
                    "use the portable kernels (--portable)");
#if DTSIM_HAVE_X86_ISA_KERNELS
  if (isa == CpuIsa::kAvx2Fma) return cpu_avx2::NewCpuBackend(threads);
  if (isa == CpuIsa::kAvx512) return cpu_avx512::NewCpuBackend(threads);
#endif
  return cpu::NewCpuBackend(threads);
}

std::map<std::string, std::string> KernelLibraries() {
  return {{"eigen", std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) +
                        "." + std::to_string(EIGEN_MINOR_VERSION)}};
}

}  // namespace dtsim::exec
