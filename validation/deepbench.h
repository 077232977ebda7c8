// Baidu DeepBench's measured GEMM, convolution and recurrent-layer times
// (../shared/validation/deepbench/, README.md there) and their prediction
// by the kernel-level GPU model (sim/cost/gpu_kernel_model.h, and for recurrent
// layers the kernels of sim/cost/rnn_kernels.h, which the simulator prices too).
//
// gemm.csv: gpu, precision, source_app, m, n, k, a_transpose, b_transpose,
//   time_ms, tflops. conv.csv: gpu, precision, source_app, w, h, c, n, k, s,
//   r, pad_w, pad_h, stride_w, stride_h, p, q, fwd_ms, bwd_input_ms,
//   bwd_params_ms, fwd_algorithm. Columns are found by header name. Each
//   timed cell becomes one measured kernel: a GEMM, or a convolution's
//   forward, backward-data (wrt inputs) or backward-filter (wrt parameters)
//   pass; empty cells are skipped. rnn.csv: gpu, precision, cell, hidden, n,
//   timesteps, fwd_ms, bwd_input_ms, bwd_params_ms, bwd_ms: a recurrent
//   layer's forward, backward-data and backward-weights times (see
//   ParseDeepbenchRnn).
#pragma once

#include <string>
#include <vector>

#include "hw/catalog.h"
#include "sim/cost/gpu_kernel_model.h"
#include "sim/cost/rnn_kernels.h"

namespace dtsim::validation {

enum class DeepbenchKernel {
  kGemm,
  kConvForward,
  kConvBackwardData,
  kConvBackwardFilter,
  kRnnForward,
  kRnnBackwardData,
  kRnnBackwardWeights,
};
// "gemm", "conv_fwd", "conv_bwd_data", "conv_bwd_filter", "rnn_fwd",
// "rnn_bwd_data", "rnn_bwd_weights"
const char* DeepbenchKernelName(DeepbenchKernel kind);
// The group of a kind: "gemm", "conv" or "rnn".
const char* DeepbenchKernelGroup(DeepbenchKernel kind);

struct DeepbenchMeasurement {
  std::string gpu;        // the sheet's name, e.g. "V100"
  std::string precision;  // "fp32", "fp16-mixed", "fp16-pseudo"
  std::string file;       // "gemm.csv"
  int line = 0;           // 1-based, header = 1
  DeepbenchKernel kind = DeepbenchKernel::kGemm;
  // The problem as DeepBench ran it, with its padding applied (see
  // DeepbenchProblems in deepbench.cc): GEMMs in fp16 have the dimensions
  // cuBLAS's tensor-core conditions need rounded up to multiples of 8;
  // convolutions in fp16-mixed have their input channels rounded up.
  sim::GemmProblem gemm;  // kGemm
  sim::ConvProblem conv;  // conv kinds
  sim::RnnProblem rnn;    // rnn kinds: skip input, I = H (rnn_bench.cu)
  double measured_s = 0;
  std::string sheet_algorithm;  // conv: the forward algorithm cuDNN picked

  std::string Where() const;  // "conv.csv:17 bwd_data"
  // "m=1760 n=16 k=1760 NN", "W=56 H=56 C=64 N=8 K=64 3x3 s1 p1" or
  // "lstm H=512 N=16 T=25"
  std::string Shape() const;
};

// Parses gemm.csv / conv.csv text. Throws UserError at file:line for a
// missing column, a short row, or a field that is not a number.
std::vector<DeepbenchMeasurement> ParseDeepbenchGemm(const std::string& text,
                                                     const std::string& filename);
std::vector<DeepbenchMeasurement> ParseDeepbenchConv(const std::string& text,
                                                     const std::string& filename);
// rnn.csv text, as rnn_bench.cu ran each row: one layer, unidirectional,
// CUDNN_SKIP_INPUT (input size = hidden), CUDNN_RNN_ALGO_STANDARD, "vanilla"
// being CUDNN_RNN_RELU (cudnn_helper.h). fwd_ms, bwd_input_ms and
// bwd_params_ms become kRnnForward, kRnnBackwardData and
// kRnnBackwardWeights. bwd_ms (P100 fp16-pseudo's single backward column)
// becomes kRnnBackwardData: rnn_bench.cu timed only cudnnRNNBackwardData
// when those cells were written (the data's README). Throws UserError at
// file:line as the other parsers, and for an unknown cell.
std::vector<DeepbenchMeasurement> ParseDeepbenchRnn(const std::string& text,
                                                    const std::string& filename);
// The files of `dir`, GEMM rows first, then convolutions, then recurrent
// layers, each in file order. rnn.csv may be absent (a folder of GEMM and
// convolution times only, as scenarios/fit/h100-kernels).
std::vector<DeepbenchMeasurement> LoadDeepbench(const std::string& dir);

// The catalog device a sheet's GPU is: "V100" -> "V100-SXM2-16GB" (the
// DGX-1 of specs.csv), "P100" -> "P100-PCIe-16GB" (a workstation board),
// "TitanX" -> "TITAN-X-Maxwell" (CUDA 7.5, cuDNN 5), ... Throws UserError
// for a name it does not know.
std::string DeepbenchDevice(const std::string& gpu);
// The CUDA major version a sheet was measured with (specs.csv: 7.5 for M40
// and TitanX, 8 for the Pascal boards, 10.1 for V100 and T4).
int DeepbenchCudaVersion(const std::string& gpu);
// The kernel model of a sheet: its board from `catalog`, `params` with the
// sheet's CUDA version. Throws UserError for an unknown GPU.
sim::GpuKernelModel DeepbenchModel(const hw::HardwareCatalog& catalog, const std::string& gpu,
                                   sim::GpuKernelParams params);

// The training precision of a sheet: fp32 -> fp32; fp16-mixed and
// fp16-pseudo -> fp16 (2-byte operands; the model picks tensor cores or
// fp32 math from the GPU and shape, which is what the sheets name).
hw::Precision DeepbenchPrecision(const std::string& label);

// The model's time for one measurement.
struct DeepbenchPrediction {
  double predicted_s = 0;
  std::string algorithm;  // conv: the algorithm the model picked; "standard" (rnn)
  std::string unit;       // "simt" or "tensor"
  int tile_m = 0, tile_n = 0, split_k = 1;  // rnn: of the per-step GEMM (wgrad: its GEMM)
};
DeepbenchPrediction PredictDeepbench(const sim::GpuKernelModel& model,
                                     const DeepbenchMeasurement& m);

// The roofline baseline (sim/cost/cost_model.h's defaults: peak x 0.75 for GEMMs,
// 0.55 for convolutions, 0.5 for recurrent layers, 70% of memory bandwidth,
// 5 us per kernel), for the same measurement.
double RooflineDeepbench(const hw::DeviceSpec& device, const DeepbenchMeasurement& m);

}  // namespace dtsim::validation
