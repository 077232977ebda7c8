#include "common/yaml_reader.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {
namespace {

YamlValue Root(const std::string& text) {
  return YamlValue::Root(ParseYamlDocument(text, "t.yaml"), "t.yaml");
}

// The UserError `f` throws, or a test failure.
template <typename F>
UserError ErrorOf(F f) {
  try {
    f();
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << "no UserError thrown";
  return UserError("none");
}

TEST(YamlReaderTest, LocationsAreOneBased) {
  // "b" is on the second line; its value starts after "b: " (column 4).
  const YamlMap m = Root("a: 1\nb: x\n").AsMap({"a", "b"});
  const SourceLocation where = m.Require("b").where();
  EXPECT_EQ(where.file, "t.yaml");
  EXPECT_EQ(where.line, 2);
  EXPECT_EQ(where.column, 4);
  EXPECT_EQ(m.Require("b").path(), "b");
}

TEST(YamlReaderTest, EmptyValueIsReportedOnItsLine) {
  const YamlMap m = Root("a: 1\nb:\nc: 2\n").AsMap({"a", "b", "c"});
  UserError e = ErrorOf([&] { m.Require("b").AsInt(1); });
  EXPECT_EQ(e.where().line, 2) << e.what();
  EXPECT_NE(std::string(e.what()).find("b: expected an integer, got nothing"), std::string::npos)
      << e.what();
}

TEST(YamlReaderTest, NestedPathsAndSequences) {
  const YamlMap m = Root("list:\n  - {x: 1}\n  - {x: 2.5}\n").AsMap({"list"});
  std::vector<YamlValue> items = m.Require("list").AsSequence();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].AsMap({"x"}).Require("x").AsInt(0), 1);
  UserError e = ErrorOf([&] { items[1].AsMap({"x"}).Require("x").AsInt(0); });
  EXPECT_EQ(std::string(e.message()), "list[1].x: expected an integer, got '2.5'");
  EXPECT_EQ(e.where().line, 3);
}

TEST(YamlReaderTest, UnknownKeySuggestsTheClosest) {
  UserError e = ErrorOf(
      [] { Root("nodes: 1\ndevcies_per_node: 2\n").AsMap({"nodes", "devices_per_node"}); });
  EXPECT_EQ(e.where().line, 2);
  EXPECT_EQ(e.message(), "unknown key 'devcies_per_node' at top level");
  EXPECT_EQ(e.hint(), "did you mean 'devices_per_node'? allowed keys: nodes, devices_per_node");
}

TEST(YamlReaderTest, DuplicateKeyIsAnError) {
  UserError e = ErrorOf([] { Root("a: 1\nb: 2\na: 3\n").AsMap({"a", "b"}); });
  EXPECT_EQ(e.where().line, 3);
  EXPECT_NE(e.message().find("duplicate key 'a' (first given at line 1)"), std::string::npos);
}

TEST(YamlReaderTest, Integers) {
  const YamlMap m =
      Root("a: 12\nb: -3\nc: 1e3\nd: 99999999999999999999\n").AsMap({"a", "b", "c", "d"});
  EXPECT_EQ(m.Require("a").AsInt(1), 12);
  EXPECT_EQ(m.Require("b").AsInt64(-5, 5), -3);
  EXPECT_NE(ErrorOf([&] { m.Require("b").AsInt(0); }).message().find("expected an integer >= 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { m.Require("c").AsInt(0); }).message().find("expected an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { m.Require("d").AsInt(0); }).message().find("too large"),
            std::string::npos);
}

TEST(YamlReaderTest, NumbersBoolsAndQuantities) {
  const YamlMap m =
      Root("a: 0.25\nb: yes\nc: 25Gbps\nd: 25\ne: 0\n").AsMap({"a", "b", "c", "d", "e"});
  EXPECT_DOUBLE_EQ(m.Require("a").AsNumber(), 0.25);
  EXPECT_TRUE(m.Require("b").AsBool());
  EXPECT_DOUBLE_EQ(m.Require("c").AsQuantity(Dimension::kBandwidth), 25e9 / 8);
  // A bare number is rejected at the value, with ParseQuantity's hint.
  UserError e = ErrorOf([&] { m.Require("d").AsQuantity(Dimension::kBandwidth); });
  EXPECT_EQ(e.where().line, 4);
  EXPECT_NE(e.message().find("d: the bandwidth '25' has no unit"), std::string::npos) << e.what();
  EXPECT_NE(e.hint().find("Gbps"), std::string::npos);
  // A bare 0 is a valid quantity, but not a positive one.
  EXPECT_EQ(m.Require("e").AsQuantity(Dimension::kTime), 0.0);
  EXPECT_NE(ErrorOf([&] { m.Require("e").AsPositiveQuantity(Dimension::kTime); })
                .message()
                .find("expected a time > 0"),
            std::string::npos);
}

