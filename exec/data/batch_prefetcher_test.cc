#include "exec/data/batch_prefetcher.h"

#include <gtest/gtest.h>

#include <vector>

#include "exec/data/synthetic_dataset.h"

namespace dtsim::exec {
namespace {

// The reference: Dataset::Fill called directly for the same samples.
BatchPrefetcher::Buffers Direct(const Dataset& d, std::int64_t first, std::int64_t batch) {
  BatchPrefetcher::Buffers b;
  b.x.resize(static_cast<std::size_t>(batch * SampleElements(d.sample_shape())));
  b.labels.resize(static_cast<std::size_t>(batch * SampleElements(d.label_shape())));
  d.Fill(first, batch, b.x.data(), b.labels.data());
  return b;
}

ClassImageDataset SmallImages() {
  return ClassImageDataset(ClassImageDatasetOptions{.channels = 3, .height = 8, .width = 8,
                                                    .classes = 5, .size = 40, .seed = 7});
}

// Every thread count (0: the caller's thread; more threads than samples)
// gives Fill's bytes, prefetched or not, across the dataset's wrap-around.
TEST(BatchPrefetcher, SameBytesAsFillForAnyThreadCount) {
  const ClassImageDataset data = SmallImages();
  const std::int64_t batch = 7;
  for (int threads : {0, 1, 3, 16}) {
    BatchPrefetcher input(data, batch, threads);
    EXPECT_EQ(input.threads(), std::min(threads, 7));
    for (std::int64_t step = 0; step < 8; ++step) {
      const std::int64_t first = step * batch;  // reaches past size 40: wraps
      if (step % 2 == 0) input.Prefetch(first);
      input.Prefetch(first + batch);  // ahead, as the executor does
      BatchPrefetcher::Batch got = input.Take(first);
      const BatchPrefetcher::Buffers want = Direct(data, first, batch);
      EXPECT_EQ(got->x, want.x) << "threads " << threads << " step " << step;
      EXPECT_EQ(got->labels, want.labels) << "threads " << threads << " step " << step;
      input.Recycle(std::move(got));
    }
  }
}

// Token sequences: labels of L floats per sample land at the right place
// when parts split the batch.
TEST(BatchPrefetcher, SplitsSequenceLabelsAtSampleBoundaries) {
  const TokenDataset data(TokenDatasetOptions{.vocab = 50, .seq_len = 12, .seed = 3});
  BatchPrefetcher input(data, 5, 2);
  BatchPrefetcher::Batch got = input.Take(11);
  const BatchPrefetcher::Buffers want = Direct(data, 11, 5);
  EXPECT_EQ(got->x, want.x);
  EXPECT_EQ(got->labels, want.labels);
}

// Batches asked for and never taken are dropped when the prefetcher goes
// (the destructor neither hangs nor leaks).
TEST(BatchPrefetcher, DestroyedWithBatchesInFlight) {
  const ClassImageDataset data = SmallImages();
  BatchPrefetcher input(data, 4, 2);
  for (std::int64_t first = 0; first < 40; first += 4) input.Prefetch(first);
}

}  // namespace
}  // namespace dtsim::exec
