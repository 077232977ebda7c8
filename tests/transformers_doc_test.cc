// docs/transformers.md's Llama 2 7B block, loaded as a scenario: the
// parameters the page states are the ones the block builds.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "config/scenario.h"

namespace dtsim {
namespace {

std::string ReadDoc() {
  std::ifstream f("docs/transformers.md", std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(TransformersDoc, LlamaTwoSevenBBlockBuildsTheStatedCount) {
  const std::string doc = ReadDoc();
  ASSERT_FALSE(doc.empty()) << "docs/transformers.md not found (tests run from the repository root)";
  // The first ```yaml block and the bold figure after it.
  const std::size_t begin = doc.find("```yaml\n");
  ASSERT_NE(begin, std::string::npos);
  const std::size_t end = doc.find("```", begin + 8);
  ASSERT_NE(end, std::string::npos);
  const std::string yaml = doc.substr(begin + 8, end - begin - 8);
  std::smatch m;
  const std::string after = doc.substr(end);
  ASSERT_TRUE(std::regex_search(after, m, std::regex(R"(\*\*([0-9,]+) parameters \(([0-9.]+) B\)\*\*)")));
  const std::string digits = std::regex_replace(m[1].str(), std::regex(","), "");
  const std::int64_t stated = std::stoll(digits);
  // Hugging Face LlamaForCausalLM built from meta-llama/Llama-2-7b-hf's
  // config: sum of p.numel() = 6,738,415,616 (also models/zoo_test.cc).
  EXPECT_EQ(stated, 6738415616);
  EXPECT_EQ(m[2].str(), "6.74");
  const config::Scenario s = config::ParseScenario(yaml, "docs/transformers.md");
  EXPECT_EQ(config::BuildWorkloadModel(s).Totals().params, stated);
}

}  // namespace
}  // namespace dtsim
