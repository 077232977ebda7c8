#include "config/torch_aten_kinds.h"

#include <map>

namespace dtsim::config::torch_trace {

using models::OpKind;

std::vector<OpKind> AtenKinds(const std::string& aten_name) {
  // Top-level aten ops as nn modules and functionals call them (PyTorch
  // 1.13 .. 2.x); an in-place variant ("aten::relu_") is its op's kind.
  static const std::map<std::string, std::vector<OpKind>> kKinds = {
      {"conv2d", {OpKind::kConv2d}},
      {"convolution", {OpKind::kConv2d}},
      {"_convolution", {OpKind::kConv2d}},
      {"linear", {OpKind::kDense}},
      {"addmm", {OpKind::kDense}},
      {"matmul", {OpKind::kMatMul, OpKind::kDense}},
      {"mm", {OpKind::kDense, OpKind::kMatMul}},
      {"bmm", {OpKind::kMatMul}},
      {"baddbmm", {OpKind::kMatMul}},
      {"max_pool2d", {OpKind::kMaxPool}},
      {"max_pool2d_with_indices", {OpKind::kMaxPool}},
      {"avg_pool2d", {OpKind::kAvgPool}},
      {"adaptive_avg_pool2d", {OpKind::kAvgPool}},
      {"batch_norm", {OpKind::kBatchNorm}},
      {"native_batch_norm", {OpKind::kBatchNorm}},
      {"layer_norm", {OpKind::kLayerNorm}},
      {"native_layer_norm", {OpKind::kLayerNorm}},
      {"rms_norm", {OpKind::kRmsNorm}},
      {"relu", {OpKind::kRelu}},
      {"threshold", {OpKind::kRelu}},
      {"gelu", {OpKind::kGelu}},
      {"tanh", {OpKind::kTanh}},
      {"sigmoid", {OpKind::kSigmoid}},
      {"silu", {OpKind::kSilu}},
      {"add", {OpKind::kAdd}},
      {"mul", {OpKind::kMul}},
      {"softmax", {OpKind::kSoftmax}},
      {"_softmax", {OpKind::kSoftmax}},
      {"cross_entropy_loss", {OpKind::kSoftmaxCrossEntropy}},
      {"log_softmax", {OpKind::kSoftmaxCrossEntropy}},
      {"dropout", {OpKind::kDropout}},
      {"native_dropout", {OpKind::kDropout}},
      {"feature_dropout", {OpKind::kDropout}},
      {"embedding", {OpKind::kEmbedding}},
      {"cat", {OpKind::kConcat}},
      {"view", {OpKind::kReshape}},
      {"flatten", {OpKind::kReshape}},
      {"reshape", {OpKind::kReshape}},
      {"_reshape_alias", {OpKind::kReshape}},
      {"scaled_dot_product_attention", {OpKind::kAttention}},
      {"_scaled_dot_product_flash_attention", {OpKind::kAttention}},
      {"lstm", {OpKind::kRecurrent}},
      {"gru", {OpKind::kRecurrent}},
      {"rnn_tanh", {OpKind::kRecurrent}},
  };
  const std::string prefix = "aten::";
  if (aten_name.rfind(prefix, 0) != 0) return {};
  std::string base = aten_name.substr(prefix.size());
  if (base.size() > 1 && base.back() == '_' && base[base.size() - 2] != '_') base.pop_back();
  auto it = kKinds.find(base);
  return it == kKinds.end() ? std::vector<OpKind>{} : it->second;
}

AtenInputs InputsOf(const std::string& aten_name,
                    const std::vector<std::vector<std::int64_t>>& dims) {
  auto has = [&](int i) { return static_cast<int>(dims.size()) > i && !dims[i].empty(); };
  AtenInputs in;
  const std::string& n = aten_name;
  if (n == "aten::addmm" || n == "aten::baddbmm") {
    in.activation = has(1) ? 1 : -1;
    if (n == "aten::addmm" && has(2)) in.weight = 2;
  } else if (n == "aten::embedding") {
    in.activation = has(1) ? 1 : -1;
    in.weight = has(0) ? 0 : -1;
  } else {
    in.activation = has(0) ? 0 : -1;
    const bool weighted = n == "aten::conv2d" || n == "aten::convolution" ||
                          n == "aten::_convolution" || n == "aten::linear" ||
                          ((n == "aten::matmul" || n == "aten::mm") && has(1) &&
                           dims[1].size() == 2);
    if (weighted && has(1)) in.weight = 1;
    // batch_norm(x, weight, bias, ...), layer_norm(x, shape, weight, bias)
    if ((n == "aten::batch_norm" || n == "aten::native_batch_norm") && has(1)) in.weight = 1;
    if ((n == "aten::layer_norm" || n == "aten::native_layer_norm") && has(2)) in.weight = 2;
  }
  return in;
}

bool IsAccumulateGrad(const std::string& node_name) {
  return node_name.find("AccumulateGrad") != std::string::npos;
}

}  // namespace dtsim::config::torch_trace
