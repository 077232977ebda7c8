// Instruction-set builds of the CPU kernels, chosen at run time.
//
// exec/kernels/ is compiled once for baseline x86-64 (SSE2, the portable
// build: byte-identical results on every x86-64 machine) and, on x86-64,
// once more for AVX2 with FMA (Haswell, Zen and later) and once for AVX-512
// (F, VL, DQ, BW: Skylake-SP, Ice Lake, Zen 4 and later), each build in its
// own namespace (cpu_namespace.h). Eigen's GEMM uses 8- or 16-wide FMA there;
// each build's results are deterministic for a given build and differ from
// the portable build's in the last bits (fused multiply-adds round once).
//
//   std::unique_ptr<Backend> b = MakeCpuBackend(BestCpuIsa());  // fastest here
//   std::unique_ptr<Backend> p = MakeCpuBackend(CpuIsa::kPortable);
#pragma once

#include <map>
#include <memory>
#include <string>

#include "exec/backend.h"

namespace dtsim::exec {

enum class CpuIsa { kPortable, kAvx2Fma, kAvx512 };

// "sse2 (portable)", "avx2+fma", "avx512".
const char* CpuIsaName(CpuIsa isa);

// Whether this binary has the build and this CPU (and OS) runs it.
bool CpuIsaAvailable(CpuIsa isa);

// The fastest available build: the widest vectors this CPU runs.
CpuIsa BestCpuIsa();

// A CpuBackend of that build on `threads` threads (CpuBackend says what runs
// on them). Throws UserError when the build is not available or threads < 1.
std::unique_ptr<Backend> MakeCpuBackend(CpuIsa isa, int threads = 1);

// The libraries the CPU kernels are built on, name -> version
// ({"eigen": "3.4.0"}), for the files that record measurements.
std::map<std::string, std::string> KernelLibraries();

}  // namespace dtsim::exec
