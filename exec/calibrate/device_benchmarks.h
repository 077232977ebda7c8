// Benchmarks of one device through the Backend interface: GEMM and
// convolution rates by shape, memory bandwidth, the per-call overhead, and
// the achieved rate of each op kind. Each returns a measurement in the
// device profile's vocabulary (config/device_profile.h): the work of one run
// (FLOPs or bytes) and the median seconds of one run.
//
// FLOPs are counted as models/graph_builder.cc counts them (a multiply-add
// is 2 FLOPs; the op kinds' counts come from GraphBuilder itself), so that
// the rates compare with the simulator's cost model.
#pragma once

#include <cstdint>
#include <vector>

#include "config/device_profile.h"
#include "exec/backend.h"
#include "exec/calibrate/timing.h"
#include "models/op.h"

namespace dtsim::exec {

// C (m x n) = A (m x k) * B (k x n): 2 m n k FLOPs.
struct GemmShape {
  std::int64_t m = 1, n = 1, k = 1;
};

// GEMM rate: one Gemm(false, false, m, n, k) per run. Group "gemm", name
// "m<m> n<n> k<k>". REQUIRES: every size >= 1.
config::ProfileMeasurement MeasureGemm(Backend& backend, const GemmShape& shape,
                                       const TimingOptions& timing);

// Convolution rate: forward (with bias) then backward (dx, dw, dbias) per
// run, the FLOPs GraphBuilder::Conv2d counts for the three. Group "conv2d",
// name "n<n> c<c> <h>x<w> k<k> <r>x<s>/<stride>". REQUIRES: `args` describe a
// valid convolution, oh and ow included.
config::ProfileMeasurement MeasureConv2d(Backend& backend, const Conv2dArgs& args,
                                         const TimingOptions& timing);

enum class StreamKernel {
  kCopy,  // y = x: reads and writes one buffer each (2 x bytes)
  kAxpy,  // y += a x: reads two buffers, writes one (3 x bytes)
};

// Memory bandwidth of a streaming kernel over buffers of `buffer_bytes`
// each (choose them well above the last-level cache, e.g. 64 MiB). Group
// "memory", name "copy 64MiB" or "axpy 64MiB"; `bytes` is the traffic above.
// REQUIRES: buffer_bytes >= 4.
config::ProfileMeasurement MeasureMemory(Backend& backend, StreamKernel kernel,
                                         std::int64_t buffer_bytes, const TimingOptions& timing);

// Per-call overhead: a ReLU of one element, `calls` times per run; seconds
// is per call (the dispatch cost a kernel launch stands for). Group
// "launch", name "relu 1 element". REQUIRES: calls >= 1.
config::ProfileMeasurement MeasureLaunch(Backend& backend, int calls,
                                         const TimingOptions& timing);

// The op kinds MeasureOpKind knows: every kind with FLOPs (all but input,
// concat and reshape), in AllOpKinds order.
const std::vector<models::OpKind>& CalibratedOpKinds();

// One forward and the backward passes that have FLOPs (input and weight
// gradients) of `kind` at a representative shape (a ResNet or BERT layer;
// `quick` divides the batch by 4), FLOPs from GraphBuilder. Group "op",
// name the kind's OpKindName (the profile's compute_efficiency key).
// REQUIRES: kind is in CalibratedOpKinds() (DTSIM_CHECK).
config::ProfileMeasurement MeasureOpKind(Backend& backend, models::OpKind kind, bool quick,
                                         const TimingOptions& timing);

// A 3x3 convolution (stride 1, same padding, `channels` in and out, side x
// side), forward and backward, on 8 samples (2 when `quick`): small ones run
// below the large ones' rate. Group "conv_size", name "flops <forward FLOPs
// per sample>" (the profile's conv_efficiency_by_flops).
config::ProfileMeasurement MeasureConvSize(Backend& backend, std::int64_t channels,
                                           std::int64_t side, bool quick,
                                           const TimingOptions& timing);

// Dense 1024 -> 1024 forward and backward on `rows` rows (batch x positions),
// each pass (forward, data gradient, weight gradient) timed with cold caches
// (128 MiB streamed before each run, as the rest of a training step evicts
// a layer's weights between two uses); seconds = the sum of the passes'
// medians. Small-row GEMMs stream the weights and run below the large-GEMM
// rate.
// Group "dense_rows", name "rows <rows>" (the profile's
// dense_efficiency_by_rows).
config::ProfileMeasurement MeasureDenseRows(Backend& backend, std::int64_t rows,
                                            const TimingOptions& timing);

}  // namespace dtsim::exec
