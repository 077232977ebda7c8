// Internals of the torch.profiler trace import (config/torch_trace.h): the
// trace's events sorted into profiled steps, each step's top-level work
// sorted into forward ops, backward nodes, optimizer and communication.
// Knows nothing of dtsim graphs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::config::torch_trace {

// A top-level aten op of a step's forward pass.
struct ForwardOp {
  std::string name;                         // "aten::conv2d"
  std::vector<std::vector<std::int64_t>> dims;  // "Input Dims", batch first
  std::int64_t sequence = -1;               // "Sequence number"; -1 when absent
  double seconds = 0;                       // CPU time, or its kernels' on GPU
};

// An autograd node run in a step's backward pass.
struct BackwardNode {
  std::string name;           // "ConvolutionBackward0", "torch::autograd::AccumulateGrad"
  std::int64_t sequence = -1;  // the forward op's "Sequence number"; -1 for AccumulateGrad
  double seconds = 0;
};

struct Collective {
  std::string name;  // "gloo:all_reduce"
  double bytes = 0;  // from "Input Dims" and "Input type"; 0 when unknown
  double seconds = 0;
};

struct Step {
  std::string name;  // "ProfilerStep#3", or "whole trace"
  double seconds = 0;
  std::vector<ForwardOp> forward;        // in time order
  std::vector<BackwardNode> backward;    // in time order
  std::vector<ForwardOp> other;          // top-level ops outside both (aten::ones_like)
  double optimizer_s = 0, zero_grad_s = 0;
  std::vector<Collective> communication;
};

struct Trace {
  std::vector<Step> steps;   // in time order
  bool gpu_kernels = false;  // op times are their kernels' times
  std::string optimizer;     // "sgd" from "Optimizer.step#SGD.step"; "" when none
  std::string device = "cpu";  // with kernels: "deviceProperties"[0].name, else "gpu"
};

// Reads a Chrome trace written by torch.profiler; `filename` names it in
// errors. Throws UserError when the text is not JSON, not a torch.profiler
// trace, or has no input shapes (see ImportTorchTrace).
Trace ReadTrace(const std::string& json_text, const std::string& filename);

}  // namespace dtsim::config::torch_trace
