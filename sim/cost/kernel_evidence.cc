#include "sim/cost/kernel_evidence.h"

namespace dtsim::sim {

const char* KernelEvidenceName(KernelEvidence e) {
  switch (e) {
    case KernelEvidence::kKernelTimes:
      return "kernel times";
    case KernelEvidence::kEndToEndOnly:
      return "end to end only";
    case KernelEvidence::kUnvalidated:
      return "unvalidated";
  }
  return "?";
}

KernelEvidenceEntry KernelEvidenceFor(hw::GpuArch arch) {
  // The rows behind each entry: shared/validation/deepbench (README there)
  // for Maxwell to Turing, results/deepbench/ for the errors;
  // scenarios/fit/h100-kernels and results/kernels-h100/ for Hopper;
  // shared/validation/vtrain and results/vtrain-megatron/ for Ampere.
  switch (arch) {
    case hw::GpuArch::kMaxwell:
      return {KernelEvidence::kKernelTimes,
              "Baidu DeepBench GEMM, convolution and RNN times on M40 and TITAN X (Maxwell), "
              "leave-one-GPU-out in results/deepbench/"};
    case hw::GpuArch::kPascal:
      return {KernelEvidence::kKernelTimes,
              "Baidu DeepBench GEMM, convolution and RNN times on P100 (PCIe), GTX 1080 Ti, TITAN X "
              "(Pascal) and TITAN Xp, leave-one-GPU-out in results/deepbench/"};
    case hw::GpuArch::kVolta:
      return {KernelEvidence::kKernelTimes,
              "Baidu DeepBench GEMM, convolution and RNN times on V100 SXM2 (DGX-1), "
              "leave-one-GPU-out in results/deepbench/"};
    case hw::GpuArch::kTuring:
      return {KernelEvidence::kKernelTimes,
              "Baidu DeepBench GEMM and convolution times on T4, leave-one-GPU-out in "
              "results/deepbench/"};
    case hw::GpuArch::kHopper:
      return {KernelEvidence::kKernelTimes,
              "this project's H100 SXM kernel times (ResNet-50's convolutions and GEMMs, fp32; "
              "scenarios/fit/h100-kernels, 2-fold in results/kernels-h100/); tensor-core "
              "constants are Volta's"};
    case hw::GpuArch::kAmpere:
      return {KernelEvidence::kEndToEndOnly,
              "no kernel times: Volta's constants; whole Megatron steps on A100 checked against "
              "vTrain's 1,549 measured iterations (results/vtrain-megatron/)"};
    case hw::GpuArch::kKepler:
      return {KernelEvidence::kUnvalidated,
              "no kernel or step times of this generation: the constants fitted to all DeepBench "
              "GPUs together stand in"};
    case hw::GpuArch::kUnknown:
      break;
  }
  return {KernelEvidence::kUnvalidated, "no microarchitecture: the kernel model does not apply"};
}

}  // namespace dtsim::sim
