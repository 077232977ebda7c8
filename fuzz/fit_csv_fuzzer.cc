// Fuzz target: the runs file of `dtsim fit` (docs/fit.md). The input is the
// text of a CSV file, read by validation::ParseMeasuredRuns as if it were
// scenarios/fit/fuzz-input.csv, so that the shipped runs' relative scenario
// paths (../gpu/...) resolve from the repository root, where the target
// runs: rows, overrides (read with the YAML bounds of common/yaml_document.h)
// and the scenarios they load.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "validation/measured_runs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dtsim::fuzz::ExpectAnswerOrRefusal([&] {
    (void)dtsim::validation::ParseMeasuredRuns(text, "scenarios/fit/fuzz-input.csv");
  });
  return 0;
}
