// Fuzz target: a torch.profiler trace (docs/measured_costs.md), as
// `dtsim profile --torch-trace` reads it. The input is the trace's JSON
// text, imported by config::ImportTorchTrace against the zoo's CIFAR-10 CNN
// (the model of the committed traces the seeds come from).
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/torch_trace.h"
#include "fuzz/fuzz_check.h"
#include "models/zoo.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dtsim::models::ModelGraph graph = dtsim::models::BuildZooModel("cifar10-cnn");
  const std::string text(reinterpret_cast<const char*>(data), size);
  dtsim::fuzz::ExpectAnswerOrRefusal([&] {
    dtsim::config::TorchTraceReport report;
    (void)dtsim::config::ImportTorchTrace(text, "fuzz-input.json", graph, &report);
  });
  return 0;
}
