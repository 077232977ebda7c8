// Dataset: where exec's training loop gets its samples. Implementations:
// synthetic sets that need no download (synthetic_dataset.h) and user data in
// dtsim's binary format (binary_dataset.h, docs/dataset_format.md).
//
// The one rule every implementation keeps: sample i is a PURE function of
// (the dataset's construction arguments, i). Whichever rank, batch split or
// process asks for sample i gets the same bits, so "n workers x m samples"
// equals "one worker x n*m samples" and a resumed run is bit-identical.
//
// Shapes: N = samples in one Fill call, D = prod(sample_shape()),
// L = prod(label_shape()) (1 for a class id).
#pragma once

#include <cstdint>
#include <vector>

namespace dtsim::exec {

// Per-sample shape without the batch dimension; the same type as
// models::Shape.
using SampleShape = std::vector<std::int64_t>;

// What a sample's label holds.
enum class LabelKind {
  kClass,          // one integer class id in [0, classes())
  kTokenSequence,  // label_shape() token ids in [0, classes()) (next tokens)
};

// Product of the dimensions; 1 for an empty shape.
std::int64_t SampleElements(const SampleShape& shape);

// Thread-safety: every method is const and safe to call from several threads.
class Dataset {
 public:
  virtual ~Dataset() = default;

  // Shape of one input sample (e.g. {3, 32, 32} for CHW images, {S} tokens).
  virtual SampleShape sample_shape() const = 0;
  // Shape of one sample's label: {} for a class id, {S} for a token sequence.
  virtual SampleShape label_shape() const = 0;
  virtual LabelKind label_kind() const = 0;
  // Number of classes (vocabulary size for token labels); >= 1.
  virtual std::int64_t classes() const = 0;
  // Number of distinct samples; >= 1. Synthetic sets could go on forever but
  // give a finite size so epochs mean something.
  virtual std::int64_t size() const = 0;

  // Writes samples first .. first+count-1, each index taken modulo size(),
  // as row-major floats: x is (count, D), labels is (count, L) floats holding
  // exact integers (see exec/backend.h).
  // REQUIRES: first >= 0, count >= 0, x and labels hold count*D and count*L
  // floats.
  void Fill(std::int64_t first, std::int64_t count, float* x, float* labels) const;

 private:
  // Writes sample `index` (0 <= index < size()): D floats at x, L at label.
  // Must depend only on the construction arguments and index.
  virtual void FillSample(std::int64_t index, float* x, float* label) const = 0;
};

}  // namespace dtsim::exec
