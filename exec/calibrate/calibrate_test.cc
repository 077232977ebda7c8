// Calibration on the CPU backend: timing, the work each benchmark counts,
// and how measurements become a device profile.
#include "exec/calibrate/calibrate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "exec/calibrate/device_benchmarks.h"
#include "exec/calibrate/host_benchmarks.h"
#include "exec/calibrate/timing.h"
#include "exec/kernels/cpu_backend.h"

namespace dtsim::exec {
namespace {

using config::ProfileMeasurement;
using models::OpKind;

TEST(CalibrateTest, TimeMedianRunsWarmupThenRepeatsAndIgnoresAnOutlier) {
  // Runs 0 (warm-up) and 2 sleep 200 ms, the others 1 ms: the timed runs
  // are [1, 200, 1] ms, whose median is 1 ms (plus the sleep's overshoot).
  int calls = 0;
  const Timing t = TimeMedian(
      [&] {
        const int ms = calls == 0 || calls == 2 ? 200 : 1;
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      },
      TimingOptions{.warmup = 1, .repeats = 3});
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(t.repeats, 3);
  EXPECT_GE(t.median_s, 1e-3);
  EXPECT_LT(t.median_s, 0.1);
}

TEST(CalibrateTest, BeforeEachRunsBeforeEveryRunAndIsNotTimed) {
  // before_each sleeps 200 ms, each run 1 ms: called 1 + 3 times, each just
  // before a run, and the median stays near 1 ms.
  std::vector<char> order;
  TimingOptions options{.warmup = 1, .repeats = 3};
  options.before_each = [&] {
    order.push_back('b');
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  };
  const Timing t = TimeMedian(
      [&] {
        order.push_back('r');
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      options);
  EXPECT_EQ(std::string(order.begin(), order.end()), "brbrbrbr");
  EXPECT_LT(t.median_s, 0.1);
}

TEST(CalibrateTest, GemmCountsTwoFlopsPerMultiplyAdd) {
  CpuBackend cpu;
  const ProfileMeasurement m = MeasureGemm(cpu, {64, 32, 16}, {.warmup = 0, .repeats = 1});
  EXPECT_EQ(m.group, "gemm");
  EXPECT_EQ(m.name, "m64 n32 k16");
  EXPECT_DOUBLE_EQ(m.flops, 2.0 * 64 * 32 * 16);  // 2 m n k
  EXPECT_GT(m.seconds, 0);
}

TEST(CalibrateTest, ConvCountsForwardAndBothGradients) {
  CpuBackend cpu;
  Conv2dArgs a;
  a.n = 2, a.c = 3, a.h = a.w = 8, a.k = 4, a.r = a.s = 3, a.pad_h = a.pad_w = 1;
  a.oh = a.ow = 8;
  const ProfileMeasurement m = MeasureConv2d(cpu, a, {.warmup = 0, .repeats = 1});
  // Per sample: MACs = K OH OW C R S = 4*8*8*3*3*3 = 6912, bias adds = K OH OW
  // = 256; fwd = 2 MACs + 256, bwd_input = 2 MACs, bwd_weight = 2 MACs + 256
  // (graph_builder.cc), so 6 MACs + 512 = 41984 per sample, x 2 samples.
  EXPECT_DOUBLE_EQ(m.flops, 2 * 41984.0);
}

TEST(CalibrateTest, MemoryCountsReadsAndWrites) {
  CpuBackend cpu;
  // Copy reads one 1 MiB buffer and writes another: 2 MiB; axpy reads two
  // and writes one: 3 MiB.
  const ProfileMeasurement copy =
      MeasureMemory(cpu, StreamKernel::kCopy, 1 << 20, {.warmup = 0, .repeats = 1});
  EXPECT_EQ(copy.name, "copy 1MiB");
  EXPECT_DOUBLE_EQ(copy.bytes, 2.0 * (1 << 20));
  const ProfileMeasurement axpy =
      MeasureMemory(cpu, StreamKernel::kAxpy, 1 << 20, {.warmup = 0, .repeats = 1});
  EXPECT_DOUBLE_EQ(axpy.bytes, 3.0 * (1 << 20));
}

TEST(CalibrateTest, LaunchIsPerCall) {
  CpuBackend cpu;
  const ProfileMeasurement m = MeasureLaunch(cpu, 100, {.warmup = 0, .repeats = 1});
  EXPECT_EQ(m.group, "launch");
  EXPECT_GT(m.seconds, 0);
  EXPECT_LT(m.seconds, 1e-3);  // a one-element ReLU is far below a millisecond
}

TEST(CalibrateTest, EveryOpKindRunsWithGraphBuilderFlops) {
  CpuBackend cpu;
  for (OpKind kind : CalibratedOpKinds()) {
    const ProfileMeasurement m = MeasureOpKind(cpu, kind, true, {.warmup = 0, .repeats = 1});
    EXPECT_EQ(m.name, models::OpKindName(kind));
    EXPECT_GT(m.flops, 0) << m.name;
    EXPECT_GT(m.seconds, 0) << m.name;
    EXPECT_FALSE(m.shape.empty()) << m.name;
    if (kind == OpKind::kDense) {
      // Quick: N = 64 rows of 1024 -> 1024 with bias. Per row, MACs = 1024^2;
      // fwd = 2 MACs + 1024, bwd_input = 2 MACs, bwd_weight = 2 MACs + 1024.
      EXPECT_DOUBLE_EQ(m.flops, 64 * (6.0 * 1024 * 1024 + 2 * 1024));
    }
  }
}

TEST(CalibrateTest, ProfileFromMeasurements) {
  config::ProfileProvenance v;
  v.date = "d", v.host = "h", v.dtsim_version = "0.1.0", v.backend = "cpu";
  v.measurements = {
      {"gemm", "a", "", 2e9, 0, 0.1, 5},         // 20 GFLOP/s
      {"gemm", "b", "", 4e9, 0, 0.1, 5},         // 40 GFLOP/s: the peak
      {"memory", "copy", "", 0, 1e9, 0.2, 5},    // 5 GB/s
      {"memory", "axpy", "", 0, 1.5e9, 0.2, 5},  // 7.5 GB/s: the bandwidth
      {"launch", "relu", "", 0, 0, 2e-7, 5},
      {"op", "dense", "s", 3e9, 0, 0.1, 5},      // 30 GFLOP/s = 0.75 of 40
      {"op", "matmul", "s", 5e9, 0, 0.1, 5},     // 50 GFLOP/s > peak: 1
      {"conv_size", "flops 1179648", "n8", 1e9, 0, 0.1, 5},  // 10 GFLOP/s = 0.25
      {"scheduler", "handoff", "", 0, 0, 1.5e-3, 5},
      {"input_draw", "teacher", "", 0, 65536, 3e-8, 5},
      {"ping_pong", "4B", "", 0, 4, 2e-6, 5},
      {"ping_pong", "64MiB", "", 0, 64.0 * (1 << 20), 0.010002, 5},
  };
  const config::DeviceProfile p = BuildDeviceProfile("cpu (test)", v, 2);
  EXPECT_DOUBLE_EQ(p.peak_fp32_flop_per_s, 40e9);
  EXPECT_DOUBLE_EQ(p.memory_bw_bytes_per_s, 7.5e9);
  EXPECT_DOUBLE_EQ(p.kernel_launch_s, 2e-7);
  EXPECT_DOUBLE_EQ(p.compute_efficiency.at(OpKind::kDense), 0.75);
  EXPECT_DOUBLE_EQ(p.compute_efficiency.at(OpKind::kMatMul), 1.0);
  EXPECT_EQ(p.compute_efficiency.count(OpKind::kConv2d), 0u);
  EXPECT_EQ(p.conv_efficiency_by_flops, (std::map<std::int64_t, double>{{1179648, 0.25}}));
  ASSERT_TRUE(p.link.has_value());
  // latency = the 4-byte one-way time; bandwidth = 64 MiB / (10.002 ms - 2 us)
  // = 67108864 / 0.01 = 6.7108864 GB/s.
  EXPECT_DOUBLE_EQ(p.link->latency_s, 2e-6);
  EXPECT_NEAR(p.link->bw_bytes_per_s, 6.7108864e9, 1e-6 * 6.7108864e9);
  EXPECT_EQ(p.link->ranks, 2);
  EXPECT_DOUBLE_EQ(p.scheduler_handoff_s, 1.5e-3);  // the scheduler measurement, as is
  EXPECT_EQ(p.input_draw_s_per_element, (std::map<std::string, double>{{"teacher", 3e-8}}));
  EXPECT_EQ(config::DeviceProfileProblem(p), "");
}

TEST(CalibrateTest, ProfileNeedsGemmMemoryAndLaunch) {
  config::ProfileProvenance v;
  v.measurements = {{"gemm", "a", "", 2e9, 0, 0.1, 5}};
  EXPECT_THROW(BuildDeviceProfile("cpu", v, 1), UserError);
}

TEST(CalibrateTest, QuickDeviceMeasurementIsAValidProfile) {
  CpuBackend cpu;
  int calls = 0, last_total = 0;
  config::ProfileProvenance v;
  v.date = "d", v.host = "h", v.dtsim_version = "0.1.0", v.backend = cpu.Name();
  v.quick = true;
  v.measurements = MeasureDevice(cpu, {.quick = true},
                                 [&](const ProfileMeasurement&, int index, int total) {
                                   EXPECT_EQ(index, ++calls);
                                   last_total = total;
                                 });
  EXPECT_EQ(calls, last_total);
  EXPECT_EQ(static_cast<int>(v.measurements.size()), calls);
  const config::DeviceProfile p = BuildDeviceProfile("cpu", v, 1);
  EXPECT_EQ(config::DeviceProfileProblem(p), "");
  EXPECT_FALSE(p.link.has_value());
  // Busy threads sharing a core hand over once per scheduler slice: well
  // above a microsecond (Linux slices are 0.75 ms and more) wherever they
  // can be pinned.
  if (CanPinThreads()) {
    EXPECT_GT(p.scheduler_handoff_s, 1e-5);
  }
  EXPECT_EQ(p.compute_efficiency.size(), CalibratedOpKinds().size());
  // Every synthetic dataset's draw, at a plausible cost per element: above
  // a nanosecond (a counter-based random draw each) and below 10 us.
  ASSERT_EQ(p.input_draw_s_per_element.size(), SyntheticDatasetKinds().size());
  for (const auto& [kind, seconds] : p.input_draw_s_per_element) {
    EXPECT_GT(seconds, 1e-10) << kind;
    EXPECT_LT(seconds, 1e-5) << kind;
  }
  // 3x3 convolutions at 16 channels on 16x16 (2 x 16 x 16 x 9 x 256 =
  // 1,179,648 forward FLOPs per sample) up to 64 on 56x56 (231,211,008).
  ASSERT_EQ(p.conv_efficiency_by_flops.size(), 3u);
  EXPECT_EQ(p.conv_efficiency_by_flops.begin()->first, 1179648);
  EXPECT_EQ(p.conv_efficiency_by_flops.rbegin()->first, 231211008);
}

}  // namespace
}  // namespace dtsim::exec
