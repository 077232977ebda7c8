#include "exec/data/binary_dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "common/error.h"
#include "exec/byte_io.h"
#include "exec/data/synthetic_dataset.h"

namespace dtsim::exec {
namespace {

namespace fs = std::filesystem;

class BinaryDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dtsim_binary_dataset_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const char* name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::vector<unsigned char> ReadAll(const std::string& path) { return ReadFileBytes(path); }

void WriteAll(const std::string& path, const std::vector<unsigned char>& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// The UserError text Open(path) throws, or "" if it opens.
std::string OpenError(const std::string& path) {
  try {
    BinaryDataset::Open(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_F(BinaryDatasetTest, ExportedSyntheticImagesReadBackBitExact) {
  ClassImageDatasetOptions o;
  o.channels = 3, o.height = 5, o.width = 4, o.classes = 6, o.size = 100;
  ClassImageDataset source(o);
  ExportDataset(source, 37, Path("img.bin"));
  BinaryDataset ds = BinaryDataset::Open(Path("img.bin"));
  EXPECT_EQ(ds.sample_shape(), (SampleShape{3, 5, 4}));
  EXPECT_EQ(ds.label_shape(), SampleShape{});
  EXPECT_EQ(ds.label_kind(), LabelKind::kClass);
  EXPECT_EQ(ds.classes(), 6);
  EXPECT_EQ(ds.size(), 37);
  std::vector<float> xa(37 * 60), ya(37), xb(37 * 60), yb(37);
  source.Fill(0, 37, xa.data(), ya.data());
  ds.Fill(0, 37, xb.data(), yb.data());
  EXPECT_TRUE(SameBits(xa, xb));
  EXPECT_TRUE(SameBits(ya, yb));
  // File size: 52-byte fixed header + 3 dims * 8 + 37 * 60 floats * 4 +
  // 37 labels * 4 (docs/dataset_format.md).
  EXPECT_EQ(fs::file_size(Path("img.bin")), 52u + 24 + 37 * 60 * 4 + 37 * 4);
}

TEST_F(BinaryDatasetTest, ExportedTokensReadBackAsSequences) {
  TokenDatasetOptions o;
  o.vocab = 30, o.seq_len = 7, o.size = 50;
  TokenDataset source(o);
  ExportDataset(source, 50, Path("tok.bin"));
  BinaryDataset ds = BinaryDataset::Open(Path("tok.bin"));
  EXPECT_EQ(ds.label_kind(), LabelKind::kTokenSequence);
  EXPECT_EQ(ds.label_shape(), SampleShape{7});
  std::vector<float> xa(50 * 7), ya(50 * 7), xb(50 * 7), yb(50 * 7);
  // Indices 60..109 wrap to 10..49, 0..9 in both (size 50).
  source.Fill(60, 50, xa.data(), ya.data());
  ds.Fill(60, 50, xb.data(), yb.data());
  EXPECT_TRUE(SameBits(xa, xb));
  EXPECT_TRUE(SameBits(ya, yb));
}

TEST_F(BinaryDatasetTest, Uint8SamplesAreScaled) {
  BinaryDatasetSpec spec;
  spec.sample_shape = {2, 2};
  spec.dtype = BinaryDType::kUint8;
  spec.scale = 0.5f;
  spec.classes = 3;
  std::vector<std::uint8_t> x = {0, 1, 2, 255, 10, 20, 30, 40};
  std::vector<std::int64_t> y = {2, 0};
  WriteBinaryDataset(Path("u8.bin"), spec, x, y);
  BinaryDataset ds = BinaryDataset::Open(Path("u8.bin"));
  std::vector<float> xs(8), ys(2);
  ds.Fill(0, 2, xs.data(), ys.data());
  // v * 0.5, exact in float.
  EXPECT_EQ(xs, (std::vector<float>{0, 0.5f, 1, 127.5f, 5, 10, 15, 20}));
  EXPECT_EQ(ys, (std::vector<float>{2, 0}));
}

// A valid float32 file: shape {2, 3} (rank 2), 4 samples, 5 classes.
// Header = 52 + 2 * 8 = 68 bytes; samples 4 * 6 * 4 = 96 bytes at 68..163;
// labels 4 * 4 = 16 bytes at 164..179; file size 180.
std::string WriteSmall(const std::string& path) {
  BinaryDatasetSpec spec;
  spec.sample_shape = {2, 3};
  spec.classes = 5;
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = 0.25f * static_cast<float>(i);
  std::vector<std::int64_t> y = {0, 4, 2, 1};
  WriteBinaryDataset(path, spec, x, y);
  return path;
}

struct Corruption {
  const char* name;
  std::function<void(std::vector<unsigned char>&)> corrupt;
  std::vector<const char*> expected;  // substrings of the error
};

TEST_F(BinaryDatasetTest, EveryCorruptionIsReportedWithItsOffset) {
  const std::string good = WriteSmall(Path("good.bin"));
  ASSERT_EQ(ReadAll(good).size(), 180u);  // see WriteSmall
  ASSERT_EQ(OpenError(good), "");
  const std::vector<Corruption> cases = {
      {"magic", [](auto& b) { b[3] = 'X'; },
       {"invalid magic at byte offset 0", "expected \"DTSIMDS1\"", "not a dtsim dataset"}},
      {"short garbage", [](auto& b) { b = {'a', 'b', 'c'}; },
       {"invalid magic at byte offset 0", "found bytes 97 98 99"}},
      {"magic prefix only", [](auto& b) { b.resize(5); },
       {"truncated file: expected the magic \"DTSIMDS1\" (8 bytes) at byte offset 0, but the "
        "file ends at byte offset 5"}},
      {"empty", [](auto& b) { b.clear(); }, {"truncated file", "at byte offset 0"}},
      {"version", [](auto& b) { StoreLE<std::uint32_t>(&b[8], 2); },
       {"invalid version at byte offset 8: expected 1, found 2"}},
      {"dtype", [](auto& b) { StoreLE<std::uint32_t>(&b[12], 9); },
       {"invalid dtype at byte offset 12: expected 1 (float32) or 2 (uint8), found 9"}},
      {"scale", [](auto& b) { float two = 2; StoreFloatsLE(&b[16], &two, 1); },
       {"invalid scale at byte offset 16: expected 1 for float32 samples, found 2"}},
      {"label kind", [](auto& b) { StoreLE<std::uint32_t>(&b[20], 0); },
       {"invalid label kind at byte offset 20"}},
      {"count zero", [](auto& b) { StoreLE<std::uint64_t>(&b[24], 0); },
       {"invalid sample count at byte offset 24: expected at least 1, found 0"}},
      {"classes", [](auto& b) { StoreLE<std::uint64_t>(&b[32], 0); },
       {"invalid number of classes at byte offset 32"}},
      {"label length", [](auto& b) { StoreLE<std::uint64_t>(&b[40], 3); },
       {"invalid label length at byte offset 40: expected 1 for class labels, found 3"}},
      {"rank", [](auto& b) { StoreLE<std::uint32_t>(&b[48], 9); },
       {"invalid sample rank at byte offset 48: expected 1 .. 8, found 9"}},
      // Second dimension lives at 52 + 8.
      {"dim", [](auto& b) { StoreLE<std::uint64_t>(&b[60], 0); },
       {"invalid sample dimension at byte offset 60"}},
      // Cut inside the header: the count field (24..31) is incomplete.
      {"header cut", [](auto& b) { b.resize(28); },
       {"truncated file: expected the sample count (u64) (8 bytes) at byte offset 24, "
        "but the file ends at byte offset 28"}},
      // Cut 3 bytes off the labels: promised 180 bytes, file ends at 177.
      {"data cut", [](auto& b) { b.resize(177); },
       {"a file of 180 bytes", "truncated file: it ends at byte offset 177", "cut short"}},
      // Count 5 instead of 4: promised 68 + 5 * 24 + 5 * 4 = 208 bytes.
      {"count too big", [](auto& b) { StoreLE<std::uint64_t>(&b[24], 5); },
       {"a file of 208 bytes", "truncated file: it ends at byte offset 180"}},
      {"trailing", [](auto& b) { b.push_back(0); },
       {"found 1 unexpected bytes from byte offset 180"}},
      // Label 1 (sample 1, at 164 + 4) set to 5 with 5 classes.
      {"label range", [](auto& b) { StoreLE<std::uint32_t>(&b[168], 5); },
       {"label out of range at byte offset 168 (sample 1): expected a class id in [0, 5), found 5"}},
  };
  for (const Corruption& c : cases) {
    std::vector<unsigned char> bytes = ReadAll(good);
    c.corrupt(bytes);
    const std::string bad = Path("bad.bin");
    WriteAll(bad, bytes);
    const std::string err = OpenError(bad);
    ASSERT_NE(err, "") << c.name << ": the corrupt file was accepted";
    EXPECT_NE(err.find(bad), std::string::npos) << c.name << ": the error must name the file: " << err;
    EXPECT_NE(err.find("hint:"), std::string::npos) << c.name << ": " << err;
    for (const char* want : c.expected) {
      EXPECT_NE(err.find(want), std::string::npos) << c.name << ": want \"" << want << "\" in:\n" << err;
    }
  }
}

TEST_F(BinaryDatasetTest, MissingFileIsAUserError) {
  const std::string err = OpenError(Path("none.bin"));
  EXPECT_NE(err.find("cannot open file"), std::string::npos) << err;
  EXPECT_NE(err.find("none.bin"), std::string::npos) << err;
}

TEST_F(BinaryDatasetTest, WriterRejectsBadInput) {
  BinaryDatasetSpec spec;
  spec.sample_shape = {2};
  spec.classes = 3;
  std::vector<float> x = {1, 2, 3, 4};
  try {
    WriteBinaryDataset(Path("w.bin"), spec, x, std::vector<std::int64_t>{0, 3});
    FAIL() << "label 3 with 3 classes accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("label 3 (index 1) is outside [0, 3)"), std::string::npos)
        << e.what();
  }
  // 3 labels need 3 * 2 = 6 values, not 4.
  EXPECT_THROW(WriteBinaryDataset(Path("w.bin"), spec, x, std::vector<std::int64_t>{0, 1, 2}),
               UserError);
}

}  // namespace
}  // namespace dtsim::exec
