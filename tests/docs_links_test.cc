// Every relative link of README.md and docs/*.md points to a file or folder
// that exists, so that moving a document cannot leave a reader at a dead
// link. A link is markdown's `[text](target)`; targets with a scheme
// (http:, https:, mailto:) and pure anchors (#section) are not files and
// are skipped; a target's own #anchor is cut before the check. Targets are
// resolved against the folder of the document that holds them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace dtsim {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> Documents() {
  std::vector<fs::path> docs = {"README.md"};
  for (const fs::directory_entry& e : fs::directory_iterator("docs"))
    if (e.path().extension() == ".md") docs.push_back(e.path());
  return docs;
}

TEST(DocsLinks, EveryRelativeLinkPointsToAnExistingFile) {
  ASSERT_TRUE(fs::exists("README.md")) << "tests run from the repository root";
  const std::regex link(R"(\]\(([^)\s]+)\))");
  const std::regex scheme(R"(^[a-z]+:)");
  int checked = 0;
  for (const fs::path& doc : Documents()) {
    std::ifstream in(doc);
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (auto it = std::sregex_iterator(s.begin(), s.end(), link); it != std::sregex_iterator();
         ++it) {
      std::string target = (*it)[1].str();
      if (target.empty() || target[0] == '#' || std::regex_search(target, scheme)) continue;
      target = target.substr(0, target.find('#'));
      const fs::path resolved = doc.parent_path() / target;
      EXPECT_TRUE(fs::exists(resolved)) << doc.string() << " links to " << (*it)[1].str()
                                        << ", which does not exist (" << resolved.string() << ")";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace dtsim
