#include "common/json_input.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <string>

#include "common/error.h"
#include "common/input_file.h"

namespace dtsim {
namespace {

// The issue 44 item 3 reproducer, generated: `{"a": [[[...]]], "b": 0}`
// nested `depth` deep (200,000 crashed the library's recursive copy).
std::string Nested(int depth) {
  return "{\"a\": " + std::string(depth, '[') + std::string(depth, ']') + ", \"b\": 0}";
}

TEST(JsonInput, DepthCountsBracketsOutsideStrings) {
  EXPECT_EQ(ScanJsonDepth("{}", 64).depth, 1);
  EXPECT_EQ(ScanJsonDepth(Nested(3), 64).depth, 4);  // the object and 3 arrays
  // Brackets inside strings, escaped quotes included, do not count.
  EXPECT_EQ(ScanJsonDepth(R"({"k": "[[[\"[[[", "v": [1]})", 64).depth, 2);
}

TEST(JsonInput, DeepNestingIsAUserErrorNotACrash) {
  const std::string deep = Nested(200000);
  try {
    ParseJsonInput(deep, "table.json", "op-cost table");
    FAIL() << "accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().file, "table.json");
    EXPECT_NE(e.message().find("nest more than 64 deep"), std::string::npos) << e.message();
  }
  // At the limit it parses: 1 object + 63 arrays.
  EXPECT_NO_THROW(ParseJsonInput(Nested(63), "t.json", "table"));
  EXPECT_THROW(ParseJsonInput(Nested(64), "t.json", "table"), UserError);
}

// Issue 44 item 11: `1e309` in a table ended with the library's raw error
// and exit 1.
TEST(JsonInput, NumberOutOfRangeAndBadTextAreUserErrors) {
  EXPECT_THROW(ParseJsonInput(R"({"seconds": 1e309})", "t.json", "table"), UserError);
  EXPECT_THROW(ParseJsonInput("{\"a\": ", "t.json", "table"), UserError);
  EXPECT_EQ(ParseJsonInput(R"({"a": [1, 2]})", "t.json", "table")["a"][1], 2);
}

// Issue 44 item 4: a gzip bomb is stopped at the decompressed limit.
TEST(JsonInput, GzipBombStopsAtTheLimit) {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("dtsim_bomb_" + std::to_string(::getpid()) + ".gz");
  gzFile out = gzopen(p.c_str(), "wb9");
  ASSERT_NE(out, nullptr);
  const std::string zeros(1 << 20, ' ');
  for (int i = 0; i < 8; ++i) gzwrite(out, zeros.data(), static_cast<unsigned>(zeros.size()));
  gzclose(out);
  EXPECT_LT(std::filesystem::file_size(p), 64u << 10) << "a bomb: small compressed";
  EXPECT_THROW(ReadMaybeGzippedFile(p.string(), "trace", 4 << 20), UserError);
  EXPECT_EQ(ReadMaybeGzippedFile(p.string(), "trace", 8 << 20).size(), 8u << 20);
  std::filesystem::remove(p);
}

}  // namespace
}  // namespace dtsim
