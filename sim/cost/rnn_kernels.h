// The kernels of one recurrent layer (vanilla RNN, LSTM, GRU) as cuDNN's
// standard algorithm (CUDNN_RNN_ALGO_STANDARD) runs them, for each pass.
// Shapes: T steps, N sequences (batch), I input features, H hidden units,
// G gates (RNN 1, GRU 3, LSTM 4; models::RnnGates), all G gates' weights
// stacked into one G H x H recurrent matrix.
//
// The structure (Appleyard, Kocisky & Blunsom, "Optimizing Performance of
// Recurrent Neural Networks on GPUs", arXiv:1604.01946, 2016, the
// optimizations of cuDNN 5's RNNs; NVIDIA developer blog "Optimizing
// Recurrent Neural Networks in cuDNN 5", 2016):
//   forward     the input projection of every step as 1 GEMM (G H x T N x I)
//               (CUDNN_LINEAR_INPUT; none with CUDNN_SKIP_INPUT, where x_t
//               enters the gates as it is and I = H), then per step 1 GEMM
//               of the previous hidden state against the stacked recurrent
//               weights (G H x N x H) and 1 fused pointwise kernel (the
//               gates' nonlinearities and the state update).
//   dgrad       per step, last to first, 1 fused pointwise kernel (the
//               gates' gradients from dh, dc and the kept gates) and 1 GEMM
//               of the transposed recurrent weights (H x N x G H) for dh of
//               the step before; then the input gradient of every step as 1
//               GEMM (I x T N x G H) (with skip input the pointwise kernel
//               sums the gates' gradients into dx: no GEMM).
//   wgrad       the weight gradients of all steps as one GEMM each, over
//               T N rows: recurrent G H x H x T N, input G H x I x T N (not
//               with skip input), and the bias gradient, one reduction of
//               the G H x T N gate gradients.
// GRU: cuDNN's GRU (cudnnSetRNNDescriptor documentation, CUDNN_GRU) applies
// the reset gate to the recurrent GEMM's output, h' = tanh(W_h x + r o
// (R_h h + b_Rh) + b_Wh), so its three gates share the one G H x N x H
// per-step GEMM as LSTM's four do.
//
// The per-step kernels are launched one after another from the host, a
// GEMM and a pointwise kernel per step: at small N a step takes the host's
// time to issue it, not the GPU's work (GpuKernelParams::rnn_host_step_s,
// GpuKernelModel::RecurrentStepGemm).
#pragma once

#include <cstdint>
#include <vector>

#include "models/op.h"
#include "plan/plan.h"
#include "sim/cost/op_kernels.h"

namespace dtsim::sim {

// cuDNN's cudnnRNNInputMode_t.
enum class RnnInput {
  kLinear,  // CUDNN_LINEAR_INPUT: W x_t, a GEMM over all steps (PyTorch's)
  kSkip,    // CUDNN_SKIP_INPUT: x_t as it is (I must equal H; DeepBench's)
};

struct RnnProblem {
  models::RnnCell cell = models::RnnCell::kLstm;
  std::int64_t steps = 1;   // T
  std::int64_t batch = 1;   // N
  std::int64_t input = 1;   // I
  std::int64_t hidden = 1;  // H
  RnnInput input_mode = RnnInput::kLinear;
  hw::Precision precision = hw::Precision::kFp32;
};

// The kernels of `p` for `kind` (kForward, kBackwardInput, kBackwardWeight),
// the per-step ones with KernelCall::repeat = T. Kernel names start with
// "fwd", "dgrad" or "wgrad". REQUIRES: sizes > 0, and I == H for kSkip
// (DTSIM_CHECK).
std::vector<KernelCall> RnnKernels(const RnnProblem& p, plan::TaskKind kind);

// The layer's time for `kind` on `model`'s device: the sum of its kernels'
// times (KernelSeconds), as the simulator prices a recurrent op.
double RnnSeconds(const GpuKernelModel& model, const RnnProblem& p, plan::TaskKind kind);

}  // namespace dtsim::sim
