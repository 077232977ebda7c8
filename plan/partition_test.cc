#include "plan/partition.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace dtsim::plan {
namespace {

// n units of one op each: unit i is op i.
std::vector<LayerUnit> Units(int n) {
  std::vector<LayerUnit> u;
  for (int i = 0; i < n; ++i)
    u.push_back({"layer" + std::to_string(i), static_cast<models::OpId>(i),
                 static_cast<models::OpId>(i + 1)});
  return u;
}

TEST(Partition, UniformModelGivesEqualStages) {
  // 24 equal units over 2, 3, 4, 6, 8 stages: 24 / k units each.
  for (int k : {2, 3, 4, 6, 8}) {
    const auto chunks = BalancedChunks(Units(24), std::vector<double>(24, 1.0), k);
    ASSERT_EQ(chunks.size(), static_cast<std::size_t>(k));
    for (const auto& [b, e] : chunks) EXPECT_EQ(e - b, 24u / static_cast<unsigned>(k)) << k;
  }
}

TEST(Partition, NeverEmptyAndMinimizesTheLargestChunk) {
  // One heavy unit (cost 10) among light ones (1): the heavy unit gets a
  // chunk of its own, every chunk is non-empty, and the largest chunk costs
  // max(10, ceil-ish of the rest), found exactly.
  std::vector<double> cost(8, 1.0);
  cost[7] = 10;
  for (int k = 1; k <= 8; ++k) {
    const auto chunks = BalancedChunks(Units(8), cost, k);
    ASSERT_EQ(chunks.size(), static_cast<std::size_t>(k));
    models::OpId next = 0;
    double largest = 0;
    for (const auto& [b, e] : chunks) {
      EXPECT_EQ(b, next);
      EXPECT_GT(e, b) << "empty chunk with k=" << k;
      double c = 0;
      for (models::OpId v = b; v < e; ++v) c += cost[v];
      largest = std::max(largest, c);
      next = e;
    }
    EXPECT_EQ(next, 8u);
    // k = 1: everything (17); k >= 2: the heavy unit alone bounds it (10),
    // and 7 light units fit in the other k - 1 chunks.
    EXPECT_DOUBLE_EQ(largest, k == 1 ? 17.0 : 10.0) << k;
  }
}

TEST(Partition, EvenLayersAndManualCounts) {
  // embed, layer0..layer3, head: Megatron's split over 2 puts embed with
  // the first two layers and the head with the last two.
  std::vector<LayerUnit> u = {{"embed", 0, 1}, {"layer0", 1, 2}, {"layer1", 2, 3},
                              {"layer2", 3, 4}, {"layer3", 4, 5}, {"lm_head", 5, 6}};
  const auto even = EvenLayerChunks(u, 2);
  EXPECT_EQ(even, (std::vector<OpRange>{{0, 3}, {3, 6}}));
  EXPECT_THROW(EvenLayerChunks(u, 3), UserError);
  EXPECT_EQ(ChunksFromCounts(u, {1, 4, 1}), (std::vector<OpRange>{{0, 1}, {1, 5}, {5, 6}}));
  EXPECT_THROW(ChunksFromCounts(u, {1, 4}), UserError);
  EXPECT_THROW(ChunksFromCounts(u, {0, 5, 1}), UserError);
}

TEST(Partition, MemoryLimitMovesUnitsOffTheFullStage) {
  // 8 equal units (cost 1, 1 byte static, 1 byte of activations each) over
  // 2 stages. The first stage holds 3 micro-batches in flight, the second 1
  // (1F1B-like): 4 units on stage 0 need 4 + 3 x 4 = 16 bytes. With 12
  // bytes stage 0 can hold at most 3 units (3 + 9 = 12) and stage 1 takes
  // 5 (5 + 5 = 10), the best split that fits.
  const std::vector<double> one(8, 1.0);
  bool fits = false;
  auto chunks = BalancedChunksWithinMemory(Units(8), one, one, one, {3, 1}, 12, 2, &fits);
  EXPECT_TRUE(fits);
  EXPECT_EQ(chunks, (std::vector<OpRange>{{0, 3}, {3, 8}}));
  // Without the limit the split is even.
  chunks = BalancedChunksWithinMemory(Units(8), one, one, one, {3, 1}, 1e9, 2, &fits);
  EXPECT_EQ(chunks, (std::vector<OpRange>{{0, 4}, {4, 8}}));
  // Nothing fits in 4 bytes: the unconstrained split, flagged.
  chunks = BalancedChunksWithinMemory(Units(8), one, one, one, {3, 1}, 4, 2, &fits);
  EXPECT_FALSE(fits);
  EXPECT_EQ(chunks, (std::vector<OpRange>{{0, 4}, {4, 8}}));
}

TEST(Partition, RecomputationWorkingSetCountsOncePerChunk) {
  // Recomputation rebuilds one unit of one micro-batch at a time: a chunk
  // holds the largest unit's working set once, whatever its units and
  // micro-batches in flight. 8 units of 1 byte static, 1 kept, working sets
  // 10 (unit 0) and 4 (the others), 3 micro-batches in flight on stage 0:
  // 4 units there need 4 + 3 x 4 + 10 = 26 bytes (not 4 + 3 x (4 + 22)).
  const std::vector<double> one(8, 1.0);
  const std::vector<double> working = {10, 4, 4, 4, 4, 4, 4, 4};
  bool fits = false;
  auto chunks =
      BalancedChunksWithinMemory(Units(8), one, one, one, {3, 1}, 26, 2, &fits, working);
  EXPECT_TRUE(fits);
  EXPECT_EQ(chunks, (std::vector<OpRange>{{0, 4}, {4, 8}}));
  // One byte less: stage 0 drops a unit (3 + 9 + 10 = 22).
  chunks = BalancedChunksWithinMemory(Units(8), one, one, one, {3, 1}, 25, 2, &fits, working);
  EXPECT_TRUE(fits);
  EXPECT_EQ(chunks, (std::vector<OpRange>{{0, 3}, {3, 8}}));
}

}  // namespace
}  // namespace dtsim::plan
