// docs/tta.md quotes the committed time-to-accuracy check
// (results/tta-fashion-mnist/, written by scripts/tta_check.py): every row
// of the summary's tables, and its medians, must appear in the document as
// the script wrote them, so that a rerun that changes a figure fails until
// the document follows.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace dtsim {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(TtaResultsDoc, QuotesEverySummaryRow) {
  const std::string summary = Slurp("results/tta-fashion-mnist/summary.md");
  const std::string doc = Slurp("docs/tta.md");
  ASSERT_FALSE(summary.empty()) << "results/tta-fashion-mnist/summary.md not found (tests run "
                                   "from the repository root)";
  ASSERT_FALSE(doc.empty());
  std::istringstream lines(summary);
  int quoted = 0;
  for (std::string line; std::getline(lines, line);) {
    const bool row = line.rfind("| ", 0) == 0 && line.find("---") == std::string::npos;
    const bool medians = line.rfind("Median |error|", 0) == 0;
    if (!row && !medians) continue;
    EXPECT_NE(doc.find(line), std::string::npos) << "docs/tta.md should quote: " << line;
    ++quoted;
  }
  // Two tables (settings, networks) and the medians line.
  EXPECT_GE(quoted, 5);
}

}  // namespace
}  // namespace dtsim
