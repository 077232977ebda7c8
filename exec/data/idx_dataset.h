// Data sets in the IDX format of the MNIST family (MNIST, Fashion-MNIST,
// KMNIST; Debian's dataset-fashion-mnist installs
// /usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz).
//
// IDX (LeCun et al., "THE MNIST DATABASE of handwritten digits", file
// formats section): two zero bytes, a type byte (0x08: unsigned byte, the
// only type these sets use), the number of dimensions, each dimension as a
// big-endian 32-bit count, then the values in row-major order. Files are
// read plain or gzip-compressed (zlib's gzread reads both).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/data/dataset.h"

namespace dtsim::exec {

struct IdxArray {
  std::vector<std::int64_t> dims;  // e.g. {60000, 28, 28}
  std::vector<std::uint8_t> values;
};

// Parses IDX bytes. Throws UserError naming `where` for a short header, a
// type other than unsigned byte, no dimension, a zero dimension, or a
// length that is not the product of the dimensions.
IdxArray ParseIdx(const std::string& bytes, const std::string& where);
// The IDX file at `path`, plain or gzip-compressed; only regular files, at
// most 1 GiB once decompressed. Throws UserError at `path`.
IdxArray ReadIdxFile(const std::string& path);

// Images (N x H x W) with class labels (N values < classes) as a Dataset:
// sample i is image i as (1, H, W) floats, (value / 255 - mean) / stddev,
// label i its class, in file order (ShuffledDataset shuffles per epoch).
class IdxDataset : public Dataset {
 public:
  // mean and stddev of value / 255; stddev <= 0: both computed from
  // `images` (give the training set's to the test set).
  // Throws UserError for images that are not 3-dimensional, a label count
  // other than N, or a label >= classes.
  // `flat`: samples of shape (H W) instead of (1, H, W), for models whose
  // input is a vector (an MLP).
  IdxDataset(IdxArray images, IdxArray labels, std::int64_t classes, double mean = 0,
             double stddev = 0, bool flat = false);

  SampleShape sample_shape() const override {
    return flat_ ? SampleShape{rows_ * cols_} : SampleShape{1, rows_, cols_};
  }
  SampleShape label_shape() const override { return {}; }
  LabelKind label_kind() const override { return LabelKind::kClass; }
  std::int64_t classes() const override { return classes_; }
  std::int64_t size() const override { return count_; }
  double mean() const { return mean_; }
  double stddev() const { return stddev_; }

 private:
  void FillSample(std::int64_t index, float* x, float* label) const override;

  IdxArray images_, labels_;
  std::int64_t classes_ = 0, count_ = 0, rows_ = 0, cols_ = 0;
  double mean_ = 0, stddev_ = 1;
  bool flat_ = false;
};

// The training split of an IDX set in folder `dir`: train-images-idx3-ubyte
// and train-labels-idx1-ubyte, each plain or with .gz (MNIST's and
// Fashion-MNIST's names), normalised by its own mean and deviation. Throws
// UserError at `dir` when either file is missing.
IdxDataset OpenIdxTrainingSet(const std::string& dir, std::int64_t classes, bool flat);
// The test split in `dir` (t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte,
// plain or .gz), normalised with the training split's mean and deviation.
IdxDataset OpenIdxTestSet(const std::string& dir, const IdxDataset& train, bool flat);

}  // namespace dtsim::exec
