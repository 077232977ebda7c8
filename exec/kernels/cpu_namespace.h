// DTSIM_CPU_NS: the namespace of the CPU kernels and CpuBackend being compiled.
#pragma once

// The namespace of this build of the kernels: `cpu` for the portable build
// (baseline x86-64, byte-identical results on every machine), another name
// for each instruction-set build that exec/kernels/CMakeLists.txt compiles
// from the same sources (cpu_isa.h), so that the builds' functions and
// Eigen's templates in them never share a symbol.
#ifndef DTSIM_CPU_NS
#define DTSIM_CPU_NS cpu
#endif
