// docs/architecture.md draws the house: which top-level folder includes
// which. This test reads the drawing's arrows and compares them with the
// folder-to-folder #include edges of the sources, so that a new folder or a
// new arrow fails here until it is drawn (and a removed one until it is
// erased).
//
// The drawing, as parsed here: the first fenced block that opens with
// "```mermaid" in docs/architecture.md. Each line of that block of the form
//   FROM --> TO
// (spaces around, nothing else on the line) is one arrow: folder FROM has a
// file that includes a header of folder TO. A line holding only a folder
// name draws a folder with no arrow. Every other line ("graph BT", comments
// starting with %%, blank lines) is ignored.
//
// The sources, as read here: every top-level folder of the repository that
// holds C++ or CUDA files (.h, .cc, .cu, .cuh), except the harness folders
// (tests/, bench/, fuzz/: they may include any floor), cmake/ and build
// folders. An edge FROM -> TO is a line `#include "TO/..."` in a file of
// FROM other than a unit test (`*_test.cc`, `*_test.cu`: tests may use a
// higher floor's tools to check a lower one), where TO is a top-level
// folder of the repository and differs from FROM.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>

namespace dtsim {
namespace {

namespace fs = std::filesystem;
using Edges = std::set<std::pair<std::string, std::string>>;

bool IsSource(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".h" || ext == ".cc" || ext == ".cu" || ext == ".cuh";
}

bool IsUnitTest(const fs::path& p) {
  const std::string stem = p.stem().string();
  return stem.size() > 5 && stem.compare(stem.size() - 5, 5, "_test") == 0;
}

// Top-level folders (tests run from the repository root), hidden ones and
// build folders left out.
std::set<std::string> TopLevelFolders() {
  std::set<std::string> folders;
  for (const fs::directory_entry& e : fs::directory_iterator(".")) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name[0] != '.' && name.rfind("build", 0) != 0) folders.insert(name);
  }
  return folders;
}

// The folders the drawing must show: those holding sources, less harness.
std::set<std::string> CodeFolders() {
  const std::set<std::string> harness = {"tests", "bench", "fuzz", "cmake"};
  std::set<std::string> code;
  for (const std::string& folder : TopLevelFolders()) {
    if (harness.count(folder)) continue;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(folder))
      if (e.is_regular_file() && IsSource(e.path())) {
        code.insert(folder);
        break;
      }
  }
  return code;
}

Edges IncludeEdges(const std::set<std::string>& code) {
  const std::set<std::string> top = TopLevelFolders();
  const std::regex include(R"(^\s*#\s*include\s*"([^/"]+)/)");
  Edges edges;
  for (const std::string& from : code)
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(from)) {
      if (!e.is_regular_file() || !IsSource(e.path()) || IsUnitTest(e.path())) continue;
      std::ifstream in(e.path());
      std::smatch m;
      for (std::string line; std::getline(in, line);)
        if (std::regex_search(line, m, include) && top.count(m[1].str()) && m[1].str() != from)
          edges.insert({from, m[1].str()});
    }
  return edges;
}

// The drawing's arrows and the folders it names (see the file comment).
void ReadDrawing(Edges* arrows, std::set<std::string>* drawn) {
  std::ifstream in("docs/architecture.md");
  ASSERT_TRUE(in) << "docs/architecture.md not found (tests run from the repository root)";
  const std::regex arrow(R"(^\s*([a-z_]+)\s*-->\s*([a-z_]+)\s*$)");
  const std::regex folder(R"(^\s*([a-z_]+)\s*$)");
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      inside = line.rfind("```mermaid", 0) == 0;
      continue;
    }
    if (line.rfind("```", 0) == 0) return;
    std::smatch m;
    if (std::regex_match(line, m, arrow)) {
      arrows->insert({m[1].str(), m[2].str()});
      drawn->insert(m[1].str());
      drawn->insert(m[2].str());
    } else if (std::regex_match(line, m, folder)) {
      drawn->insert(m[1].str());
    }
  }
  ADD_FAILURE() << "docs/architecture.md has no closed ```mermaid block";
}

std::string List(const Edges& edges) {
  std::string s;
  for (const auto& [from, to] : edges) s += "\n  " + from + " --> " + to;
  return s;
}

