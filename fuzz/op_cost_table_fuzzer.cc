// Fuzz target: an op-cost table (docs/measured_costs.md), the JSON that
// `dtsim profile` writes and workload.cost_table reads. The input is the
// file's text, read by config::ParseOpCostTable as if it were
// fuzz-input.json, then checked as the loader checks it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/op_cost_table.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dtsim::fuzz::ExpectAnswerOrRefusal([&] {
    const dtsim::config::OpCostTable t = dtsim::config::ParseOpCostTable(text, "fuzz-input.json");
    (void)dtsim::config::OpCostTableProblem(t);
  });
  return 0;
}
