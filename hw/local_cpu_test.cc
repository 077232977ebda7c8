#include "hw/local_cpu.h"

#include <gtest/gtest.h>

#include <string>

namespace dtsim::hw {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;  // bytes

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(LocalCpu, ThisMachineGivesPositiveNumbers) {
  DeviceSpec cpu = LocalCpuDevice();
  EXPECT_EQ(cpu.Problem(), "") << cpu.source;
  EXPECT_EQ(cpu.name, "local-cpu");
  EXPECT_EQ(cpu.kind, "cpu");
  EXPECT_GT(cpu.fp32_flop_per_s, 0);
  EXPECT_GT(cpu.memory_bytes, 0);
  EXPECT_GT(cpu.memory_bw_bytes_per_s, 0);
  EXPECT_TRUE(Contains(cpu.source, "ESTIMATE")) << cpu.source;
  // No tensor units: every precision runs at the fp32 rate.
  EXPECT_DOUBLE_EQ(cpu.PeakFlopRate(Precision::kBf16), cpu.fp32_flop_per_s);
}

// Two SMT siblings per core, AVX-512 with FMA, nominal 2.4 GHz:
//   cores = 4 logical / (4 siblings / 2 cores) = 2
//   flop/s = 2 cores x 2.4e9 Hz x (2 FMA units x 16 lanes x 2) = 307.2e9
//   memory bandwidth = 2 cores x 10 GB/s = 20 GB/s (under the 200 GB/s cap)
TEST(LocalCpu, Avx512WithSmt) {
  std::string proc =
      "model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz\n"
      "cpu MHz\t\t: 1000.000\n"
      "siblings\t: 4\n"
      "cpu cores\t: 2\n"
      "flags\t\t: fpu sse sse2 avx fma avx2 avx512f avx512dq\n";
  CpuProbe probe;
  probe.cpuinfo = "processor\t: 0\n" + proc + "\nprocessor\t: 1\n" + proc + "\nprocessor\t: 2\n" +
                  proc + "\nprocessor\t: 3\n" + proc;
  probe.meminfo = "MemTotal:       16777216 kB\nMemFree:  1 kB\n";
  probe.logical_cpus = 4;
  DeviceSpec cpu = CpuDeviceFromProbe(probe);
  EXPECT_DOUBLE_EQ(cpu.fp32_flop_per_s, 307.2e9);
  EXPECT_DOUBLE_EQ(cpu.memory_bytes, 16 * kGiB);
  EXPECT_DOUBLE_EQ(cpu.memory_bw_bytes_per_s, 20e9);
  EXPECT_TRUE(Contains(cpu.source, "Gold 6148")) << cpu.source;
  EXPECT_TRUE(Contains(cpu.source, "avx512f")) << cpu.source;
  EXPECT_FALSE(Contains(cpu.source, "defaults used")) << cpu.source;
}

// No "@ GHz" in the model name: the highest "cpu MHz" counts.
//   flop/s = 1 core x 3.5e9 x (2 x 8 lanes x 2) = 112e9
TEST(LocalCpu, Avx2UsesHighestCpuMhz) {
  CpuProbe probe;
  probe.cpuinfo =
      "processor : 0\nmodel name : AMD EPYC 7B12\ncpu MHz : 3000.0\n"
      "flags : sse avx avx2 fma\n\nprocessor : 1\ncpu MHz : 3500.0\n";
  probe.meminfo = "MemTotal: 1024 kB\n";
  probe.logical_cpus = 1;
  DeviceSpec cpu = CpuDeviceFromProbe(probe);
  EXPECT_DOUBLE_EQ(cpu.fp32_flop_per_s, 112e9);
  EXPECT_DOUBLE_EQ(cpu.memory_bytes, 1024 * 1024);
}

// Arm NEON ("asimd" implies FMA): 4 lanes. With no logical CPU count the
// "processor" entries count: 3 x 2e9 (default clock) x (2 x 4 x 2) = 96e9.
TEST(LocalCpu, ArmCountsProcessorsAndDefaultsTheClock) {
  CpuProbe probe;
  probe.cpuinfo =
      "processor : 0\nFeatures : fp asimd evtstrm\n\nprocessor : 1\n\nprocessor : 2\n";
  probe.meminfo = "MemTotal: 2048 kB\n";
  DeviceSpec cpu = CpuDeviceFromProbe(probe);
  EXPECT_DOUBLE_EQ(cpu.fp32_flop_per_s, 96e9);
  EXPECT_TRUE(Contains(cpu.source, "2 GHz clock")) << cpu.source;
}

// Nothing readable: 1 core x 2e9 x (2 units x 4 lanes x 1, no FMA) = 16e9,
// 8 GiB, 10 GB/s; the source says so.
TEST(LocalCpu, MissingFilesFallBackToStatedDefaults) {
  DeviceSpec cpu = CpuDeviceFromProbe(CpuProbe{});
  EXPECT_EQ(cpu.Problem(), "");
  EXPECT_DOUBLE_EQ(cpu.fp32_flop_per_s, 16e9);
  EXPECT_DOUBLE_EQ(cpu.memory_bytes, 8 * kGiB);
  EXPECT_DOUBLE_EQ(cpu.memory_bw_bytes_per_s, 10e9);
  EXPECT_TRUE(Contains(cpu.source, "/proc/cpuinfo unreadable")) << cpu.source;
  EXPECT_TRUE(Contains(cpu.source, "/proc/meminfo unreadable")) << cpu.source;
  EXPECT_TRUE(Contains(cpu.source, "defaults used")) << cpu.source;
}

TEST(LocalCpu, GarbageInputDoesNotCrash) {
  CpuProbe probe;
  probe.cpuinfo = ":::\ncpu MHz : fast\nsiblings : -3\ncpu cores : x\nmodel name : @ GHz\n";
  probe.meminfo = "MemTotal: lots\n";
  probe.logical_cpus = 256;
  DeviceSpec cpu = CpuDeviceFromProbe(probe);
  EXPECT_EQ(cpu.Problem(), "");
  // 256 cores x 10 GB/s is capped at 200 GB/s.
  EXPECT_DOUBLE_EQ(cpu.memory_bw_bytes_per_s, 200e9);
}

}  // namespace
}  // namespace dtsim::hw
