// The wait for the slowest GPU of a synchronous step.
//
// GPUs of one model and SKU do not run at one speed: manufacturing
// variability and each chip's power management leave some of a fleet
// slower than others under the same load (Sinha et al., "Not All GPUs Are
// Created Equal: Characterizing Variability in Large-Scale,
// Accelerator-Rich Systems", SC'22). A step that synchronises N GPUs (the
// gradient reduction of data parallelism; the pipeline's and tensor
// groups' exchanges inside it) moves at the pace of the slowest of them.
// With per-GPU speeds spread normally with coefficient of variation
// sigma, the expected slowest of N is
//
//   pace(N) = 1 + sigma x E[max of N standard normals]
//
// (E = 0 for N = 1, 0.564 for 2, 1.54 for 10, 3.24 for 1,000, 3.85 for
// 10,000), the factor by which the step's compute is slower than one
// typical GPU's. Weak scaling thus loses sigma x (E[N2] - E[N1]) between
// two sizes even where communication is hidden.
#pragma once

#include <cstdint>

#include "hw/catalog.h"

namespace dtsim::sim {

// E[max of n independent standard normals], by quadrature of
// x n phi(x) Phi(x)^(n-1) (absolute error below 1e-6 for n up to 10^7).
// REQUIRES: n >= 1.
double ExpectedMaxOfNormals(std::int64_t n);

// Coefficient of variation of the sustained speed of GPUs of generation
// `arch` across a fleet: the default of cluster.gpu_speed_spread
// (slowest_gpu.cc gives the source of each figure).
double DefaultGpuSpeedSpread(hw::GpuArch arch);

// pace(N) above: 1 + spread x ExpectedMaxOfNormals(gpus). REQUIRES:
// spread >= 0, gpus >= 1.
double SlowestGpuPace(double spread, std::int64_t gpus);

}  // namespace dtsim::sim
