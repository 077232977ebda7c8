// docs/predictions.md's "Mixed clusters": the step-log lines of the two
// mixed A100 + H100 scenarios, as printed, checked against what the
// simulator gives now (a change that moves a figure must move the text).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "config/scenario.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace dtsim {
namespace {

TEST(MixedClusterDoc, StepLogLinesAreThoseInPredictions) {
  std::ifstream f("docs/predictions.md", std::ios::binary);
  ASSERT_TRUE(f) << "docs/predictions.md not found (tests run from the repository root)";
  std::stringstream doc;
  doc << f.rdbuf();
  const std::string text = doc.str();
  for (const char* name : {"mixed-a100-h100-resnet50", "mixed-a100-h100-resnet50-balanced"}) {
    const config::Scenario s = config::LoadScenario("scenarios/" + std::string(name) + ".yaml");
    std::istringstream log(sim::StepLog(s, sim::Simulate(s)));
    int checked = 0;
    for (std::string line; std::getline(log, line);) {
      const bool quoted = line.rfind(std::string(name) + ": ", 0) == 0 ||
                          line.rfind("throughput: ", 0) == 0 ||
                          line.rfind("single device: ", 0) == 0 ||
                          line.rfind("node groups ", 0) == 0 || line.rfind("  a100: ", 0) == 0 ||
                          line.rfind("  h100: ", 0) == 0;
      if (!quoted) continue;
      ++checked;
      EXPECT_NE(text.find("\n" + line + "\n"), std::string::npos)
          << name << ": docs/predictions.md lacks the line\n" << line;
    }
    EXPECT_EQ(checked, 6) << name << ": the step log changed its lines";
  }
}

}  // namespace
}  // namespace dtsim
