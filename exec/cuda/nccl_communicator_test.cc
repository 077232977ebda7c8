// NcclCommunicator with a world of one rank: collectives must leave the data
// as it is. Skips without a GPU. (Multi-rank runs are exercised by the MPI
// launcher on a real cluster.)
#include "exec/cuda/nccl_communicator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dtsim::exec {
namespace {

TEST(NcclCommunicator, WorldOfOneAllReduceKeepsData) {
  std::string why;
  if (CudaBackend::VisibleDevices(&why) == 0) GTEST_SKIP() << why;
  CudaBackend backend(0);
  NcclCommunicator comm(NcclCommunicator::NewUniqueId(), /*world_size=*/1, /*rank=*/0, backend);
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.world_size(), 1);
  std::vector<float> host(1000);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = 0.5f * static_cast<float>(i) - 7.0f;
  float* buffer = backend.Allocate(1000);
  backend.Upload(buffer, host.data(), 1000);
  comm.AllReduceSum(buffer, 1000);
  std::vector<float> out(1000);
  backend.Download(out.data(), buffer, 1000);
  EXPECT_EQ(out, host);
  backend.Free(buffer);
  comm.Destroy();
}

TEST(NcclCommunicator, RejectsRankOutsideWorld) {
  std::string why;
  if (CudaBackend::VisibleDevices(&why) == 0) GTEST_SKIP() << why;
  CudaBackend backend(0);
  EXPECT_THROW(NcclCommunicator(NcclCommunicator::NewUniqueId(), 2, 2, backend),
               std::invalid_argument);
}

}  // namespace
}  // namespace dtsim::exec