TEST(DocsArchitecture, DrawingShowsEveryIncludeEdgeAndNoOther) {
  Edges arrows;
  std::set<std::string> drawn;
  ReadDrawing(&arrows, &drawn);
  const std::set<std::string> code = CodeFolders();
  const Edges real = IncludeEdges(code);
  ASSERT_FALSE(real.empty());
  Edges missing, extra;
  for (const auto& e : real)
    if (!arrows.count(e)) missing.insert(e);
  for (const auto& e : arrows)
    if (!real.count(e)) extra.insert(e);
  EXPECT_TRUE(missing.empty()) << "docs/architecture.md should draw:" << List(missing);
  EXPECT_TRUE(extra.empty()) << "docs/architecture.md draws edges no source has:" << List(extra);
  for (const std::string& folder : code)
    EXPECT_TRUE(drawn.count(folder)) << "docs/architecture.md should draw folder " << folder;
}

// The house rules the drawing illustrates: sim/ and exec/ never include
// each other (both consume the plan), and common/ includes no other folder.
TEST(DocsArchitecture, SimAndExecStayApartAndCommonIsTheGround) {
  const Edges real = IncludeEdges(CodeFolders());
  EXPECT_FALSE(real.count({"sim", "exec"}));
  EXPECT_FALSE(real.count({"exec", "sim"}));
  for (const auto& [from, to] : real) EXPECT_NE(from, "common") << "common includes " << to;
}

// No include cycle between sibling folders at any depth: for an #include
// from a file in folder F of a header in folder H (non-test sources of the
// code folders; the header's path exists), with A their deepest common
// folder and neither F nor H equal to A, the edge runs from A's subfolder
// holding F to A's subfolder holding H. Those edges must form no cycle
// under any A (sim/cost and sim/engine, exec/runtime and exec/train once
// included each other). A folder's own files and its subfolders' may
// include each other: its top level is their shared ground or their
// composition.
TEST(DocsArchitecture, NoIncludeCycleBetweenSiblingFoldersAtAnyDepth) {
  const std::regex include(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::map<fs::path, std::set<fs::path>> edges;   // sibling folder -> sibling folders
  std::map<std::pair<fs::path, fs::path>, std::string> why;
  for (const std::string& top : CodeFolders())
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(top)) {
      if (!e.is_regular_file() || !IsSource(e.path()) || IsUnitTest(e.path())) continue;
      const fs::path from = e.path().parent_path().lexically_normal();
      std::ifstream in(e.path());
      std::smatch m;
      for (std::string line; std::getline(in, line);) {
        if (!std::regex_search(line, m, include)) continue;
        const fs::path header = fs::path(m[1].str()).lexically_normal();
        if (!fs::exists(header)) continue;
        const fs::path to = header.parent_path();
        // The deepest common folder and the children of it on each side.
        auto f = from.begin(), t = to.begin();
        fs::path common;
        while (f != from.end() && t != to.end() && *f == *t) common /= *f++, ++t;
        if (f == from.end() || t == to.end()) continue;  // one holds the other
        const fs::path a = common / *f, b = common / *t;
        edges[a].insert(b);
        why.emplace(std::pair(a, b), e.path().string() + " includes " + header.string());
      }
    }
  ASSERT_FALSE(edges.empty());
  std::map<fs::path, int> state;  // 0 new, 1 on the path, 2 done
  std::vector<fs::path> path;
  std::string cycle;
  std::function<void(const fs::path&)> visit = [&](const fs::path& v) {
    state[v] = 1;
    path.push_back(v);
    for (const fs::path& w : edges[v]) {
      if (!cycle.empty()) break;
      if (state[w] == 1) {
        for (auto it = std::find(path.begin(), path.end(), w); it != path.end(); ++it) {
          const fs::path& next = it + 1 == path.end() ? w : *(it + 1);
          cycle += "\n  " + why[{*it, next}];
        }
      } else if (state[w] == 0) {
        visit(w);
      }
    }
    path.pop_back();
    state[v] = 2;
  };
  for (const auto& [v, unused] : edges)
    if (state[v] == 0 && cycle.empty()) visit(v);
  EXPECT_EQ(cycle, "") << "sibling folders include each other:" << cycle;
}

}  // namespace
}  // namespace dtsim
