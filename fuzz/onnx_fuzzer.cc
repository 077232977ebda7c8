// Fuzz target: the ONNX importer (docs/onnx_import.md). The input is the
// bytes of an ONNX file, read by models::ParseOnnxModel as `model: {file:
// x.onnx}` in a scenario reads it; for a file that loads, the graph's
// validation and totals, as `dtsim model` prints them. The bounds of
// models/onnx_import.h keep every input within the target's time and memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "models/graph.h"
#include "models/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  dtsim::fuzz::ExpectAnswerOrRefusal([&] {
    const dtsim::models::ModelGraph g = dtsim::models::ParseOnnxModel(bytes, "fuzz-input.onnx");
    g.Validate();
    (void)g.Totals();
  });
  return 0;
}
