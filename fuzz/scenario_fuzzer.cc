// Fuzz target: the scenario loader, sweep expansion included. The input is
// the text of a scenario file; it goes through study::ParseSweep as `dtsim
// sweep` reads it (a file without lists is a sweep of one point, loaded as
// `dtsim run` loads it), one point at a time. For a file that loads, the
// model of the first few points is built as `run` would build it, which
// reads model files and checks the sizes of their layers.
//
// The input is named scenarios/local/fuzz-input.yaml, so the relative model
// paths of the shipped scenarios (../../models/examples/...) resolve when
// the target runs from the repository root (scripts/fuzz.sh does).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/scenario.h"
#include "fuzz/fuzz_check.h"
#include "models/graph.h"
#include "study/sweep.h"

namespace {

// Models built per input: each costs up to the graph of a large transformer.
constexpr std::size_t kMaxModelsBuilt = 4;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dtsim::fuzz::ExpectAnswerOrRefusal([&] {
    const dtsim::study::Sweep sweep =
        dtsim::study::ParseSweep(text, "scenarios/local/fuzz-input.yaml", /*jobs=*/1);
    const std::size_t n = std::min(sweep.points.size(), kMaxModelsBuilt);
    for (std::size_t i = 0; i < n; ++i) {
      const dtsim::models::ModelGraph g =
          dtsim::config::BuildWorkloadModel(sweep.points[i].scenario);
      (void)g.Totals();
    }
  });
  return 0;
}
