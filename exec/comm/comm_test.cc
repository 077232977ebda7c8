// Tests of exec/comm over MPI. The same program runs with any number of ranks
// (ctest: 1 as an MPI singleton, 2 and 4 under mpirun). Every rank runs every
// test, and every test is collective: a rank never skips a communication
// call that its peers make, so a failed expectation on one rank does not
// hang the others. Only rank 0 prints GoogleTest's report; other ranks print
// only their failures, and the exit status is failed if any rank failed.
//
// N = number of ranks, r = a rank, i = element index.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "common/error.h"
#include "exec/comm/chunks.h"
#include "exec/comm/mpi_check.h"
#include "exec/comm/mpi_communicator.h"
#include "exec/comm/mpi_session.h"
#include "exec/comm/ring_allreduce.h"
#include "exec/comm/tree_allreduce.h"
#include "exec/counter_rng.h"

namespace dtsim::exec {
namespace {

std::vector<int> WorldGroup(int n) {
  std::vector<int> g(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) g[static_cast<std::size_t>(r)] = r;
  return g;
}

// Sub-groups that partition the world; each rank gets the one it is in.
// Parity: {0, 2, ...} and {1, 3, ...}. Without two: {2} and everyone else
// (a group of N-1 with a gap, for N >= 3).
std::vector<int> ParityGroup(int rank, int n) {
  std::vector<int> g;
  for (int r = rank % 2; r < n; r += 2) g.push_back(r);
  return g;
}
std::vector<int> WithoutTwoGroup(int rank, int n) {
  if (rank == 2) return {2};
  std::vector<int> g;
  for (int r = 0; r < n; ++r)
    if (r != 2) g.push_back(r);
  return g;
}

// Rank r's element i: (i % 4096 + 1) * (r + 1). Over a group the sum is
// (i % 4096 + 1) * sum_{r in group} (r + 1): at most 4096 * N(N+1)/2, an
// integer below 2^24 for N < 90, so every partial sum is exact in float in
// any order and the closed form can be compared with ==.
float ClosedFormValue(std::size_t i, int r) {
  return static_cast<float>((i % 4096 + 1) * static_cast<std::size_t>(r + 1));
}
float ClosedFormSum(std::size_t i, const std::vector<int>& group) {
  std::size_t ranks = 0;  // sum of (r + 1) over the group
  for (int r : group) ranks += static_cast<std::size_t>(r + 1);
  return static_cast<float>((i % 4096 + 1) * ranks);
}

// Rank r's element i for the bitwise tests: uniform in [-1, 1) from the
// counter RNG (any rank can compute any rank's data), so sums round.
float RandomValue(std::size_t i, int r) {
  return 2.0f * CounterUniform(1000 + static_cast<std::uint64_t>(r), i) - 1.0f;
}

// What the ring must compute, per ring_allreduce.h: part c is summed in ring
// order from position c: ((x_c + x_{c+1}) + ...) + x_{c+N-1}.
std::vector<float> RingReference(std::size_t count, const std::vector<int>& group) {
  const std::size_t n = group.size();
  std::vector<float> out(count);
  for (std::size_t c = 0; c < n; ++c) {
    const ElementRange part = EvenPart(count, n, c);
    for (std::size_t i = part.begin; i < part.end; ++i) {
      float acc = RandomValue(i, group[c]);
      for (std::size_t q = 1; q < n; ++q) acc = acc + RandomValue(i, group[(c + q) % n]);
      out[i] = acc;
    }
  }
  return out;
}

// What the tree must compute, per tree_allreduce.h: a node's value is
// (own + left subtree) + right subtree; tree A over group positions for
// i < (count+1)/2, tree B over the reversed positions for the rest.
float TreeSum(std::size_t i, const std::vector<int>& group, bool reversed, int position) {
  const int n = static_cast<int>(group.size());
  const TreeLinks links = HeapTreeLinks(position, n);
  const int group_position = reversed ? n - 1 - position : position;
  float acc = RandomValue(i, group[static_cast<std::size_t>(group_position)]);
  if (links.left >= 0) acc += TreeSum(i, group, reversed, links.left);
  if (links.right >= 0) acc += TreeSum(i, group, reversed, links.right);
  return acc;
}
std::vector<float> TreeReference(std::size_t count, const std::vector<int>& group) {
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = TreeSum(i, group, i >= (count + 1) / 2, 0);
  return out;
}

// Number of elements whose bits differ; prints the first few.
std::size_t BitMismatches(const std::vector<float>& got, const std::vector<float>& want) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) == 0) continue;
    if (bad++ < 5) std::printf("  element %zu: got %.9g, want %.9g\n", i, got[i], want[i]);
  }
  return bad;
}

