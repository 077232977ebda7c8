// The memory model against published peak-memory figures
// (scenarios/validation/memory/runs.csv, each scenario's header cites its
// source; docs/validation.md, "Peak memory against published runs"). Each
// figure is compared with what it measures: PyTorch's max allocated
// against the tensors (the prediction without the CUDA context and NCCL's
// buffers), nvidia-smi against everything the process holds. The errors
// are pinned at the values docs/validation.md states, so that a change to
// the memory model shows there; the runs within the model's 10% margin
// must stay within it.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "sim/memory.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

struct PublishedPeak {
  std::string scenario;
  double measured_bytes = 0;
  bool allocated = false;  // max allocated (else nvidia-smi)
};

std::vector<PublishedPeak> ReadRuns() {
  std::ifstream f("scenarios/validation/memory/runs.csv");
  std::vector<PublishedPeak> runs;
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::istringstream cells(line);
    PublishedPeak r;
    std::string bytes, what;
    std::getline(cells, r.scenario, ',');
    std::getline(cells, bytes, ',');
    std::getline(cells, what, ',');
    r.measured_bytes = std::stod(bytes);
    r.allocated = what == "max allocated";
    runs.push_back(r);
  }
  return runs;
}

// Signed error in % of the measured peak; the largest stage's peak.
double PredictedError(const PublishedPeak& r) {
  const config::Scenario s = config::LoadScenario("scenarios/validation/memory/" + r.scenario);
  const Prediction p = Simulate(s);
  double peak = 0;
  for (const MemoryBreakdown& m : p.memory.stages)
    peak = std::max(peak, r.allocated ? m.Total() - m.workspace_bytes : m.Total());
  return 100 * (peak - r.measured_bytes) / r.measured_bytes;
}

// docs/validation.md's table, in runs.csv's order.
const std::vector<std::pair<std::string, double>> kStatedErrors = {
    {"megatron-ci-gpt-h100.yaml", -4.4},
    {"gpt2-xl-ddp-a100.yaml", -30.0},
    {"gpt2-xl-zero3-a100.yaml", -3.9},
    {"bloom-176b.yaml", -30.9},
};

TEST(PublishedPeakMemory, ErrorsAreThoseDocumented) {
  const std::vector<PublishedPeak> runs = ReadRuns();
  ASSERT_EQ(runs.size(), kStatedErrors.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ASSERT_EQ(runs[i].scenario, kStatedErrors[i].first);
    const double error = PredictedError(runs[i]);
    EXPECT_NEAR(error, kStatedErrors[i].second, 0.05) << runs[i].scenario;
    if (std::abs(kStatedErrors[i].second) <= 100 * kMemoryModelMargin) {
      EXPECT_LE(std::abs(error), 100 * kMemoryModelMargin) << runs[i].scenario;
    }
  }
}

}  // namespace
}  // namespace dtsim::sim
