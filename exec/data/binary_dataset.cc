#include "exec/data/binary_dataset.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "exec/byte_io.h"

namespace dtsim::exec {
namespace {

// Header layout, byte offsets (docs/dataset_format.md):
//   0 magic[8] | 8 u32 version | 12 u32 dtype | 16 f32 scale |
//   20 u32 label kind | 24 u64 count | 32 u64 classes | 40 u64 label length |
//   48 u32 rank | 52 u64 dims[rank]
constexpr char kMagic[8] = {'D', 'T', 'S', 'I', 'M', 'D', 'S', '1'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint64_t kFixedHeaderBytes = 52;
constexpr std::uint32_t kMaxRank = 8;
constexpr std::uint64_t kMaxClasses = std::uint64_t{1} << 24;
constexpr std::uint32_t kLabelKindClass = 1;
constexpr std::uint32_t kLabelKindTokens = 2;

constexpr const char* kConvertHint =
    "write the file with dtsim's WriteBinaryDataset; the format is described in "
    "docs/dataset_format.md";

std::uint32_t LabelKindCode(LabelKind kind) {
  return kind == LabelKind::kClass ? kLabelKindClass : kLabelKindTokens;
}

std::uint64_t BytesPerValue(BinaryDType dtype) { return dtype == BinaryDType::kFloat32 ? 4 : 1; }

// a * b, or false when it overflows.
bool MulOk(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// Writer-side check of a spec and the sizes handed in; returns the count.
std::int64_t CheckWriterInput(const std::string& path, const BinaryDatasetSpec& spec,
                              std::size_t x_values, std::span<const std::int64_t> labels) {
  auto fail = [&path](const std::string& msg) {
    throw UserError(SourceLocation{path}, msg, "see docs/dataset_format.md for the valid values");
  };
  std::ostringstream m;
  if (spec.sample_shape.empty() || spec.sample_shape.size() > kMaxRank) {
    m << "sample shape must have rank 1.." << kMaxRank << ", got rank " << spec.sample_shape.size();
    fail(m.str());
  }
  for (std::int64_t d : spec.sample_shape) {
    if (d < 1) {
      m << "every sample dimension must be >= 1, got " << d;
      fail(m.str());
    }
  }
  if (spec.dtype == BinaryDType::kFloat32 && spec.scale != 1.0f) {
    m << "float32 datasets need scale 1, got " << spec.scale;
    fail(m.str());
  }
  if (!(std::isfinite(spec.scale) && spec.scale > 0)) {
    m << "scale must be a finite number > 0, got " << spec.scale;
    fail(m.str());
  }
  if (spec.classes < 1 || static_cast<std::uint64_t>(spec.classes) > kMaxClasses) {
    m << "classes must be in [1, 2^24], got " << spec.classes;
    fail(m.str());
  }
  if (spec.label_length < 1 || (spec.label_kind == LabelKind::kClass && spec.label_length != 1)) {
    m << "label_length must be 1 for class labels and >= 1 for token sequences, got "
      << spec.label_length;
    fail(m.str());
  }
  const auto l = static_cast<std::size_t>(spec.label_length);
  if (labels.empty() || labels.size() % l != 0) {
    m << "need a positive multiple of label_length (" << l << ") labels, got " << labels.size();
    fail(m.str());
  }
  const auto count = static_cast<std::int64_t>(labels.size() / l);
  const std::int64_t d = SampleElements(spec.sample_shape);
  if (x_values != static_cast<std::size_t>(count * d)) {
    m << count << " samples of " << d << " values need " << count * d << " values, got " << x_values;
    fail(m.str());
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= spec.classes) {
      m << "label " << labels[i] << " (index " << i << ") is outside [0, " << spec.classes << ")";
      fail(m.str());
    }
  }
  return count;
}

void WriteImpl(const std::string& path, const BinaryDatasetSpec& spec, std::int64_t count,
               std::span<const unsigned char> sample_bytes, std::span<const std::int64_t> labels) {
  const std::uint64_t rank = spec.sample_shape.size();
  std::vector<unsigned char> header(kFixedHeaderBytes + 8 * rank);
  std::memcpy(header.data(), kMagic, 8);
  StoreLE<std::uint32_t>(header.data() + 8, kVersion);
  StoreLE<std::uint32_t>(header.data() + 12, static_cast<std::uint32_t>(spec.dtype));
  StoreFloatsLE(header.data() + 16, &spec.scale, 1);
  StoreLE<std::uint32_t>(header.data() + 20, LabelKindCode(spec.label_kind));
  StoreLE<std::uint64_t>(header.data() + 24, static_cast<std::uint64_t>(count));
  StoreLE<std::uint64_t>(header.data() + 32, static_cast<std::uint64_t>(spec.classes));
  StoreLE<std::uint64_t>(header.data() + 40, static_cast<std::uint64_t>(spec.label_length));
  StoreLE<std::uint32_t>(header.data() + 48, static_cast<std::uint32_t>(rank));
  for (std::uint64_t i = 0; i < rank; ++i) {
    StoreLE<std::uint64_t>(header.data() + kFixedHeaderBytes + 8 * i,
                           static_cast<std::uint64_t>(spec.sample_shape[i]));
  }
  std::vector<unsigned char> label_bytes(4 * labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    StoreLE<std::uint32_t>(label_bytes.data() + 4 * i, static_cast<std::uint32_t>(labels[i]));
  }
  // Atomic: a killed or failed write leaves the old file, never half a
  // dataset that a later run would reject (or read).
  WriteFileAtomic(path, [&](std::ostream& out) {
    for (std::span<const unsigned char> b : {std::span<const unsigned char>(header),
                                             sample_bytes,
                                             std::span<const unsigned char>(label_bytes)}) {
      out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    }
  });
}

}  // namespace

// ---------------------------------------------------------------- reader

SampleShape BinaryDataset::label_shape() const {
  if (spec_.label_kind == LabelKind::kClass) return {};
  return {spec_.label_length};
}

BinaryDataset BinaryDataset::Open(const std::string& path) {
  BinaryDataset ds;
  ds.path_ = path;
  ds.bytes_ = ReadFileBytes(path);
  ByteReader r(ds.bytes_, path,
               "the file was cut short (interrupted copy or download?); write it again");
  // Throws "<what> at byte offset <at>: expected <expected>, found <found>".
  auto bad = [&r](std::uint64_t at, const char* what, const std::string& expected,
                  const std::string& found, const char* hint) {
    std::ostringstream m;
    m << "invalid " << what << " at byte offset " << at << ": expected " << expected << ", found "
      << found;
    r.Fail(m.str(), hint);
  };

  // A short file that does not start like the magic is "not a dataset"
  // rather than "truncated".
  const std::size_t head = std::min<std::size_t>(8, ds.bytes_.size());
  if (head == 0 || std::memcmp(ds.bytes_.data(), kMagic, head) == 0) {
    r.Take(8, "the magic \"DTSIMDS1\"");  // throws when the file is shorter
  } else {
    std::ostringstream found;
    found << "bytes";
    for (std::size_t i = 0; i < head; ++i) found << ' ' << static_cast<int>(ds.bytes_[i]);
    bad(0, "magic", "\"DTSIMDS1\"", found.str(),
        "this is not a dtsim dataset file; write it with WriteBinaryDataset "
        "(docs/dataset_format.md)");
  }
  const auto version = r.Read<std::uint32_t>("the format version (u32)");
  if (version != kVersion) {
    bad(8, "version", "1", std::to_string(version),
        "this dtsim reads version 1 files; rewrite the file with this dtsim's WriteBinaryDataset");
  }
  const auto dtype = r.Read<std::uint32_t>("the dtype (u32)");
  if (dtype != 1 && dtype != 2) {
    bad(12, "dtype", "1 (float32) or 2 (uint8)", std::to_string(dtype), kConvertHint);
  }
  ds.spec_.dtype = static_cast<BinaryDType>(dtype);
  float scale = 0;
  LoadFloatsLE(&scale, r.Take(4, "the scale (f32)").data(), 1);
  const bool scale_ok = ds.spec_.dtype == BinaryDType::kFloat32
                            ? scale == 1.0f
                            : std::isfinite(scale) && scale > 0;
  if (!scale_ok) {
    std::ostringstream found;
    found << scale;
    bad(16, "scale",
        ds.spec_.dtype == BinaryDType::kFloat32 ? "1 for float32 samples"
                                                : "a finite number > 0 for uint8 samples",
        found.str(), kConvertHint);
  }
  ds.spec_.scale = scale;
  const auto kind = r.Read<std::uint32_t>("the label kind (u32)");
  if (kind != kLabelKindClass && kind != kLabelKindTokens) {
    bad(20, "label kind", "1 (class) or 2 (token sequence)", std::to_string(kind), kConvertHint);
  }
  ds.spec_.label_kind = kind == kLabelKindClass ? LabelKind::kClass : LabelKind::kTokenSequence;
  const auto count = r.Read<std::uint64_t>("the sample count (u64)");
  if (count < 1 || count > static_cast<std::uint64_t>(INT64_MAX)) {
    bad(24, "sample count", "at least 1", std::to_string(count), kConvertHint);
  }
  const auto classes = r.Read<std::uint64_t>("the number of classes (u64)");
  if (classes < 1 || classes > kMaxClasses) {
    bad(32, "number of classes", "1 .. 2^24", std::to_string(classes), kConvertHint);
  }
  const auto label_length = r.Read<std::uint64_t>("the label length (u64)");
  const bool length_ok = ds.spec_.label_kind == LabelKind::kClass
                             ? label_length == 1
                             : label_length >= 1 && label_length <= (std::uint64_t{1} << 32);
  if (!length_ok) {
    bad(40, "label length",
        ds.spec_.label_kind == LabelKind::kClass ? "1 for class labels"
                                                 : "1 .. 2^32 for token sequences",
        std::to_string(label_length), kConvertHint);
  }
  const auto rank = r.Read<std::uint32_t>("the sample rank (u32)");
  if (rank < 1 || rank > kMaxRank) {
    bad(48, "sample rank", "1 .. 8", std::to_string(rank), kConvertHint);
  }
  std::uint64_t values = 1;
  for (std::uint32_t i = 0; i < rank; ++i) {
    const std::uint64_t at = r.offset();
    const auto dim = r.Read<std::uint64_t>("a sample dimension (u64)");
    if (dim < 1 || !MulOk(values, dim, &values) || values > static_cast<std::uint64_t>(INT64_MAX)) {
      bad(at, "sample dimension", "a dimension >= 1 whose product with the others fits in 63 bits",
          std::to_string(dim), kConvertHint);
    }
    ds.spec_.sample_shape.push_back(static_cast<std::int64_t>(dim));
  }
  ds.spec_.classes = static_cast<std::int64_t>(classes);
  ds.spec_.label_length = static_cast<std::int64_t>(label_length);
  ds.count_ = static_cast<std::int64_t>(count);
  ds.sample_values_ = static_cast<std::int64_t>(values);

  // Sizes: samples then labels, nothing after.
  ds.samples_offset_ = r.offset();
  std::uint64_t sample_bytes = 0, label_bytes = 0;
  bool sizes_ok = MulOk(count, values, &sample_bytes) &&
                  MulOk(sample_bytes, BytesPerValue(ds.spec_.dtype), &sample_bytes) &&
                  MulOk(count, label_length, &label_bytes) && MulOk(label_bytes, 4, &label_bytes) &&
                  ds.samples_offset_ + sample_bytes >= ds.samples_offset_ &&
                  ds.samples_offset_ + sample_bytes + label_bytes >= ds.samples_offset_ + sample_bytes;
  if (!sizes_ok) {
    bad(24, "sample count", "a count whose data size fits in 64 bits", std::to_string(count),
        kConvertHint);
  }
  ds.labels_offset_ = ds.samples_offset_ + sample_bytes;
  const std::uint64_t expected_size = ds.labels_offset_ + label_bytes;
  const std::uint64_t actual_size = ds.bytes_.size();
  if (actual_size != expected_size) {
    std::ostringstream m;
    m << "size mismatch: the header promises " << count << " samples of " << values << " values ("
      << sample_bytes << " bytes from byte offset " << ds.samples_offset_ << ") and "
      << count * label_length << " uint32 labels (from byte offset " << ds.labels_offset_
      << "), a file of " << expected_size << " bytes; ";
    if (actual_size < expected_size) {
      m << "truncated file: it ends at byte offset " << actual_size;
      r.Fail(m.str(), "the file was cut short (interrupted copy or download?); write it again");
    }
    m << "found " << actual_size - expected_size << " unexpected bytes from byte offset "
      << expected_size;
    r.Fail(m.str(), "the header's count or shape does not match the data; write the file again");
  }

  // Every label must name a class.
  const std::uint64_t n_labels = count * label_length;
  for (std::uint64_t i = 0; i < n_labels; ++i) {
    const std::uint64_t at = ds.labels_offset_ + 4 * i;
    const auto label = LoadLE<std::uint32_t>(ds.bytes_.data() + at);
    if (label >= classes) {
      std::ostringstream m;
      m << "label out of range at byte offset " << at << " (sample " << i / label_length
        << "): expected a class id in [0, " << classes << "), found " << label;
      r.Fail(m.str(), "labels are 0-based; check the label mapping or the header's class count");
    }
  }
  return ds;
}

void BinaryDataset::FillSample(std::int64_t index, float* x, float* label) const {
  const auto d = static_cast<std::uint64_t>(sample_values_);
  const auto i = static_cast<std::uint64_t>(index);
  if (spec_.dtype == BinaryDType::kFloat32) {
    LoadFloatsLE(x, bytes_.data() + samples_offset_ + 4 * d * i, d);
  } else {
    const unsigned char* src = bytes_.data() + samples_offset_ + d * i;
    for (std::uint64_t j = 0; j < d; ++j) x[j] = static_cast<float>(src[j]) * spec_.scale;
  }
  const auto l = static_cast<std::uint64_t>(spec_.label_length);
  const unsigned char* lab = bytes_.data() + labels_offset_ + 4 * l * i;
  for (std::uint64_t j = 0; j < l; ++j) label[j] = static_cast<float>(LoadLE<std::uint32_t>(lab + 4 * j));
}

// ---------------------------------------------------------------- writer

void WriteBinaryDataset(const std::string& path, const BinaryDatasetSpec& spec,
                        std::span<const float> x, std::span<const std::int64_t> labels) {
  DTSIM_CHECK(spec.dtype == BinaryDType::kFloat32, "float samples need dtype kFloat32");
  const std::int64_t count = CheckWriterInput(path, spec, x.size(), labels);
  std::vector<unsigned char> bytes(4 * x.size());
  StoreFloatsLE(bytes.data(), x.data(), x.size());
  WriteImpl(path, spec, count, bytes, labels);
}

void WriteBinaryDataset(const std::string& path, const BinaryDatasetSpec& spec,
                        std::span<const std::uint8_t> x, std::span<const std::int64_t> labels) {
  DTSIM_CHECK(spec.dtype == BinaryDType::kUint8, "uint8 samples need dtype kUint8");
  const std::int64_t count = CheckWriterInput(path, spec, x.size(), labels);
  WriteImpl(path, spec, count, std::span<const unsigned char>(x.data(), x.size()), labels);
}

void ExportDataset(const Dataset& dataset, std::int64_t count, const std::string& path) {
  DTSIM_CHECK(count >= 1, "ExportDataset needs count >= 1");
  BinaryDatasetSpec spec;
  spec.sample_shape = dataset.sample_shape();
  spec.label_kind = dataset.label_kind();
  spec.label_length = SampleElements(dataset.label_shape());
  spec.classes = dataset.classes();
  std::vector<float> x(static_cast<std::size_t>(count * SampleElements(spec.sample_shape)));
  std::vector<float> y(static_cast<std::size_t>(count * spec.label_length));
  dataset.Fill(0, count, x.data(), y.data());
  std::vector<std::int64_t> labels(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) labels[i] = static_cast<std::int64_t>(y[i]);
  WriteBinaryDataset(path, spec, x, labels);
}

}  // namespace dtsim::exec