std::int64_t SumOverRanks(std::int64_t value) {
  std::int64_t sum = 0;
  DTSIM_MPI_CHECK(MPI_Allreduce(&value, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
  return sum;
}

class CommTest : public testing::Test {
 protected:
  MpiCommunicator comm_;
  const int n_ = comm_.size();
  const int rank_ = comm_.rank();
  // Counts the brief asks for: empty, one element, fewer elements than
  // ranks, not a multiple of the ranks, and large (2 tree chunks of 1 MiB).
  const std::vector<std::size_t> counts_ = {0, 1, static_cast<std::size_t>(n_ - 1), 7,
                                            1000003};
};

class AllReduceTest : public CommTest,
                      public testing::WithParamInterface<AllReduceAlgorithm> {
 protected:
  // All-reduces ClosedFormValue over `group` (the caller's) and checks every
  // element against ClosedFormSum.
  void CheckClosedForm(const std::vector<int>& group) {
    for (std::size_t count : counts_) {
      std::vector<float> data(count);
      for (std::size_t i = 0; i < count; ++i) data[i] = ClosedFormValue(i, rank_);
      comm_.AllReduceSum(data.data(), count, GetParam(), group);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < count; ++i) bad += data[i] != ClosedFormSum(i, group);
      EXPECT_EQ(bad, 0u) << "count " << count << ", group of " << group.size();
    }
  }
};

TEST_P(AllReduceTest, SumsOverTheWorld) { CheckClosedForm(WorldGroup(n_)); }

TEST_P(AllReduceTest, SumsOverSubGroups) {
  CheckClosedForm(ParityGroup(rank_, n_));
  if (n_ >= 3) CheckClosedForm(WithoutTwoGroup(rank_, n_));
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AllReduceTest,
                         testing::Values(AllReduceAlgorithm::kRing, AllReduceAlgorithm::kTree,
                                         AllReduceAlgorithm::kMpi),
                         [](const testing::TestParamInfo<AllReduceAlgorithm>& param) {
                           return std::string(AllReduceAlgorithmName(param.param));
                         });

// Ring and tree run the summation order their headers describe, so their
// result is a known function of the inputs: the same bits on every rank and
// on every run.
TEST_F(CommTest, RingAndTreeAreBitwiseDeterministic) {
  for (const std::vector<int>& group : {WorldGroup(n_), ParityGroup(rank_, n_)}) {
    for (std::size_t count : {std::size_t{7}, std::size_t{1000003}}) {
      for (AllReduceAlgorithm algorithm : {AllReduceAlgorithm::kRing, AllReduceAlgorithm::kTree}) {
        const std::vector<float> want = algorithm == AllReduceAlgorithm::kRing
                                            ? RingReference(count, group)
                                            : TreeReference(count, group);
        for (int run = 0; run < 2; ++run) {
          std::vector<float> data(count);
          for (std::size_t i = 0; i < count; ++i) data[i] = RandomValue(i, rank_);
          comm_.AllReduceSum(data.data(), count, algorithm, group);
          EXPECT_EQ(BitMismatches(data, want), 0u)
              << AllReduceAlgorithmName(algorithm) << " run " << run << ", count " << count;
        }
      }
    }
  }
}

// Small chunks: many pipelined messages per tree, and chunks of one element.
TEST_F(CommTest, TreeWithSmallChunks) {
  const std::vector<int> world = WorldGroup(n_);
  for (std::size_t chunk_bytes : {sizeof(float), 3 * sizeof(float), std::size_t{4096}}) {
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{10001}}) {
      std::vector<float> data(count);
      for (std::size_t i = 0; i < count; ++i) data[i] = RandomValue(i, rank_);
      TreeAllReduceSum(comm_, data.data(), count, world, {.chunk_bytes = chunk_bytes});
      EXPECT_EQ(BitMismatches(data, TreeReference(count, world)), 0u)
          << "chunk " << chunk_bytes << " bytes, count " << count;
    }
  }
}

