#include "plan/chakra_files.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"

namespace dtsim::plan {
namespace {

namespace fs = std::filesystem;

class ChakraFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dtsim_chakra_files_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  std::string Prefix() const { return (dir_ / "P").string(); }
  // The error ReadChakraTraces throws, as "file: message".
  std::string Error(int ranks) const {
    try {
      ReadChakraTraces(Prefix(), ranks);
    } catch (const UserError& e) {
      return e.where().ToString() + ": " + e.message();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(ChakraFiles, ReadsContiguousRanksInOrder) {
  Write("P.1.et", "one");
  Write("P.0.et", "zero");
  Write("P.10x.et", "not a rank file");
  Write("Q.2.et", "another prefix");
  const auto traces = ReadChakraTraces(Prefix(), 2);
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(traces[0].name, Prefix() + ".0.et");
  EXPECT_EQ(traces[0].bytes, "zero");
  EXPECT_EQ(traces[1].bytes, "one");
  EXPECT_EQ(ReadChakraTraces(Prefix(), 0).size(), 2u);
}

// P.0, P.1 and P.3 on 2 devices used to simulate ranks 0-1 and exit 0; on
// 4 devices the error did not name P.2.et. Either way P.2.et is named.
TEST_F(ChakraFiles, AMissingRankFileIsNamed) {
  Write("P.0.et", "a");
  Write("P.1.et", "b");
  Write("P.3.et", "d");
  for (int ranks : {0, 2, 4}) {
    const std::string e = Error(ranks);
    EXPECT_NE(e.find(Prefix() + ".2.et: rank 2's trace does not exist, but " + Prefix() +
                     ".3.et does"),
              std::string::npos)
        << ranks << ": " << e;
  }
}

TEST_F(ChakraFiles, RankFilesMustMatchTheCluster) {
  Write("P.0.et", "a");
  Write("P.1.et", "b");
  std::string e = Error(4);
  EXPECT_NE(e.find(Prefix() + ".2.et: rank 2's trace does not exist: the cluster has 4 devices"),
            std::string::npos)
      << e;
  e = Error(1);
  EXPECT_NE(e.find(Prefix() + ".1.et: there are traces for ranks 0-1 and the cluster has 1 "
                   "devices"),
            std::string::npos)
      << e;
  fs::remove(dir_ / "P.0.et");
  fs::remove(dir_ / "P.1.et");
  e = Error(0);
  EXPECT_NE(e.find(Prefix() + ".0.et: no Chakra trace at this path"), std::string::npos) << e;
}

TEST_F(ChakraFiles, ReadsGzipAndRefusesBothForms) {
  Write("P.0.et", "plain");
  const std::string gz = (dir_ / "P.1.et.gz").string();
  gzFile out = gzopen(gz.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  const std::string payload(100000, 'x');  // more than one read buffer
  ASSERT_EQ(gzwrite(out, payload.data(), static_cast<unsigned>(payload.size())),
            static_cast<int>(payload.size()));
  gzclose(out);
  const auto traces = ReadChakraTraces(Prefix(), 2);
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(traces[1].name, gz);
  EXPECT_EQ(traces[1].bytes, payload);
  Write("P.1.et", "also");
  EXPECT_NE(Error(2).find("rank 1 is given twice"), std::string::npos) << Error(2);
}

}  // namespace
}  // namespace dtsim::plan
