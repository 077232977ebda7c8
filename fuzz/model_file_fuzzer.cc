// Fuzz target: the model-file loader (docs/model_file.md). The input is the
// text of a model file, read by models::ParseModelYaml as `model: {file:
// ...}` in a scenario reads it; for a file that loads, the graph's totals
// (parameters, FLOPs, saved activations) are computed as `dtsim model`
// prints them, which is where sizes overflow.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "models/graph.h"
#include "models/zoo.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dtsim::fuzz::ExpectAnswerOrRefusal([&] {
    const dtsim::models::ModelGraph g = dtsim::models::ParseModelYaml(text, "fuzz-input.yaml");
    g.Validate();
    (void)g.Totals();
  });
  return 0;
}
