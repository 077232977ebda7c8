#include "exec/data/shuffled_dataset.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <memory>
#include <set>
#include <vector>

namespace dtsim::exec {
namespace {

// Sample i holds the value i, its label i mod 3: what a shuffled read
// returns names the base sample it came from.
class CountingDataset final : public Dataset {
 public:
  explicit CountingDataset(std::int64_t n) : n_(n) {}
  SampleShape sample_shape() const override { return {1}; }
  SampleShape label_shape() const override { return {}; }
  LabelKind label_kind() const override { return LabelKind::kClass; }
  std::int64_t classes() const override { return 3; }
  std::int64_t size() const override { return n_; }

 private:
  void FillSample(std::int64_t index, float* x, float* label) const override {
    x[0] = static_cast<float>(index);
    label[0] = static_cast<float>(index % 3);
  }
  std::int64_t n_;
};

std::vector<std::int64_t> Epoch(const ShuffledDataset& d, std::int64_t n, std::int64_t epoch) {
  std::vector<float> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
  d.Fill(epoch * n, n, x.data(), y.data());
  std::vector<std::int64_t> order;
  for (std::int64_t i = 0; i < n; ++i) {
    order.push_back(static_cast<std::int64_t>(x[static_cast<std::size_t>(i)]));
    EXPECT_EQ(y[static_cast<std::size_t>(i)], static_cast<float>(order.back() % 3));
  }
  return order;
}

TEST(ShuffledDataset, EveryEpochIsAPermutationOfItsOwn) {
  // Sizes around powers of 4 exercise the cycle-walking (60000 is
  // Fashion-MNIST's training split).
  for (std::int64_t n : {1, 2, 3, 4, 5, 17, 255, 256, 257, 1000, 60000}) {
    ShuffledDataset d(std::make_unique<CountingDataset>(n), 7);
    EXPECT_EQ(d.size(), n * ShuffledDataset::kEpochs);
    const auto e0 = Epoch(d, n, 0), e1 = Epoch(d, n, 1);
    EXPECT_EQ(std::set<std::int64_t>(e0.begin(), e0.end()).size(), static_cast<std::size_t>(n))
        << "epoch 0 of " << n << " repeats a sample";
    EXPECT_EQ(std::set<std::int64_t>(e1.begin(), e1.end()).size(), static_cast<std::size_t>(n));
    EXPECT_EQ(*std::max_element(e0.begin(), e0.end()), n - 1);
    if (n >= 17) {
      EXPECT_NE(e0, e1) << "epochs 0 and 1 share an order at n = " << n;
    }
  }
}

TEST(ShuffledDataset, TheOrderIsAFunctionOfSeedEpochAndIndexOnly) {
  const std::int64_t n = 1000;
  ShuffledDataset a(std::make_unique<CountingDataset>(n), 7);
  ShuffledDataset b(std::make_unique<CountingDataset>(n), 7);
  ShuffledDataset c(std::make_unique<CountingDataset>(n), 8);
  EXPECT_EQ(Epoch(a, n, 3), Epoch(b, n, 3));
  EXPECT_NE(Epoch(a, n, 3), Epoch(c, n, 3));
  // Reading one sample alone gives what the epoch's read gave.
  const auto whole = Epoch(a, n, 2);
  float x = 0, y = 0;
  a.Fill(2 * n + 123, 1, &x, &y);
  EXPECT_EQ(static_cast<std::int64_t>(x), whole[123]);
  EXPECT_EQ(a.BaseIndex(2, 123), whole[123]);
  // Not the identity: fewer than 5% of the positions keep their sample
  // (a random permutation keeps 1 on average).
  int fixed = 0;
  for (std::int64_t i = 0; i < n; ++i) fixed += whole[static_cast<std::size_t>(i)] == i;
  EXPECT_LT(fixed, 50);
}

}  // namespace
}  // namespace dtsim::exec
