// Variable placement over parameter servers: every element placed once,
// `even` is the contiguous ceil(P / S) cut, and VGG-16 on 4 servers gives
// the bytes per server worked out by hand below.
#include "plan/ps_placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "common/error.h"

#include "models/zoo.h"

namespace dtsim::plan {
namespace {

const models::ModelGraph& Vgg16() {
  static const models::ModelGraph g = models::BuildZooModel("vgg16");
  return g;
}

// Every element of [0, P) is covered by exactly one piece, each piece lies
// inside its variable, pieces of a server are in buffer order, and the
// per-server totals add up.
void ExpectExactCover(const PsPlacement& p) {
  std::int64_t total = 0;
  for (const PsVariable& v : p.variables) total += v.count;
  std::vector<PsPiece> all;
  for (const PsServerShare& share : p.servers) {
    std::int64_t params = 0, last_end = -1;
    double bytes = 0;
    for (const PsPiece& piece : share.pieces) {
      const PsVariable& v = p.variables[static_cast<std::size_t>(piece.variable)];
      ASSERT_GE(piece.count, 1);
      ASSERT_GE(piece.offset, v.offset);
      ASSERT_LE(piece.offset + piece.count, v.offset + v.count);
      ASSERT_GE(piece.offset, last_end) << "pieces out of buffer order";
      last_end = piece.offset + piece.count;
      all.push_back(piece);
      params += piece.count;
      bytes += static_cast<double>(piece.count) * v.bytes_per_element;
    }
    EXPECT_EQ(share.params, params);
    EXPECT_DOUBLE_EQ(share.bytes, bytes);
  }
  // Sorted by offset, the pieces must tile [0, total) with no gap or overlap.
  std::sort(all.begin(), all.end(),
            [](const PsPiece& a, const PsPiece& b) { return a.offset < b.offset; });
  std::int64_t next = 0;
  for (const PsPiece& piece : all) {
    ASSERT_EQ(piece.offset, next) << "gap or overlap";
    next += piece.count;
  }
  EXPECT_EQ(next, total);
}

// Random variable lists (1..40 variables of 1..5000 elements), every policy,
// 1..9 servers, shard sizes from one element up.
TEST(PsPlacement, EveryElementPlacedExactlyOnce) {
  std::mt19937_64 rng(11);
  const PsPlacementSpec specs[] = {{PsPlacementPolicy::kEven},
                                   {PsPlacementPolicy::kRoundRobin},
                                   {PsPlacementPolicy::kGreedy},
                                   {PsPlacementPolicy::kPartitioned, 4},
                                   {PsPlacementPolicy::kPartitioned, 1000},
                                   {PsPlacementPolicy::kPartitioned, 1e9}};
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<PsVariable> vars;
    std::int64_t offset = 0;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const std::int64_t count = 1 + static_cast<std::int64_t>(rng() % 5000);
      PsVariable v;
      v.op = static_cast<models::OpId>(i);
      v.name = std::to_string(i);
      v.offset = offset;
      v.count = count;
      vars.push_back(v);
      offset += count;
    }
    const int servers = 1 + static_cast<int>(rng() % 9);
    for (const PsPlacementSpec& spec : specs) {
      SCOPED_TRACE(spec.Describe() + " on " + std::to_string(servers) + " servers, trial " +
                   std::to_string(trial));
      ExpectExactCover(PlaceVariables(vars, servers, spec));
    }
  }
}

// exec/runtime/ps_runner.cc's historical cut: server s holds [s * per,
// min(P, (s + 1) * per)) with per = ceil(P / S).
TEST(PsPlacement, EvenIsTheContiguousCeilCut) {
  const std::vector<PsVariable> vars = ModelVariables(Vgg16());
  for (int servers : {1, 3, 4, 7, 64}) {
    const PsPlacement p = PlaceVariables(vars, servers, {PsPlacementPolicy::kEven});
    const std::int64_t total = 138357544;  // models/zoo_test.cc: VGG-16's parameters
    const std::int64_t per = (total + servers - 1) / servers;
    for (int s = 0; s < servers; ++s) {
      const PsServerShare& share = p.servers[static_cast<std::size_t>(s)];
      const std::int64_t begin = std::min(total, per * s), end = std::min(total, per * (s + 1));
      EXPECT_EQ(share.params, end - begin);
      if (end > begin) {
        EXPECT_EQ(share.pieces.front().offset, begin);
        EXPECT_EQ(share.pieces.back().offset + share.pieces.back().count, end);
      }
    }
  }
}

// VGG-16 (torchvision, configuration D): 13 convolutions 3x3 and 3 dense
// layers, each a weight then a bias: 32 variables, fp32.
//   layer k  weight (elements)           bias
//    0 c1_1  3*3*3*64     =      1,728     64
//    1 c1_2  3*3*64*64    =     36,864     64
//    2 c2_1  3*3*64*128   =     73,728    128
//    3 c2_2  3*3*128*128  =    147,456    128
//    4 c3_1  3*3*128*256  =    294,912    256
//    5 c3_2  3*3*256*256  =    589,824    256
//    6 c3_3               =    589,824    256
//    7 c4_1  3*3*256*512  =  1,179,648    512
//    8 c4_2  3*3*512*512  =  2,359,296    512
//    9 c4_3, 10 c5_1, 11 c5_2, 12 c5_3: 2,359,296 each, bias 512
//   13 fc6   25088*4096   = 102,760,448  4096
//   14 fc7   4096*4096    =  16,777,216  4096
//   15 fc8   4096*1000    =   4,096,000  1000
// Total 138,357,544 (models/zoo_test.cc).
TEST(PsPlacement, Vgg16VariablesAreWeightThenBias) {
  const std::vector<PsVariable> vars = ModelVariables(Vgg16());
  ASSERT_EQ(vars.size(), 32u);
  EXPECT_EQ(vars[0].count, 1728);
  EXPECT_EQ(vars[1].count, 64);
  EXPECT_EQ(vars[26].count, 102760448);
  EXPECT_EQ(vars[27].count, 4096);
  EXPECT_EQ(vars[31].count, 1000);
  EXPECT_EQ(vars.back().offset + vars.back().count, 138357544);
}

