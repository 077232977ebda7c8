// GEMM, convolution, memory and per-call benchmarks (device_benchmarks.h);
// the op kinds are in op_benchmarks.cc.
#include <cstdio>
#include <string>

#include "common/error.h"
#include "exec/calibrate/device_benchmarks.h"
#include "exec/calibrate/device_buffers.h"
#include "models/graph_builder.h"

namespace dtsim::exec {
namespace {

// printf-style formatting of a measurement's name (GCC 12 warns falsely on
// long chains of std::string +).
template <typename... Args>
std::string Format(const char* format, Args... args) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

}  // namespace

config::ProfileMeasurement MeasureGemm(Backend& backend, const GemmShape& shape,
                                       const TimingOptions& timing) {
  DTSIM_CHECK(shape.m >= 1 && shape.n >= 1 && shape.k >= 1, "empty GEMM");
  DeviceBuffers buffers(backend);
  const float* a = buffers.Random(shape.m * shape.k, 1);  // (m, k)
  const float* b = buffers.Random(shape.k * shape.n, 2);  // (k, n)
  float* c = buffers.Filled(shape.m * shape.n, 0.0f);     // (m, n)
  const Timing t = TimeMedian(
      [&] {
        backend.Gemm(false, false, shape.m, shape.n, shape.k, 1.0f, a, b, 0.0f, c);
        backend.Synchronize();
      },
      timing);
  config::ProfileMeasurement m;
  m.group = "gemm";
  m.name = Format("m%lld n%lld k%lld", static_cast<long long>(shape.m),
                  static_cast<long long>(shape.n), static_cast<long long>(shape.k));
  m.flops = 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) *
            static_cast<double>(shape.k);
  m.seconds = t.median_s;
  m.repeats = t.repeats;
  return m;
}

config::ProfileMeasurement MeasureConv2d(Backend& backend, const Conv2dArgs& a,
                                         const TimingOptions& timing) {
  // The FLOPs of forward, input gradient and weight gradient, per sample,
  // as the simulator counts them.
  models::GraphBuilder builder("calibrate");
  const models::Tensor x = builder.Input("x", {a.c, a.h, a.w});
  models::ConvSpec spec;
  spec.out_channels = a.k;
  spec.kernel_h = a.r;
  spec.kernel_w = a.s;
  spec.stride_h = a.stride_h;
  spec.stride_w = a.stride_w;
  spec.pad_h = a.pad_h;
  spec.pad_w = a.pad_w;
  spec.groups = a.groups;
  spec.bias = true;
  const models::Tensor y = builder.Conv2d("conv", x, spec);
  const models::Op& op = builder.graph().op(y.op);
  DTSIM_CHECK(op.output_shape == models::Shape({a.k, a.oh, a.ow}), "conv args: wrong oh/ow");

  DeviceBuffers buffers(backend);
  const std::int64_t x_count = a.n * a.c * a.h * a.w;
  const std::int64_t w_count = a.k * (a.c / a.groups) * a.r * a.s;
  const std::int64_t y_count = a.n * a.k * a.oh * a.ow;
  const float* xs = buffers.Random(x_count, 1);
  const float* ws = buffers.Random(w_count, 2);
  const float* bias = buffers.Random(a.k, 3);
  float* ys = buffers.Filled(y_count, 0.0f);
  const float* dy = buffers.Random(y_count, 4);
  float* dx = buffers.Filled(x_count, 0.0f);
  float* dw = buffers.Filled(w_count, 0.0f);
  float* db = buffers.Filled(a.k, 0.0f);
  const Timing t = TimeMedian(
      [&] {
        backend.Conv2dForward(a, xs, ws, bias, ys);
        backend.Conv2dBackward(a, xs, ws, dy, dx, dw, db);
        backend.Synchronize();
      },
      timing);
  config::ProfileMeasurement m;
  m.group = "conv2d";
  m.name = Format("n%lld c%lld %lldx%lld k%lld %dx%d/%d", static_cast<long long>(a.n),
                  static_cast<long long>(a.c), static_cast<long long>(a.h),
                  static_cast<long long>(a.w), static_cast<long long>(a.k), a.r, a.s,
                  a.stride_h);
  m.flops = static_cast<double>(a.n) * (op.fwd_flops + op.bwd_input_flops + op.bwd_weight_flops);
  m.seconds = t.median_s;
  m.repeats = t.repeats;
  return m;
}

config::ProfileMeasurement MeasureMemory(Backend& backend, StreamKernel kernel,
                                         std::int64_t buffer_bytes, const TimingOptions& timing) {
  DTSIM_CHECK(buffer_bytes >= 4, "buffer too small");
  const std::int64_t count = buffer_bytes / 4;
  DeviceBuffers buffers(backend);
  const float* x = buffers.Filled(count, 1.0f);
  float* y = buffers.Filled(count, 0.0f);
  const bool copy = kernel == StreamKernel::kCopy;
  const Timing t = TimeMedian(
      [&] {
        if (copy) {
          backend.Copy(y, x, count);
        } else {
          backend.Axpy(count, 0.5f, x, y);
        }
        backend.Synchronize();
      },
      timing);
  config::ProfileMeasurement m;
  m.group = "memory";
  const std::int64_t mib = buffer_bytes / (1024 * 1024);
  m.name = mib > 0 ? Format("%s %lldMiB", copy ? "copy" : "axpy", static_cast<long long>(mib))
                   : Format("%s %lldB", copy ? "copy" : "axpy",
                            static_cast<long long>(buffer_bytes));
  m.bytes = static_cast<double>(count) * 4.0 * (copy ? 2.0 : 3.0);
  m.seconds = t.median_s;
  m.repeats = t.repeats;
  return m;
}

config::ProfileMeasurement MeasureLaunch(Backend& backend, int calls,
                                         const TimingOptions& timing) {
  DTSIM_CHECK(calls >= 1, "calls must be >= 1");
  DeviceBuffers buffers(backend);
  const float* x = buffers.Filled(1, 1.0f);
  float* y = buffers.Filled(1, 0.0f);
  const Timing t = TimeMedian(
      [&] {
        for (int i = 0; i < calls; ++i) backend.ReluForward(1, x, y);
        backend.Synchronize();
      },
      timing);
  config::ProfileMeasurement m;
  m.group = "launch";
  m.name = "relu 1 element";
  m.seconds = t.median_s / calls;
  m.repeats = t.repeats;
  return m;
}

}  // namespace dtsim::exec
