#include "exec/data/idx_dataset.h"

#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"

namespace dtsim::exec {
namespace {

namespace fs = std::filesystem;

// An IDX file by the format's definition: 0, 0, type 8, rank, big-endian
// dimensions, values.
std::string Idx(const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& values) {
  std::string s = {'\0', '\0', '\x08', static_cast<char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) s.push_back(static_cast<char>((d >> shift) & 0xff));
  s.append(values.begin(), values.end());
  return s;
}

TEST(Idx, ParsesHeaderAndValues) {
  const IdxArray a = ParseIdx(Idx({2, 1, 3}, {0, 1, 2, 3, 4, 255}), "t");
  EXPECT_EQ(a.dims, (std::vector<std::int64_t>{2, 1, 3}));
  EXPECT_EQ(a.values.back(), 255);
  // A dimension of 65,536 needs the third header byte: 0x00 0x01 0x00 0x00.
  const IdxArray big = ParseIdx(Idx({65536}, std::vector<std::uint8_t>(65536, 7)), "t");
  EXPECT_EQ(big.dims[0], 65536);
}

TEST(Idx, RefusesWhatIsNotIdx) {
  EXPECT_THROW(ParseIdx("PK\x03\x04", "t"), UserError);                    // a zip
  std::string floats = Idx({1}, {0});
  floats[2] = '\x0d';                                                      // float type
  EXPECT_THROW(ParseIdx(floats, "t"), UserError);
  EXPECT_THROW(ParseIdx(Idx({2, 2}, {1, 2, 3}), "t"), UserError);          // short data
  EXPECT_THROW(ParseIdx(Idx({0}, {}), "t"), UserError);                    // empty dimension
}

TEST(Idx, DatasetNormalisesAndLabels) {
  // Two 1 x 2 images: values 0, 255 and 255, 255 -> x / 255 = 0, 1, 1, 1:
  // mean 0.75, variance 0.75 - 0.5625 = 0.1875.
  IdxDataset d(ParseIdx(Idx({2, 1, 2}, {0, 255, 255, 255}), "i"),
               ParseIdx(Idx({2}, {3, 9}), "l"), 10);
  EXPECT_EQ(d.sample_shape(), (SampleShape{1, 1, 2}));
  EXPECT_DOUBLE_EQ(d.mean(), 0.75);
  EXPECT_NEAR(d.stddev(), std::sqrt(0.1875), 1e-12);
  std::vector<float> x(4), y(2);
  d.Fill(0, 2, x.data(), y.data());
  EXPECT_NEAR(x[0], (0 - 0.75) / std::sqrt(0.1875), 1e-6);
  EXPECT_EQ(y, (std::vector<float>{3, 9}));
  // A label at or above the class count is refused.
  EXPECT_THROW(IdxDataset(ParseIdx(Idx({1, 1, 1}, {0}), "i"), ParseIdx(Idx({1}, {10}), "l"), 10),
               UserError);
}

TEST(Idx, ReadsGzipAndPlainFiles) {
  const fs::path dir = fs::temp_directory_path() / "dtsim_idx_test";
  fs::create_directories(dir);
  const std::string bytes = Idx({3}, {1, 2, 3});
  std::ofstream(dir / "plain", std::ios::binary) << bytes;
  gzFile out = gzopen((dir / "packed.gz").c_str(), "wb");
  ASSERT_NE(out, nullptr);
  gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(out);
  EXPECT_EQ(ReadIdxFile((dir / "plain").string()).values, ReadIdxFile((dir / "packed.gz").string()).values);
  EXPECT_THROW(ReadIdxFile((dir / "missing").string()), UserError);
  fs::remove_all(dir);
}

// The real files of Debian's dataset-fashion-mnist (scripts/setup.sh
// installs it): 60,000 training images of 28 x 28, 10 classes,
// 6,000 of each (Xiao, Rasul & Vollgraf 2017, Table 1's class balance).
TEST(Idx, ReadsDebiansFashionMnist) {
  const fs::path dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir / "train-images-idx3-ubyte.gz")) GTEST_SKIP() << "no " << dir;
  IdxDataset train(ReadIdxFile((dir / "train-images-idx3-ubyte.gz").string()),
                   ReadIdxFile((dir / "train-labels-idx1-ubyte.gz").string()), 10);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(train.sample_shape(), (SampleShape{1, 28, 28}));
  std::vector<float> x(static_cast<std::size_t>(train.size()) * 784), y(static_cast<std::size_t>(train.size()));
  train.Fill(0, train.size(), x.data(), y.data());
  std::vector<int> per_class(10, 0);
  for (float l : y) ++per_class[static_cast<std::size_t>(l)];
  for (int c : per_class) EXPECT_EQ(c, 6000);
  IdxDataset test(ReadIdxFile((dir / "t10k-images-idx3-ubyte.gz").string()),
                  ReadIdxFile((dir / "t10k-labels-idx1-ubyte.gz").string()), 10, train.mean(),
                  train.stddev());
  EXPECT_EQ(test.size(), 10000);
  EXPECT_DOUBLE_EQ(test.mean(), train.mean());
  // The folder functions find the same splits.
  const IdxDataset opened = OpenIdxTrainingSet(dir.string(), 10, false);
  EXPECT_DOUBLE_EQ(opened.mean(), train.mean());
  const IdxDataset opened_test = OpenIdxTestSet(dir.string(), opened, true);
  EXPECT_EQ(opened_test.size(), 10000);
  EXPECT_EQ(opened_test.sample_shape(), (SampleShape{784}));
  EXPECT_DOUBLE_EQ(opened_test.stddev(), train.stddev());
}

}  // namespace
}  // namespace dtsim::exec
