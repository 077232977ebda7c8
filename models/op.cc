#include "models/op.h"

#include "common/error.h"

namespace dtsim::models {

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kInput: return "input";
    case OpKind::kConv2d: return "conv2d";
    case OpKind::kDense: return "dense";
    case OpKind::kMatMul: return "matmul";
    case OpKind::kMaxPool: return "maxpool";
    case OpKind::kAvgPool: return "avgpool";
    case OpKind::kRelu: return "relu";
    case OpKind::kGelu: return "gelu";
    case OpKind::kTanh: return "tanh";
    case OpKind::kBatchNorm: return "batchnorm";
    case OpKind::kLayerNorm: return "layernorm";
    case OpKind::kLocalResponseNorm: return "lrn";
    case OpKind::kSoftmax: return "softmax";
    case OpKind::kSoftmaxCrossEntropy: return "softmax_xent";
    case OpKind::kEmbedding: return "embedding";
    case OpKind::kAdd: return "add";
    case OpKind::kConcat: return "concat";
    case OpKind::kDropout: return "dropout";
    case OpKind::kReshape: return "reshape";
    case OpKind::kSigmoid: return "sigmoid";
    case OpKind::kSilu: return "silu";
    case OpKind::kMul: return "mul";
    case OpKind::kRmsNorm: return "rmsnorm";
    case OpKind::kRotary: return "rotary";
    case OpKind::kAttention: return "attention";
    case OpKind::kRecurrent: return "recurrent";
  }
  DTSIM_CHECK(false, "unhandled OpKind " + std::to_string(static_cast<int>(kind)));
  return "";
}

const std::vector<OpKind>& AllOpKinds() {
  static const std::vector<OpKind> kinds = {
      OpKind::kInput,     OpKind::kConv2d,    OpKind::kDense,
      OpKind::kMatMul,    OpKind::kMaxPool,   OpKind::kAvgPool,
      OpKind::kRelu,      OpKind::kGelu,      OpKind::kTanh,
      OpKind::kBatchNorm, OpKind::kLayerNorm, OpKind::kLocalResponseNorm,
      OpKind::kSoftmax,   OpKind::kSoftmaxCrossEntropy,
      OpKind::kEmbedding, OpKind::kAdd,       OpKind::kConcat,
      OpKind::kDropout,   OpKind::kReshape,   OpKind::kSigmoid,
      OpKind::kSilu,      OpKind::kMul,       OpKind::kRmsNorm,
      OpKind::kRotary,    OpKind::kAttention, OpKind::kRecurrent,
  };
  return kinds;
}

bool IsCopyView(ViewKind view) {
  return view == ViewKind::kRepeatHeads || view == ViewKind::kDispatch ||
         view == ViewKind::kCombine;
}

const char* AttentionKernelName(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kDefault: return "flash";
    case AttentionKernel::kFa2: return "fa2";
    case AttentionKernel::kFa3: return "fa3";
    case AttentionKernel::kCudnn: return "cudnn";
    case AttentionKernel::kSdpa: return "sdpa";
  }
  return "?";
}

const char* RnnCellName(RnnCell cell) {
  switch (cell) {
    case RnnCell::kTanh: return "rnn";
    case RnnCell::kLstm: return "lstm";
    case RnnCell::kGru: return "gru";
  }
  DTSIM_CHECK(false, "unhandled RnnCell " + std::to_string(static_cast<int>(cell)));
  return "";
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFp32: return "fp32";
    case DType::kFp16: return "fp16";
    case DType::kBf16: return "bf16";
  }
  DTSIM_CHECK(false, "unhandled DType " + std::to_string(static_cast<int>(dtype)));
  return "";
}

int DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kFp32: return 4;
    case DType::kFp16: return 2;
    case DType::kBf16: return 2;
  }
  DTSIM_CHECK(false, "unhandled DType " + std::to_string(static_cast<int>(dtype)));
  return 0;
}

// The empty shape is a scalar: one element.
std::int64_t NumElements(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += "x";
    s += std::to_string(shape[i]);
  }
  return s;
}

}  // namespace dtsim::models
