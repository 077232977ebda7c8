// BatchPrefetcher: the input pipeline of real runs. Fills batches of a
// Dataset ahead of the training loop on worker threads, as tf.data's
// prefetch and PyTorch's DataLoader workers do, so that a GPU does not wait
// for the host to draw its next batch.
//
//   BatchPrefetcher input(data, /*batch=*/64, /*threads=*/4);
//   input.Prefetch(0);                      // starts filling samples 0..63
//   BatchPrefetcher::Batch b = input.Take(0);  // waits until they are there
//   ... use b->x, b->labels ...
//   input.Recycle(std::move(b));            // its buffers serve a later batch
//
// Every Take returns exactly Dataset::Fill's bytes for the same first sample
// (the dataset is pure per sample, dataset.h), whatever the thread count and
// whatever was prefetched: results do not depend on the pipeline. With 0
// threads nothing runs in the background: Take fills on the caller's thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/data/dataset.h"

namespace dtsim::exec {

class BatchPrefetcher {
 public:
  struct Buffers {
    std::vector<float> x;       // batch x D
    std::vector<float> labels;  // batch x L
  };
  using Batch = std::unique_ptr<Buffers>;

  // REQUIRES: batch >= 1, threads >= 0; `data` outlives this object.
  BatchPrefetcher(const Dataset& data, std::int64_t batch, int threads);
  // Stops the workers; a batch being filled is finished first (the samples
  // of one part of it, at most), the rest of the queue is dropped.
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // Starts filling the batch whose first sample is `first`, split into one
  // part per worker. No-op with 0 threads, or when it was already asked for.
  void Prefetch(std::int64_t first);
  // The batch starting at `first`: waits for a prefetched one, else fills it
  // now (on the workers, or on this thread with 0 threads).
  Batch Take(std::int64_t first);
  // Gives a taken batch's buffers back for reuse (no allocation in the
  // steady state).
  void Recycle(Batch batch);

  int threads() const { return static_cast<int>(workers_.size()); }

 private:
  struct Pending {
    Batch batch;
    int parts_left = 0;
  };
  struct Part {
    std::int64_t first = 0;   // the batch's first sample
    std::int64_t offset = 0;  // first sample of this part within the batch
    std::int64_t count = 0;
    Buffers* into = nullptr;
  };

  Batch NewBatch();  // from the free list, else allocated
  void Work();
  // With mu_ held: queues `first`'s parts.
  void QueueLocked(std::int64_t first);

  const Dataset& data_;
  const std::int64_t batch_;
  const std::int64_t sample_floats_, label_floats_;
  std::mutex mu_;
  std::condition_variable work_ready_, part_done_;
  std::deque<Part> queue_;
  std::map<std::int64_t, Pending> pending_;  // by first sample
  std::vector<Batch> free_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace dtsim::exec
