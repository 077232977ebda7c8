// Counter-based uniform numbers that host and device code compute the same
// way, so the CPU and CUDA backends draw identical dropout masks and
// synthetic data: a draw is a pure function of (seed, index). SplitMix64
// (Steele, Lea, Flood, OOPSLA 2014), as sim/engine/random.h, but callable from CUDA
// kernels (this header compiles under nvcc and plain C++).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DTSIM_HOST_DEVICE __host__ __device__
#else
#define DTSIM_HOST_DEVICE
#endif

namespace dtsim::exec {

DTSIM_HOST_DEVICE inline std::uint64_t CounterBits(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t x = seed ^ (index * 0x9e3779b97f4a7c15ULL);
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  // A second round decorrelates neighbouring indices of nearby seeds.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) with 24 random bits: exactly representable in float.
DTSIM_HOST_DEVICE inline float CounterUniform(std::uint64_t seed, std::uint64_t index) {
  return static_cast<float>(CounterBits(seed, index) >> 40) * (1.0f / 16777216.0f);
}

}  // namespace dtsim::exec