// Round-robin over 4: variable i (weight of layer k = 2k, bias = 2k+1) to
// server i mod 4: weights of even layers on 0, biases of even layers on 1,
// weights of odd layers on 2, biases of odd layers on 3.
//   server 0: 1,728 + 73,728 + 294,912 + 589,824 + 3 x 2,359,296 (c4_2,
//             c5_1, c5_3) + 16,777,216 (fc7)                = 24,815,296
//   server 1: 64 + 128 + 256 + 256 + 3 x 512 + 4,096         =      6,336
//   server 2: 36,864 + 147,456 + 589,824 + 1,179,648 + 2 x 2,359,296
//             (c4_3, c5_2) + 102,760,448 (fc6) + 4,096,000 (fc8)
//                                                            = 113,528,832
//   server 3: 64 + 128 + 256 + 3 x 512 + 4,096 + 1,000       =      7,080
// x 4 bytes. fc6 alone puts 82% of the model on server 2.
TEST(PsPlacement, Vgg16RoundRobin) {
  const PsPlacement p =
      PlaceVariables(ModelVariables(Vgg16()), 4, {PsPlacementPolicy::kRoundRobin});
  EXPECT_EQ(p.servers[0].params, 24815296);
  EXPECT_EQ(p.servers[1].params, 6336);
  EXPECT_EQ(p.servers[2].params, 113528832);
  EXPECT_EQ(p.servers[3].params, 7080);
  EXPECT_DOUBLE_EQ(p.servers[2].bytes, 4.0 * 113528832);
  ExpectExactCover(p);
}

// Greedy over 4 (loads in elements after each step; ties to the lowest):
//   c1_1.w->0 [1728,0,0,0]  b->1  c1_2.w->2  b->3 [1728,64,36864,64]
//   c2_1.w->1 (tie 1/3)     b->3  c2_2.w->3  b->0 [1856,73792,36864,147648]
//   c3_1.w->0  b->2  c3_2.w->2  b->1  c3_3.w->1  b->3
//                                        [296768,663872,626944,147904]
//   c4_1.w->3  b->0  c4_2.w->0  b->2  c4_3.w->2  b->1  c5_1.w->1  b->3
//   c5_2.w->3  b->0  c5_3.w->0  b->2     [5016384,3023680,2987264,3687360]
//   fc6.w->2 [.., 105747712, ..]  b->1  fc7.w->1 [.., 19804992, ..]
//   b->3  fc8.w->3 [.., 7787456]  b->0 [5017384, ...]
// Final: 5,017,384 / 19,804,992 / 105,747,712 / 7,787,456 (sum 138,357,544).
TEST(PsPlacement, Vgg16Greedy) {
  const PsPlacement p = PlaceVariables(ModelVariables(Vgg16()), 4, {PsPlacementPolicy::kGreedy});
  EXPECT_EQ(p.servers[0].params, 5017384);
  EXPECT_EQ(p.servers[1].params, 19804992);
  EXPECT_EQ(p.servers[2].params, 105747712);
  EXPECT_EQ(p.servers[3].params, 7787456);
  ExpectExactCover(p);
}

// Partitioned at BytePS's 4,096,000 bytes (1,024,000 fp32 elements):
//   c4_1.w (4,718,592 B) 2 pieces; c4_2..c5_3 (9,437,184 B) 3 each;
//   fc6.w (411,041,792 B) ceil(100.35) = 101; fc7.w (67,108,864 B) 17;
//   fc8.w (16,384,000 B) exactly 4; every other variable 1.
// Pieces before fc6.w: 14 (v0..v13) + 2 + 1 + 5 x (3 + 1) = 37, so fc6's
// 101 pieces start on server 37 mod 4 = 1 and give servers 1, 2, 3, 0
// 26, 25, 25, 25 pieces of 1,017,430 or 1,017,431 elements (102,760,448 =
// 101 x 1,017,430 + 18). Summing every piece (162 in all, 41/41/40/40 per
// server) gives 31,374,694 / 35,358,629 / 35,707,559 / 35,916,662
// elements: within 4% of the even 34,589,386, where round-robin's largest
// is 3.3 x.
TEST(PsPlacement, Vgg16PartitionedAsBytePs) {
  const PsPlacement p =
      PlaceVariables(ModelVariables(Vgg16()), 4, {PsPlacementPolicy::kPartitioned, 4096000});
  EXPECT_EQ(p.servers[0].params, 31374694);
  EXPECT_EQ(p.servers[1].params, 35358629);
  EXPECT_EQ(p.servers[2].params, 35707559);
  EXPECT_EQ(p.servers[3].params, 35916662);
  EXPECT_EQ(p.servers[0].pieces.size() + p.servers[1].pieces.size() +
                p.servers[2].pieces.size() + p.servers[3].pieces.size(),
            162u);
  int fc6_on_1 = 0;
  for (const PsPiece& piece : p.servers[1].pieces) fc6_on_1 += piece.variable == 26 ? 1 : 0;
  EXPECT_EQ(fc6_on_1, 26);
  ExpectExactCover(p);
}

TEST(PsPlacement, TooManyPiecesIsAUserError) {
  EXPECT_THROW(PlaceVariables(ModelVariables(Vgg16()), 4, {PsPlacementPolicy::kPartitioned, 4}),
               UserError);
}

}  // namespace
}  // namespace dtsim::plan
