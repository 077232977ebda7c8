#include "exec/data/idx_dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "common/error.h"
#include "common/input_file.h"

namespace dtsim::exec {
namespace {

constexpr std::int64_t kMaxIdxBytes = std::int64_t{1} << 30;
constexpr unsigned char kUnsignedByte = 0x08;

}  // namespace

IdxArray ParseIdx(const std::string& bytes, const std::string& where) {
  const auto at = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  if (bytes.size() < 4 || at(0) != 0 || at(1) != 0)
    throw UserError(SourceLocation{where}, "not an IDX file: it must start with two zero bytes",
                    "IDX files of the MNIST family, plain or .gz");
  if (at(2) != kUnsignedByte)
    throw UserError(SourceLocation{where},
                    "IDX type " + std::to_string(at(2)) + " is not unsigned byte (8)",
                    "only unsigned-byte IDX files (the MNIST family's) are read");
  const std::size_t rank = at(3);
  if (rank == 0) throw UserError(SourceLocation{where}, "IDX file with no dimension", "");
  if (bytes.size() < 4 + 4 * rank)
    throw UserError(SourceLocation{where}, "IDX header cut short", "the file is truncated");
  IdxArray a;
  std::int64_t total = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::size_t o = 4 + 4 * d;
    const std::int64_t n = (std::int64_t{at(o)} << 24) | (std::int64_t{at(o + 1)} << 16) |
                           (std::int64_t{at(o + 2)} << 8) | std::int64_t{at(o + 3)};
    if (n == 0) throw UserError(SourceLocation{where}, "IDX dimension " + std::to_string(d) + " is 0", "");
    a.dims.push_back(n);
    total *= n;
    if (total > kMaxIdxBytes)
      throw UserError(SourceLocation{where}, "IDX array larger than 1 GiB", "");
  }
  const std::size_t header = 4 + 4 * rank;
  if (bytes.size() - header != static_cast<std::size_t>(total))
    throw UserError(SourceLocation{where},
                    "IDX data holds " + std::to_string(bytes.size() - header) +
                        " values where its dimensions say " + std::to_string(total),
                    "the file is truncated or not IDX");
  a.values.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return a;
}

IdxArray ReadIdxFile(const std::string& path) {
  RequireRegularFile(path, "IDX file");
  gzFile in = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (in == nullptr) throw UserError(SourceLocation{path}, "cannot open the IDX file", "");
  std::string bytes;
  char buf[1 << 16];
  int k = 0;
  while ((k = gzread(in, buf, sizeof buf)) > 0) {
    bytes.append(buf, static_cast<std::size_t>(k));
    if (static_cast<std::int64_t>(bytes.size()) > kMaxIdxBytes + 1024) break;
  }
  const bool failed = k < 0;
  gzclose(in);
  if (failed) throw UserError(SourceLocation{path}, "the IDX file is not valid gzip", "");
  return ParseIdx(bytes, path);
}

IdxDataset::IdxDataset(IdxArray images, IdxArray labels, std::int64_t classes, double mean,
                       double stddev, bool flat)
    : images_(std::move(images)), labels_(std::move(labels)), classes_(classes), flat_(flat) {
  if (images_.dims.size() != 3)
    throw UserError("IDX images must be N x rows x columns, got " +
                        std::to_string(images_.dims.size()) + " dimensions",
                    "use an idx3-ubyte images file");
  count_ = images_.dims[0];
  rows_ = images_.dims[1];
  cols_ = images_.dims[2];
  if (labels_.dims.size() != 1 || labels_.dims[0] != count_)
    throw UserError("IDX labels must be one value per image (" + std::to_string(count_) + ")",
                    "use the idx1-ubyte labels file of the same set");
  if (classes_ < 1) throw UserError("classes must be >= 1", "");
  for (std::uint8_t l : labels_.values)
    if (l >= classes_)
      throw UserError("IDX label " + std::to_string(l) + " is not below " +
                          std::to_string(classes_) + " classes",
                      "");
  if (stddev > 0) {
    mean_ = mean;
    stddev_ = stddev;
  } else {
    double sum = 0, sum2 = 0;
    for (std::uint8_t v : images_.values) {
      const double x = v / 255.0;
      sum += x;
      sum2 += x * x;
    }
    const double n = static_cast<double>(images_.values.size());
    mean_ = sum / n;
    stddev_ = std::sqrt(std::max(sum2 / n - mean_ * mean_, 1e-12));
  }
}

void IdxDataset::FillSample(std::int64_t index, float* x, float* label) const {
  const std::int64_t d = rows_ * cols_;
  const std::uint8_t* src = images_.values.data() + index * d;
  for (std::int64_t j = 0; j < d; ++j)
    x[j] = static_cast<float>((src[j] / 255.0 - mean_) / stddev_);
  label[0] = static_cast<float>(labels_.values[static_cast<std::size_t>(index)]);
}

namespace {

std::string FindIdxFile(const std::string& dir, const std::string& name) {
  for (const std::string& f : {name, name + ".gz"}) {
    const std::filesystem::path p = std::filesystem::path(dir) / f;
    if (std::filesystem::exists(p)) return p.string();
  }
  throw UserError(SourceLocation{dir}, "no " + name + " (or " + name + ".gz) in the folder",
                  "an IDX data set folder holds train-images-idx3-ubyte and "
                  "train-labels-idx1-ubyte (and t10k-* for the test split), as MNIST and "
                  "Fashion-MNIST ship them");
}

}  // namespace

IdxDataset OpenIdxTrainingSet(const std::string& dir, std::int64_t classes, bool flat) {
  return IdxDataset(ReadIdxFile(FindIdxFile(dir, "train-images-idx3-ubyte")),
                    ReadIdxFile(FindIdxFile(dir, "train-labels-idx1-ubyte")), classes, 0, 0, flat);
}

IdxDataset OpenIdxTestSet(const std::string& dir, const IdxDataset& train, bool flat) {
  return IdxDataset(ReadIdxFile(FindIdxFile(dir, "t10k-images-idx3-ubyte")),
                    ReadIdxFile(FindIdxFile(dir, "t10k-labels-idx1-ubyte")), train.classes(),
                    train.mean(), train.stddev(), flat);
}

}  // namespace dtsim::exec
