#include "exec/data/shuffled_dataset.h"

#include "common/error.h"
#include "exec/counter_rng.h"

namespace dtsim::exec {

ShuffledDataset::ShuffledDataset(std::unique_ptr<Dataset> base, std::uint64_t seed)
    : base_(std::move(base)), seed_(seed) {
  DTSIM_CHECK(base_ != nullptr, "ShuffledDataset needs a base data set");
  const std::int64_t n = base_->size();
  DTSIM_CHECK(n >= 1 && n <= (std::int64_t{1} << 40), "ShuffledDataset: base size out of range");
  while ((std::int64_t{1} << (2 * half_bits_)) < n) ++half_bits_;
}

std::int64_t ShuffledDataset::BaseIndex(std::int64_t epoch, std::int64_t position) const {
  const std::int64_t n = base_->size();
  DTSIM_CHECK(position >= 0 && position < n && epoch >= 0, "BaseIndex out of range");
  const std::uint64_t mask = (std::uint64_t{1} << half_bits_) - 1;
  const std::uint64_t epoch_key = CounterBits(seed_, static_cast<std::uint64_t>(epoch));
  auto x = static_cast<std::uint64_t>(position);
  // Cycle-walking: the network permutes [0, 4^half_bits); apply it until
  // the value falls back into [0, n). Since 4^half_bits < 4 n, the expected
  // number of rounds is under 4.
  do {
    std::uint64_t left = x >> half_bits_, right = x & mask;
    for (std::uint64_t round = 0; round < 4; ++round) {
      const std::uint64_t f = CounterBits(epoch_key, (round << 40) | right) & mask;
      const std::uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << half_bits_) | right;
  } while (x >= static_cast<std::uint64_t>(n));
  return static_cast<std::int64_t>(x);
}

void ShuffledDataset::FillSample(std::int64_t index, float* x, float* label) const {
  const std::int64_t n = base_->size();
  base_->Fill(BaseIndex(index / n, index % n), 1, x, label);
}

}  // namespace dtsim::exec
