// Fuzz target: the Chakra execution-trace importer (docs/chakra.md). The
// input is the bytes of one rank's trace (PREFIX.0.et), imported as a
// one-rank plan twice: as read (every defect refused) and with the
// clean-ups `dtsim chakra` offers (dangling dependencies dropped, control
// dependencies ignored, host ops serialised); for a trace that imports,
// the plan's tasks are walked.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "plan/chakra_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<dtsim::plan::ChakraTrace> traces = {
      {"fuzz-input.0.et", std::string(reinterpret_cast<const char*>(data), size)}};
  for (const bool clean : {false, true}) {
    dtsim::fuzz::ExpectAnswerOrRefusal([&] {
      dtsim::plan::ChakraImportOptions options;
      options.compute_flops_per_s = 1e12;
      options.cleanup.drop_dangling_deps = clean;
      options.cleanup.ignore_ctrl_deps = clean;
      options.cleanup.host_ops =
          clean ? dtsim::plan::ChakraHostOps::kSerialize : dtsim::plan::ChakraHostOps::kRefuse;
      dtsim::plan::ChakraImportReport report;
      const dtsim::plan::Plan plan = dtsim::plan::ImportChakra(traces, options, &report);
      std::size_t deps = 0;
      for (dtsim::plan::TaskId t = 0; t < static_cast<dtsim::plan::TaskId>(plan.num_tasks()); ++t)
        deps += plan.deps(t).size();
      (void)deps;
    });
  }
  return 0;
}
