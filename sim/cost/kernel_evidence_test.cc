#include "sim/cost/kernel_evidence.h"

#include <gtest/gtest.h>

#include "sim/cost/gpu_kernel_model.h"

namespace dtsim::sim {
namespace {

// The generations DeepBench's sheets measured (shared/validation/deepbench
// README: M40, TITAN X; P100, 1080 Ti, TITAN X Pascal, TITAN Xp; V100; T4)
// and the H100 kernels of scenarios/fit/h100-kernels have kernel times.
TEST(KernelEvidence, GenerationsWithKernelTimes) {
  for (hw::GpuArch a : {hw::GpuArch::kMaxwell, hw::GpuArch::kPascal, hw::GpuArch::kVolta,
                        hw::GpuArch::kTuring, hw::GpuArch::kHopper})
    EXPECT_EQ(KernelEvidenceFor(a).level, KernelEvidence::kKernelTimes) << hw::GpuArchName(a);
}

// Kepler has no data anywhere in the project, and GpuKernelParams holds no
// value of its own for it (index 1 of every per-generation array is 0, so
// the shared constants stand in): it must read as unvalidated.
TEST(KernelEvidence, KeplerIsUnvalidatedAndBorrowsTheSharedConstants) {
  EXPECT_EQ(KernelEvidenceFor(hw::GpuArch::kKepler).level, KernelEvidence::kUnvalidated);
  const GpuKernelParams p;
  const auto kepler = static_cast<std::size_t>(hw::GpuArch::kKepler);
  EXPECT_EQ(p.simt_fraction_by_arch[kepler], 0);
  EXPECT_EQ(p.winograd_fraction_by_arch[kepler], 0);
}

// Ampere takes Volta's constants (GpuKernelParams' comment); only vTrain's
// whole iterations check it.
TEST(KernelEvidence, AmpereBorrowsVoltaAndIsCheckedEndToEndOnly) {
  EXPECT_EQ(KernelEvidenceFor(hw::GpuArch::kAmpere).level, KernelEvidence::kEndToEndOnly);
  const GpuKernelParams p;
  const auto ampere = static_cast<std::size_t>(hw::GpuArch::kAmpere);
  const auto volta = static_cast<std::size_t>(hw::GpuArch::kVolta);
  EXPECT_EQ(p.simt_fraction_by_arch[ampere], p.simt_fraction_by_arch[volta]);
  EXPECT_EQ(p.tensor_fraction_by_arch[ampere], p.tensor_fraction_by_arch[volta]);
}

}  // namespace
}  // namespace dtsim::sim
