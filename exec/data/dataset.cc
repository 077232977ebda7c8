#include "exec/data/dataset.h"

#include "common/error.h"

namespace dtsim::exec {

std::int64_t SampleElements(const SampleShape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

void Dataset::Fill(std::int64_t first, std::int64_t count, float* x, float* labels) const {
  DTSIM_CHECK(first >= 0 && count >= 0, "Fill needs first >= 0 and count >= 0");
  const std::int64_t n = size();
  const std::int64_t d = SampleElements(sample_shape());
  const std::int64_t l = SampleElements(label_shape());
  for (std::int64_t i = 0; i < count; ++i) {
    // (first % n + i % n) % n avoids overflow of first + i near INT64_MAX.
    std::int64_t index = (first % n + i % n) % n;
    FillSample(index, x + i * d, labels + i * l);
  }
}

}  // namespace dtsim::exec
