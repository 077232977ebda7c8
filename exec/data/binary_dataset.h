// User datasets in dtsim's binary format ("DTSIMDS1", docs/dataset_format.md):
// a little-endian header, then all samples (float32 or uint8 with a scale),
// then all labels (uint32). BinaryDataset reads and validates a file;
// WriteBinaryDataset writes one (for tests and for converting user data).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "exec/data/dataset.h"

namespace dtsim::exec {

// How sample values are stored in the file.
enum class BinaryDType : std::uint32_t {
  kFloat32 = 1,  // 4 bytes per value, IEEE-754 little-endian
  kUint8 = 2,    // 1 byte per value v, read as float(v) * scale
};

// Everything in a file's header except the sample count.
struct BinaryDatasetSpec {
  // Shape of one sample, rank 1..8, every dimension >= 1 (e.g. {3, 32, 32}).
  SampleShape sample_shape;
  // Default kFloat32.
  BinaryDType dtype = BinaryDType::kFloat32;
  // kUint8: a stored v means v * scale (e.g. 1/255 for pixels); finite, > 0.
  // kFloat32: must be 1. Default 1.
  float scale = 1.0f;
  // Default kClass.
  LabelKind label_kind = LabelKind::kClass;
  // Labels per sample: 1 for kClass, the sequence length for
  // kTokenSequence. Default 1.
  std::int64_t label_length = 1;
  // Labels lie in [0, classes); 1 <= classes <= 2^24 (exact as float).
  // Default 2.
  std::int64_t classes = 2;
};

class BinaryDataset final : public Dataset {
 public:
  // Reads and validates the whole file at `path` (it is held in memory).
  // Throws UserError naming the file, the byte offset and what was expected
  // on: unreadable file, wrong magic, unknown version/dtype/label kind,
  // invalid header value, truncated file, trailing bytes, label out of range.
  static BinaryDataset Open(const std::string& path);

  SampleShape sample_shape() const override { return spec_.sample_shape; }
  SampleShape label_shape() const override;
  LabelKind label_kind() const override { return spec_.label_kind; }
  std::int64_t classes() const override { return spec_.classes; }
  std::int64_t size() const override { return count_; }

  const BinaryDatasetSpec& spec() const { return spec_; }
  const std::string& path() const { return path_; }

 private:
  BinaryDataset() = default;
  void FillSample(std::int64_t index, float* x, float* label) const override;

  std::string path_;
  BinaryDatasetSpec spec_;
  std::int64_t count_ = 0;
  std::int64_t sample_values_ = 0;       // D = prod(sample_shape)
  std::vector<unsigned char> bytes_;     // the whole file
  std::uint64_t samples_offset_ = 0;     // byte offset of sample 0
  std::uint64_t labels_offset_ = 0;      // byte offset of label 0
};

// Writes a float32 dataset: x holds count * D values, labels count * L ids,
// count = labels.size() / spec.label_length. REQUIRES spec.dtype kFloat32.
// Throws UserError on an invalid spec, inconsistent sizes, a label outside
// [0, classes) or a write failure. Overwrites `path`.
void WriteBinaryDataset(const std::string& path, const BinaryDatasetSpec& spec,
                        std::span<const float> x, std::span<const std::int64_t> labels);

// The same for uint8 samples. REQUIRES spec.dtype kUint8.
void WriteBinaryDataset(const std::string& path, const BinaryDatasetSpec& spec,
                        std::span<const std::uint8_t> x, std::span<const std::int64_t> labels);

// Writes samples [0, count) of any dataset as a float32 file, e.g. to
// freeze a synthetic set. REQUIRES count >= 1. Throws UserError like
// WriteBinaryDataset.
void ExportDataset(const Dataset& dataset, std::int64_t count, const std::string& path);

}  // namespace dtsim::exec
