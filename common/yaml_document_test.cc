#include "common/yaml_document.h"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"

namespace dtsim {
namespace {

// The UserError `text` is refused with, or a test failure. The parse must
// also end within a second: these inputs are a few bytes (a loop would be
// stopped by ctest's TIMEOUT, cmake/DtsimHelpers.cmake).
UserError RefusalOf(const std::string& text) {
  const auto start = std::chrono::steady_clock::now();
  try {
    ParseYamlDocument(text, "t.yaml");
  } catch (const UserError& e) {
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
              1.0)
        << "input: " << text;
    return e;
  }
  ADD_FAILURE() << "accepted: " << text;
  return UserError("none");
}

TEST(YamlDocumentTest, StrayCommaIsRefusedWhereYamlCppLoadAllLoops) {
  // Issue 10 item 9: `printf ',\n' > c.yaml; dtsim run c.yaml` grew memory
  // without bound (YAML::LoadAll, jbeder/yaml-cpp#1040).
  const UserError e = RefusalOf(",\n");
  EXPECT_EQ(e.where().file, "t.yaml");
  EXPECT_EQ(e.where().line, 1);
  EXPECT_EQ(e.where().column, 1);
  EXPECT_NE(e.message().find("',' cannot start a value"), std::string::npos) << e.what();
}

TEST(YamlDocumentTest, StrayTokenAfterADocumentIsRefusedAtTheToken) {
  const UserError e = RefusalOf("a: 1\n,\n");
  EXPECT_EQ(e.where().line, 2) << e.what();
  EXPECT_EQ(e.where().column, 1) << e.what();
}

TEST(YamlDocumentTest, EveryInputOfUpToTwoSyntaxCharactersAnswers) {
  // All strings of one or two characters from YAML's indicators, blanks and
  // a letter (24 + 24^2 = 600 inputs): each is parsed or refused, never
  // loops (the ones yaml-cpp's LoadAll loops on are among them: ",", "]").
  const std::string alphabet = ",[]{}:-?&*!|>'\"#%@` \na.\t";
  std::vector<std::string> inputs;
  for (char a : alphabet) {
    inputs.emplace_back(1, a);
    for (char b : alphabet) inputs.push_back(std::string{a, b});
  }
  for (const std::string& text : inputs) {
    const auto start = std::chrono::steady_clock::now();
    try {
      ParseYamlDocument(text, "t.yaml");
    } catch (const UserError&) {
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
              1.0)
        << "input: " << text;
  }
  for (const char* text : {",", "]", "}", ",\n", "- a\n,\n", "a: [1]\n]\n", "{a: 1}\n}\n"}) {
    RefusalOf(text);
  }
}

TEST(YamlDocumentTest, SecondDocumentIsRefusedAtItsStart) {
  const UserError e = RefusalOf("a: 1\n---\nb: 2\n");
  EXPECT_EQ(e.where().line, 3) << e.what();
  EXPECT_NE(e.message().find("second YAML document"), std::string::npos) << e.what();
}

TEST(YamlDocumentTest, EmptyInputsAreNull) {
  EXPECT_TRUE(ParseYamlDocument("", "t.yaml").IsNull());
  EXPECT_TRUE(ParseYamlDocument("# only a comment\n", "t.yaml").IsNull());
  EXPECT_TRUE(ParseYamlDocument("---\n", "t.yaml").IsNull());
}

TEST(YamlDocumentTest, AliasInsideItsOwnNodeIsRefused) {
  // Issue 10 item 10: `dtsim sweep` on this file overflowed the stack.
  const UserError e = RefusalOf("x: &a [*a]\n");
  EXPECT_EQ(e.where().line, 1);
  EXPECT_EQ(e.where().column, 8) << e.what();  // the alias
  EXPECT_NE(e.message().find("contains it"), std::string::npos) << e.what();
  RefusalOf("x: &a {y: [1, {z: *a}]}\n");
}

TEST(YamlDocumentTest, BillionLaughsIsRefusedBeforeExpansion) {
  // Each list holds 10 copies of the previous one: 10^9 leaves in 9 lines.
  std::ostringstream lines;
  lines << "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 8; ++i) {
    lines << 'a' << i << ": &a" << i << " [*a" << i - 1;
    for (int k = 1; k < 10; ++k) lines << ", *a" << i - 1;
    lines << "]\n";
  }
  const std::string text = lines.str();
  const UserError e = RefusalOf(text);
  EXPECT_NE(e.message().find("more than 1000000 values"), std::string::npos) << e.what();
  // 10^5 copies (a4 expands to 10^5 leaves plus its lists) is within the
  // bound and loads: aliases share nodes, nothing is copied.
  std::string small = text.substr(0, text.find("a5:"));
  EXPECT_TRUE(ParseYamlDocument(small, "t.yaml").IsMap());
}

TEST(YamlDocumentTest, DeepNestingIsRefused) {
  // kMaxYamlDepth levels load (lists nested kMaxYamlDepth - 1 deep around a
  // value); one more is refused, written out or through an alias.
  const auto nested = [](int lists) {
    return std::string(static_cast<std::size_t>(lists), '[') + "1" +
           std::string(static_cast<std::size_t>(lists), ']');
  };
  EXPECT_TRUE(ParseYamlDocument(nested(kMaxYamlDepth - 1), "t.yaml").IsSequence());
  RefusalOf(nested(kMaxYamlDepth));
  RefusalOf(nested(10000));  // past yaml-cpp's own recursion guard (2000 levels)
  // a's value is levels 2-35, b's lists levels 2-33: written out both fit,
  // with *a expanded inside b the value is at level 33 + 34 = 67.
  const std::string half = nested(kMaxYamlDepth / 2 + 1);
  const std::string lists = std::string(kMaxYamlDepth / 2, '[') + "1" +
                            std::string(kMaxYamlDepth / 2, ']');
  EXPECT_TRUE(ParseYamlDocument("a: " + half + "\nb: " + lists + "\n", "t.yaml").IsMap());
  RefusalOf("a: &a " + half + "\nb: " + std::string(kMaxYamlDepth / 2, '[') + "*a" +
            std::string(kMaxYamlDepth / 2, ']') + "\n");
}

TEST(YamlDocumentTest, OrdinaryAliasesLoad) {
  const YAML::Node n = ParseYamlDocument("a: &x {b: 1}\nc: *x\nd: [*x, *x]\n", "t.yaml");
  EXPECT_EQ(n["c"]["b"].as<int>(), 1);
  EXPECT_EQ(n["d"][1]["b"].as<int>(), 1);
}

}  // namespace
}  // namespace dtsim
