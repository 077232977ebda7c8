#include "exec/data/batch_prefetcher.h"

#include <algorithm>
#include <utility>

#include "common/error.h"

namespace dtsim::exec {

BatchPrefetcher::BatchPrefetcher(const Dataset& data, std::int64_t batch, int threads)
    : data_(data),
      batch_(batch),
      sample_floats_(SampleElements(data.sample_shape())),
      label_floats_(SampleElements(data.label_shape())) {
  DTSIM_CHECK(batch >= 1 && threads >= 0, "BatchPrefetcher: batch >= 1 and threads >= 0");
  // No more workers than samples: each part holds at least one.
  const auto n = static_cast<int>(std::min<std::int64_t>(threads, batch));
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { Work(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

BatchPrefetcher::Batch BatchPrefetcher::NewBatch() {
  if (!free_.empty()) {
    Batch b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  auto b = std::make_unique<Buffers>();
  b->x.resize(static_cast<std::size_t>(batch_ * sample_floats_));
  b->labels.resize(static_cast<std::size_t>(batch_ * label_floats_));
  return b;
}

void BatchPrefetcher::QueueLocked(std::int64_t first) {
  Pending& p = pending_[first];
  p.batch = NewBatch();
  const auto parts = static_cast<std::int64_t>(workers_.size());
  // Contiguous parts of near-equal size; which worker fills which part does
  // not change a byte (every sample is a pure function of its index).
  for (std::int64_t k = 0; k < parts; ++k) {
    const std::int64_t begin = batch_ * k / parts, end = batch_ * (k + 1) / parts;
    queue_.push_back({first, begin, end - begin, p.batch.get()});
    ++p.parts_left;
  }
}

void BatchPrefetcher::Prefetch(std::int64_t first) {
  if (workers_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.count(first) != 0) return;
    QueueLocked(first);
  }
  work_ready_.notify_all();
}

BatchPrefetcher::Batch BatchPrefetcher::Take(std::int64_t first) {
  if (workers_.empty()) {
    Batch b = NewBatch();
    data_.Fill(first, batch_, b->x.data(), b->labels.data());
    return b;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (pending_.count(first) == 0) {
    QueueLocked(first);
    work_ready_.notify_all();
  }
  part_done_.wait(lock, [&] { return pending_.at(first).parts_left == 0; });
  Batch b = std::move(pending_.at(first).batch);
  pending_.erase(first);
  return b;
}

void BatchPrefetcher::Recycle(Batch batch) {
  if (!batch) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(batch));
}

void BatchPrefetcher::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_ready_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const Part part = queue_.front();
    queue_.pop_front();
    lock.unlock();
    data_.Fill(part.first + part.offset, part.count,
               part.into->x.data() + part.offset * sample_floats_,
               part.into->labels.data() + part.offset * label_floats_);
    lock.lock();
    --pending_.at(part.first).parts_left;
    part_done_.notify_all();
  }
}

}  // namespace dtsim::exec
