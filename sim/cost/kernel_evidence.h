// What the GPU kernel model's constants of each generation were checked
// against, so that a prediction for a generation without kernel data says
// so (`dtsim devices`, report.json's kernel_model_evidence, the step log).
#pragma once

#include "hw/catalog.h"

namespace dtsim::sim {

enum class KernelEvidence {
  // The generation's constants are fitted or checked on measured kernel
  // times of its own boards (held out per GPU where fitted).
  kKernelTimes,
  // No kernel times of the generation: its constants are another
  // generation's, but whole training steps on it were predicted against
  // measurements.
  kEndToEndOnly,
  // Neither: the constants are borrowed and nothing measured on the
  // generation has checked them.
  kUnvalidated,
};
const char* KernelEvidenceName(KernelEvidence e);  // "kernel times", "end to end only", "unvalidated"

struct KernelEvidenceEntry {
  KernelEvidence level = KernelEvidence::kUnvalidated;
  const char* basis = "";  // the data, in words, with where its results are
};

// The evidence for `arch`'s constants in sim::GpuKernelParams.
KernelEvidenceEntry KernelEvidenceFor(hw::GpuArch arch);

}  // namespace dtsim::sim
