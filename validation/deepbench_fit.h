// How the kernel model's constants (sim::GpuKernelParams) are chosen from
// DeepBench's measured kernels, and how well they predict GPUs they were not
// chosen on.
//
// Procedure (deterministic; the same rows give the same constants):
//  1. Objective: the mean over rows of |ln(predicted / measured)|, which
//     weighs a 2x error the same in both directions and is not dominated by
//     the few very slow rows.
//  2. Shared constants (simt_fraction, tensor_fraction, simt_half_reuse, tensor_half_reuse, k_fill,
//  implicit_gemm_fraction,
//     winograd_fraction, kernel_fixed_s), with no per-generation fraction:
//     coordinate descent from FitStart()'s values (round numbers chosen
//     before looking at the data), each constant in
//     turn tried at its value x {0.6, 0.75, 0.85, 0.93, 1.07, 1.15, 1.3, 1.6}
//     and kept at the best; rounds until a round improves the objective by
//     less than 1e-4, at most 8; then the same with x {0.97, 0.99, 1.01,
//     1.03}. Fractions of a peak stay at most 1.3.
//  3. Then, shared constants fixed, per GPU generation present in the rows:
//     the SIMT fraction and half reuse (from every row of that generation:
//     each generation came with its own cuBLAS/cuDNN) and the tensor
//     fraction (from its fp16-mixed rows), the same way.
// memory_fraction is not fitted (GpuKernelParams gives its source).
//  4. Then, all else fixed, each board's clock fraction from its own rows.
//  Steps 2 to 4 use the GEMM and convolution rows only; the recurrent
//  layers' rows (rnn.csv) enter at step 5:
//  5. All else fixed, the recurrent-step constants (rnn_step_fraction,
//     rnn_dgrad_fraction, rnn_host_step_s) shared, then all three per
//     generation, the same way. These are
//     speeds relative to the model, not fractions of a peak: no 1.3 bound.
// A generation without rows keeps the shared values of step 2; so does a
// GPU held out of the fit whose generation has no other GPU; a held-out
// board has no clock fraction (1). (The shipped
// defaults then give Ampere and Hopper Volta's values; GpuKernelParams says
// why.)
#pragma once

#include <string>
#include <vector>

#include "hw/catalog.h"
#include "sim/cost/gpu_kernel_model.h"
#include "validation/deepbench.h"

namespace dtsim::validation {

// The objective of step 1 over `rows` with `params`. REQUIRES: every row's
// GPU is in `catalog` with its microarchitecture.
double DeepbenchObjective(const std::vector<DeepbenchMeasurement>& rows,
                          const hw::HardwareCatalog& catalog, const sim::GpuKernelParams& params);

// Where the descent starts: fractions 0.87 (SIMT) and 0.80 (tensor),
// half reuse 4 and 12, k_fill 32, implicit GEMM 0.90, Winograd 0.75, 4 us
// per kernel; no per-generation values; memory_fraction as shipped.
sim::GpuKernelParams FitStart();

// Step 3 alone, for a generation DeepBench did not measure (the H100's rows
// of scenarios/fit/h100-kernels): each generation of `rows` gets its values
// fitted on its rows, starting from base's shared values; the shared values,
// the other generations and the boards' clocks stay as in `base`.
sim::GpuKernelParams FitGenerationParams(const std::vector<DeepbenchMeasurement>& rows,
                                         const hw::HardwareCatalog& catalog,
                                         sim::GpuKernelParams base);

// Steps 2 to 5. Fitting every row reproduces the shipped GpuKernelParams.
sim::GpuKernelParams FitKernelParams(const std::vector<DeepbenchMeasurement>& rows,
                                     const hw::HardwareCatalog& catalog);

// Leave-one-GPU-out: for each GPU of the rows (in order of first row), the
// constants fitted on every other GPU's rows. `jobs` threads (0 = cores).
struct HeldOutFit {
  std::string gpu;
  sim::GpuKernelParams params;
};
std::vector<HeldOutFit> FitLeaveOneGpuOut(const std::vector<DeepbenchMeasurement>& rows,
                                          const hw::HardwareCatalog& catalog, int jobs);

// The constants as C++ source lines ("  p.simt_fraction = 0.871;"), for the
// fit's report and to paste into GpuKernelParams.
std::string ParamsAsText(const sim::GpuKernelParams& params);

}  // namespace dtsim::validation
