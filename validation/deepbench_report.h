// The files of `dtsim validate deepbench`: every kernel's prediction (CSV),
// the errors per GPU, precision and kernel for the shipped constants,
// leave-one-GPU-out constants and the roofline baseline (JSON and
// Markdown), and predicted against measured time (SVG). The same results
// give the same bytes.
#pragma once

#include <string>
#include <vector>

#include "validation/accuracy.h"
#include "validation/deepbench.h"

namespace dtsim::validation {

struct DeepbenchResult {
  const DeepbenchMeasurement* measurement = nullptr;
  DeepbenchPrediction shipped;  // the shipped constants (GpuKernelParams{})
  double held_out_s = 0;        // constants fitted without this GPU
  double roofline_s = 0;        // the roofline baseline
};

struct DeepbenchSlice {
  std::string gpu;        // "all" for every GPU
  std::string precision;  // "all" for every precision
  std::string kernel;     // DeepbenchKernelName or Group, "gemm+conv", "rnn lstm", ...
  ErrorSummary shipped, held_out, roofline;
};

// Slices: per GPU x precision x kernel group (gemm; conv, rnn = their
// passes together), then per GPU x precision x conv or rnn pass, then per
// group over all GPUs and GEMMs with convolutions together ("gemm+conv"),
// then per conv or rnn pass over all GPUs, then recurrent layers per cell
// ("rnn lstm") and per pass and cell ("rnn_fwd lstm"), in that order; rows
// in data order inside.
std::vector<DeepbenchSlice> SummarizeDeepbench(const std::vector<DeepbenchResult>& results);

std::string DeepbenchPredictionsCsv(const std::vector<DeepbenchResult>& results);
// `fitted` is ParamsAsText of the shipped constants and of each fold.
std::string DeepbenchSummaryMarkdown(const std::vector<DeepbenchSlice>& slices,
                                     const std::vector<DeepbenchResult>& results,
                                     const std::string& fitted);
std::string DeepbenchSummaryJson(const std::vector<DeepbenchSlice>& slices,
                                 const std::vector<DeepbenchResult>& results);
// Predicted (shipped constants) against measured time, log-log, one colour
// per GPU, the line y = x.
std::string DeepbenchScatterSvg(const std::vector<DeepbenchResult>& results);

}  // namespace dtsim::validation
