// One operator of a model graph, with everything the planner, the simulator's
// cost model and (later) exec's kernels need to know about it.
//
// All per-sample quantities are for ONE sample (batch = 1); they scale
// linearly with the batch. Shapes exclude the batch dimension:
//   images: (C, H, W); sequences: (S, H) with S = sequence length.
// FLOPs count a multiply-add as 2 FLOPs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::models {

enum class OpKind {
  kInput,          // data source; no compute
  kConv2d,
  kDense,          // fully connected / linear
  kMatMul,         // activation x activation (attention scores, context)
  kMaxPool,
  kAvgPool,
  kRelu,
  kGelu,
  kTanh,
  kBatchNorm,
  kLayerNorm,
  kLocalResponseNorm,
  kSoftmax,
  kSoftmaxCrossEntropy,  // loss
  kEmbedding,
  kAdd,            // residual add
  kConcat,
  kDropout,
  kReshape,        // view change; free
};

// Short lower-case name ("conv2d"); also the key used for per-kind
// efficiencies in scenario files.
const char* OpKindName(OpKind kind);
// All kinds, in declaration order.
const std::vector<OpKind>& AllOpKinds();

enum class DType { kFp32, kFp16, kBf16 };
const char* DTypeName(DType dtype);
int DTypeBytes(DType dtype);

using Shape = std::vector<std::int64_t>;
std::int64_t NumElements(const Shape& shape);
std::string ShapeToString(const Shape& shape);  // "64x56x56"

struct Op {
  std::string name;     // unique in its graph, e.g. "layer1.0.conv1"
  OpKind kind = OpKind::kInput;
  std::vector<Shape> input_shapes;  // per sample
  Shape output_shape;               // per sample
  DType dtype = DType::kFp32;

  // Compute, per sample. Backward is split as frameworks split it: the
  // gradient with respect to the op's input (needed unless the op is first)
  // and with respect to its weights (only ops with parameters).
  double fwd_flops = 0;
  double bwd_input_flops = 0;
  double bwd_weight_flops = 0;

  // Trainable parameters (not scaled by batch).
  std::int64_t params = 0;

  // Memory traffic of the forward pass, in elements: activations read and
  // written per sample (weights are counted from `params`).
  double read_elements_per_sample = 0;
  double written_elements_per_sample = 0;
  // Elements kept from forward to backward, per sample (what activation
  // memory is made of).
  double saved_elements_per_sample = 0;

  // Bytes helpers using `dtype`.
  double ParamBytes() const { return static_cast<double>(params) * DTypeBytes(dtype); }
  double FwdBytes(double batch) const {
    return ParamBytes() +
           batch * (read_elements_per_sample + written_elements_per_sample) * DTypeBytes(dtype);
  }
  // Backward reads the saved activations and the output gradient, writes the
  // input gradient, and reads/writes weights and their gradients.
  double BwdBytes(double batch) const {
    return 2 * ParamBytes() +
           batch * (read_elements_per_sample + 2 * written_elements_per_sample) *
               DTypeBytes(dtype);
  }
  double ActivationBytes(double batch) const {
    return batch * saved_elements_per_sample * DTypeBytes(dtype);
  }
  bool HasParams() const { return params > 0; }
};

}  // namespace dtsim::models