// Ring traffic. Per rank, the schedule sends every part but (p+1) mod N in
// the reduce-scatter and every part but (p+2) mod N in the all-gather:
//   2 x count - |part p+1| - |part p+2| elements,
// which is 2(N-1)/N x count within 2 elements (parts differ from count/N by
// less than one). Over all ranks, 2(N-1) x count elements exactly: N
// transfers of bytes/N in each of 2(N-1) steps, sim::RingAllReduce's
// schedule and so sim::AllReduceTotalBytes for kRing.
TEST_F(CommTest, RingBytesSentMatchTheSimulatorClosedForm) {
  const std::vector<int> world = WorldGroup(n_);
  for (std::size_t count : counts_) {
    std::vector<float> data(count, 1.0f);
    comm_.ResetStats();
    comm_.AllReduceSum(data.data(), count, AllReduceAlgorithm::kRing, world);
    const double bytes = static_cast<double>(count * sizeof(float));
    const std::int64_t sent = comm_.stats().bytes_sent;
    const std::size_t n = static_cast<std::size_t>(n_), p = static_cast<std::size_t>(rank_);
    const std::int64_t schedule =
        n == 1 ? 0
               : static_cast<std::int64_t>(sizeof(float) *
                                           (2 * count - EvenPart(count, n, (p + 1) % n).size() -
                                            EvenPart(count, n, (p + 2) % n).size()));
    EXPECT_EQ(sent, schedule) << "count " << count;
    EXPECT_NEAR(static_cast<double>(sent), 2.0 * (n_ - 1) / n_ * bytes, 2 * sizeof(float))
        << "count " << count;
    EXPECT_EQ(SumOverRanks(sent), static_cast<std::int64_t>(2 * (n_ - 1) * bytes))
        << "count " << count;
  }
}

// Tree traffic: each of the N-1 edges of each tree carries its half once up
// and once down, so ranks send 2(N-1) x count elements in all.
TEST_F(CommTest, TreeBytesSentOverRanks) {
  const std::vector<int> world = WorldGroup(n_);
  for (std::size_t count : counts_) {
    std::vector<float> data(count, 1.0f);
    comm_.ResetStats();
    comm_.AllReduceSum(data.data(), count, AllReduceAlgorithm::kTree, world);
    EXPECT_EQ(SumOverRanks(comm_.stats().bytes_sent),
              static_cast<std::int64_t>(2 * (n_ - 1) * count * sizeof(float)))
        << "count " << count;
  }
}

TEST_F(CommTest, StatsCountPointToPointAndTime) {
  // Every rank sends 3 floats to its successor and receives from its
  // predecessor (itself when N = 1).
  const int next = (rank_ + 1) % n_, prev = (rank_ + n_ - 1) % n_;
  const float out[3] = {static_cast<float>(rank_), 1.5f, -2.0f};
  float in[3] = {};
  comm_.ResetStats();
  SendRequest send = comm_.Isend(next, 5, out, 3);
  comm_.Recv(prev, 5, in, 3);
  send.Wait();
  EXPECT_TRUE(send.done());
  EXPECT_EQ(in[0], static_cast<float>(prev));
  EXPECT_EQ(in[1], 1.5f);
  EXPECT_EQ(in[2], -2.0f);
  EXPECT_EQ(comm_.stats().bytes_sent, 3 * static_cast<std::int64_t>(sizeof(float)));
  EXPECT_EQ(comm_.stats().messages_sent, 1);
  EXPECT_GT(comm_.stats().seconds, 0.0);
  comm_.Barrier();
}

