// ShuffledDataset: a data set read in a fresh random order every epoch, as
// training loops shuffle (PyTorch's DataLoader(shuffle=True) with a seeded
// generator, tf.data's shuffle with reshuffle_each_iteration), while keeping
// Dataset's rule that sample i is a pure function of (arguments, i).
//
// Sample i is base sample P(seed, e)(i mod N), N = base.size(), e = i / N:
// P(seed, e) is a pseudo-random permutation of [0, N), a different one per
// epoch e and seed, so each epoch visits every base sample exactly once.
// P is a 4-round Feistel network on the smallest even number of bits >= 2
// that covers N, with round keys CounterBits(seed, e, round), cycle-walked
// back into [0, N) (Black & Rogaway, "Ciphers with Arbitrary Finite
// Domains", CT-RSA 2002): no table, O(1) expected per sample, safe from
// several threads.
//
// size() is N x kEpochs, so that the training loop's sample indices (which
// Dataset::Fill reduces modulo size()) keep their epoch.
#pragma once

#include <cstdint>
#include <memory>

#include "exec/data/dataset.h"

namespace dtsim::exec {

class ShuffledDataset final : public Dataset {
 public:
  // Epochs before the order repeats.
  static constexpr std::int64_t kEpochs = std::int64_t{1} << 20;

  ShuffledDataset(std::unique_ptr<Dataset> base, std::uint64_t seed);

  SampleShape sample_shape() const override { return base_->sample_shape(); }
  SampleShape label_shape() const override { return base_->label_shape(); }
  LabelKind label_kind() const override { return base_->label_kind(); }
  std::int64_t classes() const override { return base_->classes(); }
  std::int64_t size() const override { return base_->size() * kEpochs; }
  const Dataset& base() const { return *base_; }

  // The base sample read at position `position` (< base size) of `epoch`.
  std::int64_t BaseIndex(std::int64_t epoch, std::int64_t position) const;

 private:
  void FillSample(std::int64_t index, float* x, float* label) const override;

  std::unique_ptr<Dataset> base_;
  std::uint64_t seed_;
  int half_bits_ = 1;  // bits of each Feistel half
};

}  // namespace dtsim::exec
