#include "exec/kernels/cpu_isa.h"

#include <string>

#include "common/error.h"
#include "exec/kernels/cpu_backend.h"

#if DTSIM_HAVE_AVX2_KERNELS
namespace dtsim::exec::cpu_avx2 {
std::unique_ptr<Backend> NewCpuBackend();  // cpu_backend.cc built with DTSIM_CPU_NS=cpu_avx2
}  // namespace dtsim::exec::cpu_avx2
#endif

namespace dtsim::exec {

const char* CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kPortable: return "sse2 (portable)";
    case CpuIsa::kAvx2Fma: return "avx2+fma";
  }
  return "?";
}

bool CpuIsaAvailable(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kPortable: return true;
    case CpuIsa::kAvx2Fma:
#if DTSIM_HAVE_AVX2_KERNELS
      // libgcc's CPUID check also asks the OS (XGETBV) whether it saves the
      // AVX registers.
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
      return false;
#endif
  }
  return false;
}

CpuIsa BestCpuIsa() {
  return CpuIsaAvailable(CpuIsa::kAvx2Fma) ? CpuIsa::kAvx2Fma : CpuIsa::kPortable;
}

std::unique_ptr<Backend> MakeCpuBackend(CpuIsa isa) {
  if (!CpuIsaAvailable(isa))
    throw UserError(std::string("the CPU kernels for ") + CpuIsaName(isa) +
                        " are not in this build or this CPU lacks those instructions",
                    "use the portable kernels (--portable)");
#if DTSIM_HAVE_AVX2_KERNELS
  if (isa == CpuIsa::kAvx2Fma) return cpu_avx2::NewCpuBackend();
#endif
  return cpu::NewCpuBackend();
}

}  // namespace dtsim::exec
