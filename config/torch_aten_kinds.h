// Which dtsim op kinds a PyTorch aten op can compute, and which of its
// inputs hold the activation and the weight: the vocabulary of the
// torch.profiler trace import (config/torch_trace.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/op.h"

namespace dtsim::config::torch_trace {

// The kinds `aten_name` ("aten::conv2d") may compute; empty for ops that
// match no dtsim op on their own (aten::pad, aten::pow, ...: parts of a
// composite such as nn.LocalResponseNorm).
std::vector<models::OpKind> AtenKinds(const std::string& aten_name);

// Positions in "Input Dims" of the activation (batch first) and of the
// weight; -1 when absent. E.g. aten::addmm(bias, x, w^T): activation 1,
// weight 2; aten::embedding(weight, ids): activation 1, weight 0.
struct AtenInputs {
  int activation = -1;
  int weight = -1;
};
AtenInputs InputsOf(const std::string& aten_name,
                    const std::vector<std::vector<std::int64_t>>& dims);

// "torch::autograd::AccumulateGrad": stores a parameter's gradient.
bool IsAccumulateGrad(const std::string& node_name);

}  // namespace dtsim::config::torch_trace