// An asynchronous parameter server: rank 0 serves whichever worker's message
// comes first; it must hear from each of ranks 1..N-1 exactly once, each
// message carrying its sender's payload {r, 10 r}.
TEST_F(CommTest, RecvAnyHearsFromEverySender) {
  constexpr int kTag = 11;
  if (rank_ == 0) {
    std::set<int> heard;
    for (int k = 1; k < n_; ++k) {
      float payload[2] = {};
      const int source = comm_.RecvAny(kTag, payload, 2);
      EXPECT_TRUE(heard.insert(source).second) << "rank " << source << " heard twice";
      EXPECT_EQ(payload[0], static_cast<float>(source));
      EXPECT_EQ(payload[1], 10.0f * static_cast<float>(source));
    }
    std::set<int> senders;
    for (int r = 1; r < n_; ++r) senders.insert(r);
    EXPECT_EQ(heard, senders);
  } else {
    const float payload[2] = {static_cast<float>(rank_), 10.0f * static_cast<float>(rank_)};
    comm_.Send(0, kTag, payload, 2);
  }
}

// Root's buffer {i + 100 root} reaches every member; others start at -1.
TEST_F(CommTest, BroadcastFromEveryRoot) {
  for (const std::vector<int>& group : {WorldGroup(n_), ParityGroup(rank_, n_)}) {
    for (int root : group) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1000}}) {
        std::vector<float> data(count, -1.0f);
        if (rank_ == root)
          for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>(i + 100 * root);
        comm_.Broadcast(data.data(), count, root, group);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < count; ++i)
          bad += data[i] != static_cast<float>(i + 100 * root);
        EXPECT_EQ(bad, 0u) << "root " << root << ", count " << count;
      }
    }
  }
}

// Local checks: no communication happens, so every rank may fail alone.
TEST_F(CommTest, BrokenContractsThrowBeforeCommunicating) {
  float x = 0;
  EXPECT_THROW(comm_.AllReduceSum(&x, 1, AllReduceAlgorithm::kRing, {}), InternalError);
  if (n_ >= 2) {
    EXPECT_THROW(comm_.AllReduceSum(&x, 1, AllReduceAlgorithm::kTree, {1, 0}), InternalError);
    const int other = rank_ == 0 ? 1 : 0;
    EXPECT_THROW(comm_.AllReduceSum(&x, 1, AllReduceAlgorithm::kMpi, {other}), InternalError);
  }
  EXPECT_THROW(comm_.Send(n_, 0, &x, 1), InternalError);
  EXPECT_THROW(comm_.Send(0, -1, &x, 1), InternalError);
}

TEST(MpiCheck, FailingCallThrowsNamingCallFileAndLine) {
  float x = 0;
  try {
    // A negative count is an argument error MPI reports (MPI_ERR_COUNT).
    DTSIM_MPI_CHECK(MPI_Send(&x, -1, MPI_FLOAT, 0, 0, MPI_COMM_WORLD));
    ADD_FAILURE() << "MPI_Send with count -1 did not fail";
  } catch (const MpiError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("MPI_Send"), std::string::npos) << what;
    EXPECT_NE(what.find("comm_test.cc:"), std::string::npos) << what;
    EXPECT_NE(e.code(), MPI_SUCCESS);
  }
}

TEST(AllReduceAlgorithmNames, RoundTripAndRejectUnknown) {
  for (AllReduceAlgorithm a :
       {AllReduceAlgorithm::kRing, AllReduceAlgorithm::kTree, AllReduceAlgorithm::kMpi})
    EXPECT_EQ(ParseAllReduceAlgorithm(AllReduceAlgorithmName(a)), a);
  EXPECT_THROW(ParseAllReduceAlgorithm("hierarchical"), UserError);
}

}  // namespace
}  // namespace dtsim::exec