TEST(YamlReaderTest, ChoiceIsCaseInsensitiveAndListsTheValues) {
  const YamlMap m = Root("a: Ring\nb: rign\n").AsMap({"a", "b"});
  EXPECT_EQ(m.Require("a").AsChoice({"ring", "tree"}, "algorithm"), 0u);
  UserError e = ErrorOf([&] { m.Require("b").AsChoice({"ring", "tree"}, "algorithm"); });
  EXPECT_EQ(e.message(), "b: unknown algorithm 'rign'");
  EXPECT_EQ(e.hint(), "did you mean 'ring'? accepted values: ring, tree");
}

TEST(YamlReaderTest, IntPairsAndIntLists) {
  const YamlMap m = Root("a: 3\nb: [3, 5]\nc: [3, 5, 7]\nd: [2, 0]\ne: []\n")
                        .AsMap({"a", "b", "c", "d", "e"});
  EXPECT_EQ(m.Require("a").AsIntPair(1), std::make_pair(3, 3));
  EXPECT_EQ(m.Require("b").AsIntPair(1), std::make_pair(3, 5));
  EXPECT_NE(ErrorOf([&] { m.Require("c").AsIntPair(1); })
                .message()
                .find("c: expected an integer or a list of two integers, got a list"),
            std::string::npos);
  // An element out of range is reported at the element: "0" is column 8.
  UserError e = ErrorOf([&] { m.Require("d").AsIntPair(1); });
  EXPECT_EQ(e.message(), "d[1]: expected an integer >= 1, got 0");
  EXPECT_EQ(e.where().column, 8);
  EXPECT_EQ(m.Require("c").AsInt64List(1, 10), (std::vector<std::int64_t>{3, 5, 7}));
  EXPECT_NE(ErrorOf([&] { m.Require("d").AsInt64List(1, 10); }).message().find("d[1]:"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { m.Require("e").AsInt64List(1, 10); })
                .message()
                .find("e: expected a non-empty list of integers"),
            std::string::npos);
}

TEST(YamlReaderTest, MissingKeySaysWhatIsExpected) {
  const YamlMap m = Root("a: 1\n").AsMap({"a", "b"});
  EXPECT_EQ(ErrorOf([&] { m.Require("b", "an integer >= 1"); }).message(),
            "missing required key 'b' (an integer >= 1)");
  EXPECT_EQ(ErrorOf([&] { m.Require("b"); }).message(), "missing required key 'b'");
}

TEST(YamlReaderTest, SelectorIsReadBeforeTheOtherKeys) {
  // The keys allowed beside `type` depend on it: read it, then check them.
  const YamlValue layer = Root("l: {type: conv, kernel: 3}\n").AsMap({"l"}).Require("l");
  const YamlValue type = layer.RequireSelector("type");
  EXPECT_EQ(type.AsString(), "conv");
  EXPECT_EQ(type.path(), "l.type");
  EXPECT_EQ(layer.AsMap({"type", "kernel"}).Require("kernel").AsInt(1), 3);
  EXPECT_NE(ErrorOf([&] { layer.AsMap({"type"}); }).message().find("unknown key 'kernel'"),
            std::string::npos);
  // Absent, or not a mapping: the errors of Require and AsMap.
  EXPECT_EQ(ErrorOf([&] { layer.RequireSelector("kind", "a kind"); }).message(),
            "l: missing required key 'kind' (a kind)");
  EXPECT_NE(ErrorOf([&] { Root("- x\n").RequireSelector("type"); })
                .message()
                .find("expected a mapping of 'key: value' lines, got a list"),
            std::string::npos);
}

TEST(YamlReaderTest, MalformedYamlHasALocation) {
  // The flow list opened on line 2 is never closed.
  UserError e = ErrorOf([] { ParseYamlDocument("a: 1\nb: [1, 2\nc: 3\n", "t.yaml"); });
  EXPECT_EQ(e.where().file, "t.yaml");
  EXPECT_GE(e.where().line, 2) << e.what();
  EXPECT_GT(e.where().column, 0);
  EXPECT_NE(e.message().find("malformed YAML"), std::string::npos);
}

TEST(YamlReaderTest, OneDocumentOnly) {
  UserError e = ErrorOf([] { ParseYamlDocument("a: 1\n---\nb: 2\n", "t.yaml"); });
  EXPECT_EQ(e.where().line, 3) << e.what();
}

TEST(YamlReaderTest, UnknownNameHint) {
  EXPECT_EQ(UnknownNameHint("zzz", {"ring", "tree"}, "accepted values"),
            "accepted values: ring, tree");
  EXPECT_EQ(UnknownNameHint("V100", {"K20m", "V100-SXM2-32GB"}, "known devices"),
            "did you mean 'V100-SXM2-32GB'? known devices: K20m, V100-SXM2-32GB");
  // "V100-SXM3" is 2 edits from "P100-SXM2" but 1 from the start of "V100-SXM2-32GB".
  EXPECT_EQ(UnknownNameHint("V100-SXM3", {"P100-SXM2", "V100-SXM2-32GB"}, "known devices"),
            "did you mean 'V100-SXM2-32GB'? known devices: P100-SXM2, V100-SXM2-32GB");
}

}  // namespace
}  // namespace dtsim
