#include "exec/local_devices.h"

#include <gtest/gtest.h>

namespace dtsim::exec {
namespace {

TEST(LocalDevices, CpuComesFirst) {
  auto devices = LocalDevices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices.front().kind, "cpu");
  EXPECT_GT(devices.front().fp32_flop_per_s, 0);
}

TEST(LocalDevices, GpusReportPositiveNumbers) {
  std::string why;
  auto gpus = LocalGpus(&why);
  if (gpus.empty()) GTEST_SKIP() << "no GPU: " << why;
  for (const auto& g : gpus) {
    EXPECT_EQ(g.kind, "gpu");
    EXPECT_GT(g.fp32_flop_per_s, 1e12) << g.name;  // every sm_75+ GPU exceeds 1 TFLOP/s fp32
    EXPECT_GT(g.memory_bytes, 1e9) << g.name;
    EXPECT_GT(g.memory_bw_bytes_per_s, 1e11) << g.name;
  }
}

}  // namespace
}  // namespace dtsim::exec
