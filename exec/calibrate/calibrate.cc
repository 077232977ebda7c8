#include "exec/calibrate/calibrate.h"

#include <algorithm>

#include "common/error.h"
#include "exec/calibrate/device_benchmarks.h"
#include "exec/calibrate/host_benchmarks.h"
#include "exec/calibrate/link_benchmarks.h"

namespace dtsim::exec {
namespace {

using config::ProfileMeasurement;

TimingOptions TimingFor(const CalibrateOptions& o) {
  TimingOptions t;
  t.warmup = 1;
  t.repeats = o.quick ? 3 : 5;
  return t;
}

// Conv2dArgs of a square convolution with "same"-style padding.
Conv2dArgs Conv(std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t k, int kernel,
                int stride, int pad) {
  Conv2dArgs a;
  a.n = n, a.c = c, a.h = a.w = hw, a.k = k;
  a.r = a.s = kernel;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.oh = a.ow = (hw + 2 * pad - kernel) / stride + 1;
  return a;
}

constexpr std::int64_t kMiB = 1024 * 1024;

}  // namespace

std::vector<ProfileMeasurement> MeasureDevice(Backend& backend, const CalibrateOptions& options,
                                              const CalibrationProgress& progress) {
  const TimingOptions timing = TimingFor(options);
  const bool quick = options.quick;
  // Square GEMMs from cache-resident to memory-streaming, and the two
  // shapes of a BERT-base dense layer's forward (tokens x out x in).
  std::vector<GemmShape> gemms = {{128, 128, 128}, {256, 256, 256}, {512, 512, 512}};
  if (!quick) {
    gemms.insert(gemms.end(), {{1024, 1024, 1024}, {2048, 2048, 2048}, {2048, 768, 768},
                               {2048, 3072, 768}});
  }
  // ResNet-50's stem, a 3x3 of conv2_x, a 1x1 of conv2_x, a 3x3 of conv3_x.
  std::vector<Conv2dArgs> convs;
  const std::int64_t n = quick ? 1 : 4;
  convs.push_back(Conv(n, 64, 56, 64, 3, 1, 1));
  convs.push_back(Conv(n, 3, 224, 64, 7, 2, 3));
  if (!quick) {
    convs.push_back(Conv(n, 256, 56, 64, 1, 1, 0));
    convs.push_back(Conv(n, 128, 28, 128, 3, 1, 1));
  }
  const std::vector<models::OpKind>& kinds = CalibratedOpKinds();
  // Rows of the dense layers' GEMMs, from a small batch of vectors to
  // transformer-sized batches of positions.
  const std::vector<std::int64_t> dense_rows =
      quick ? std::vector<std::int64_t>{8, 64} : std::vector<std::int64_t>{8, 32, 128, 512, 2048};
  // 3x3 convolutions from 1.2 to 231 MFLOP per sample forward: (channels,
  // side) with 16 to 64 channels on 16x16, then 64 channels on 32x32 and
  // 56x56 (the op measurement's shape).
  struct ConvSize {
    std::int64_t channels, side;
  };
  const std::vector<ConvSize> conv_sizes =
      quick ? std::vector<ConvSize>{{16, 16}, {64, 16}, {64, 56}}
            : std::vector<ConvSize>{{16, 16}, {32, 16}, {64, 16}, {64, 32}, {64, 56}};
  const bool pin = CanPinThreads();
  const int total = static_cast<int>(gemms.size() + convs.size() + 2 + 1 + kinds.size() +
                                     dense_rows.size() + conv_sizes.size() + (pin ? 1 : 0) +
                                     SyntheticDatasetKinds().size());

  std::vector<ProfileMeasurement> out;
  const auto add = [&](ProfileMeasurement m) {
    out.push_back(std::move(m));
    if (progress) progress(out.back(), static_cast<int>(out.size()), total);
  };
  for (const GemmShape& g : gemms) add(MeasureGemm(backend, g, timing));
  for (const Conv2dArgs& c : convs) add(MeasureConv2d(backend, c, timing));
  add(MeasureMemory(backend, StreamKernel::kCopy, 64 * kMiB, timing));
  add(MeasureMemory(backend, StreamKernel::kAxpy, 64 * kMiB, timing));
  add(MeasureLaunch(backend, quick ? 2000 : 10000, timing));
  for (models::OpKind kind : kinds) add(MeasureOpKind(backend, kind, quick, timing));
  for (std::int64_t rows : dense_rows) add(MeasureDenseRows(backend, rows, timing));
  for (const ConvSize& c : conv_sizes)
    add(MeasureConvSize(backend, c.channels, c.side, quick, timing));
  // 20 handoffs of a few ms each per timed run.
  if (pin) {
    if (auto handoff = MeasureSchedulerHandoff(quick ? 10 : 20, timing)) add(*handoff);
  }
  for (const std::string& kind : SyntheticDatasetKinds()) add(MeasureSyntheticDraw(kind, timing));
  return out;
}

std::vector<ProfileMeasurement> MeasureLink(Communicator& comm, const CalibrateOptions& options,
                                            const CalibrationProgress& progress) {
  DTSIM_CHECK(comm.size() >= 2, "a link needs two ranks");
  const TimingOptions timing = TimingFor(options);
  struct Size {
    std::int64_t bytes;
    int round_trips;  // per timed run: enough for the run to outlast clock noise
  };
  const std::vector<Size> sizes =
      options.quick ? std::vector<Size>{{4, 200}, {64 * 1024, 20}, {16 * kMiB, 1}}
                    : std::vector<Size>{{4, 1000}, {1024, 1000}, {64 * 1024, 100},
                                        {kMiB, 20}, {64 * kMiB, 2}};
  std::vector<ProfileMeasurement> out;
  for (const Size& s : sizes) {
    out.push_back(MeasurePingPong(comm, s.bytes, s.round_trips, timing));
    if (progress) {
      progress(out.back(), static_cast<int>(out.size()), static_cast<int>(sizes.size()));
    }
  }
  return out;
}

config::DeviceProfile BuildDeviceProfile(const std::string& device,
                                         const config::ProfileProvenance& provenance,
                                         int ranks) {
  config::DeviceProfile p;
  p.device = device;
  p.provenance = provenance;
  const ProfileMeasurement* launch = nullptr;
  const ProfileMeasurement* smallest = nullptr;
  const ProfileMeasurement* largest = nullptr;
  for (const ProfileMeasurement& m : provenance.measurements) {
    if (m.group == "gemm") p.peak_fp32_flop_per_s = std::max(p.peak_fp32_flop_per_s, m.flops / m.seconds);
    if (m.group == "memory") {
      p.memory_bw_bytes_per_s = std::max(p.memory_bw_bytes_per_s, m.bytes / m.seconds);
    }
    if (m.group == "launch") launch = &m;
    if (m.group == "ping_pong") {
      if (smallest == nullptr || m.bytes < smallest->bytes) smallest = &m;
      if (largest == nullptr || m.bytes > largest->bytes) largest = &m;
    }
  }
  if (p.peak_fp32_flop_per_s <= 0 || p.memory_bw_bytes_per_s <= 0 || launch == nullptr) {
    throw UserError("device profile: the measurements need a gemm, a memory and a launch entry");
  }
  p.kernel_launch_s = launch->seconds;
  for (const ProfileMeasurement& m : provenance.measurements) {
    if (m.group == "dense_rows" && m.flops > 0) {
      const std::int64_t rows = std::stoll(m.name.substr(m.name.find(' ') + 1));
      p.dense_efficiency_by_rows[rows] =
          std::min(1.0, m.flops / m.seconds / p.peak_fp32_flop_per_s);
      continue;
    }
    if (m.group == "conv_size" && m.flops > 0) {
      const std::int64_t flops = std::stoll(m.name.substr(m.name.find(' ') + 1));
      p.conv_efficiency_by_flops[flops] =
          std::min(1.0, m.flops / m.seconds / p.peak_fp32_flop_per_s);
      continue;
    }
    if (m.group == "scheduler") {
      p.scheduler_handoff_s = m.seconds;
      continue;
    }
    if (m.group == "input_draw") {
      p.input_draw_s_per_element[m.name] = m.seconds;
      continue;
    }
    if (m.group != "op" || m.flops <= 0) continue;
    for (models::OpKind kind : models::AllOpKinds()) {
      if (m.name == models::OpKindName(kind)) {
        p.compute_efficiency[kind] = std::min(1.0, m.flops / m.seconds / p.peak_fp32_flop_per_s);
      }
    }
  }
  if (smallest != nullptr) {
    config::ProfileLink link;
    link.latency_s = smallest->seconds;
    // One message size only: the latency is part of its time, not removable.
    const double transfer_s = largest->seconds - (largest == smallest ? 0.0 : link.latency_s);
    link.bw_bytes_per_s = largest->bytes / std::max(transfer_s, 0.5 * largest->seconds);
    link.ranks = ranks;
    p.link = link;
  }
  return p;
}

}  // namespace dtsim::exec
