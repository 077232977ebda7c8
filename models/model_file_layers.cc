#include "models/model_file_layers.h"

#include <cmath>
#include <tuple>

namespace dtsim::models {
namespace {

constexpr std::size_t kAnyNumber = 1000000;

// An elementwise or shape-only layer with no keys of its own.
LayerType Plain(std::string type,
                Tensor (GraphBuilder::*method)(const std::string&, const Tensor&)) {
  return {std::move(type), {}, 1, 1,
          [method](GraphBuilder& b, const std::string& name, const LayerEntry& e) {
            return (b.*method)(name, e.input());
          }};
}

// Max and average pooling: kernel, stride (default: kernel), padding,
// ceil_mode.
// A recurrent layer of cell `cell`: hidden.
LayerType RecurrentType(std::string type, RnnCell cell) {
  return {std::move(type), {"hidden"}, 1, 1,
          [cell](GraphBuilder& b, const std::string& name, const LayerEntry& e) {
            return b.Recurrent(name, e.input(), {.cell = cell, .hidden = e.Int("hidden", 1)});
          }};
}

LayerType PoolType(std::string type, OpKind kind) {
  return {std::move(type), {"kernel", "stride", "padding", "ceil_mode"}, 1, 1,
          [kind](GraphBuilder& b, const std::string& name, const LayerEntry& e) {
            PoolSpec s;
            std::tie(s.kernel_h, s.kernel_w) = e.Pair("kernel", 1);
            std::tie(s.stride_h, s.stride_w) = e.PairOr("stride", {s.kernel_h, s.kernel_w}, 1);
            std::tie(s.pad_h, s.pad_w) = e.PairOr("padding", {0, 0}, 0);
            s.ceil_mode = e.BoolOr("ceil_mode", false);
            return kind == OpKind::kMaxPool ? b.MaxPool(name, e.input(), s)
                                            : b.AvgPool(name, e.input(), s);
          }};
}

}  // namespace

const std::vector<LayerType>& LayerTypes() {
  using B = GraphBuilder;
  using E = LayerEntry;
  static const std::vector<LayerType> types = {
      {"input", {"shape"}, 0, 0,
       [](B& b, const std::string& n, const E& e) { return b.Input(n, e.ShapeOf("shape")); }},
      {"conv2d", {"out_channels", "kernel", "stride", "padding", "bias", "groups"}, 1, 1,
       [](B& b, const std::string& n, const E& e) {
         ConvSpec s;
         s.out_channels = e.Int("out_channels", 1);
         std::tie(s.kernel_h, s.kernel_w) = e.Pair("kernel", 1);
         std::tie(s.stride_h, s.stride_w) = e.PairOr("stride", {1, 1}, 1);
         std::tie(s.pad_h, s.pad_w) = e.PairOr("padding", {0, 0}, 0);
         s.bias = e.BoolOr("bias", true);
         s.groups = static_cast<int>(e.IntOr("groups", 1, 1));
         return b.Conv2d(n, e.input(), s);
       }},
      {"dense", {"out_features", "bias"}, 1, 1,
       [](B& b, const std::string& n, const E& e) {
         return b.Dense(n, e.input(),
                        {.out_features = e.Int("out_features", 1), .bias = e.BoolOr("bias", true)});
       }},
      {"matmul", {"transpose_b"}, 2, 2,
       [](B& b, const std::string& n, const E& e) {
         return b.MatMul(n, e.inputs()[0], e.inputs()[1],
                         {.transpose_b = e.BoolOr("transpose_b", false)});
       }},
      PoolType("maxpool", OpKind::kMaxPool),
      PoolType("avgpool", OpKind::kAvgPool),
      Plain("global_avgpool", &B::GlobalAvgPool),
      Plain("relu", &B::Relu),
      Plain("gelu", &B::Gelu),
      Plain("tanh", &B::Tanh),
      Plain("batchnorm", &B::BatchNorm),
      Plain("layernorm", &B::LayerNorm),
      Plain("softmax", &B::Softmax),
      Plain("flatten", &B::Flatten),
      {"lrn", {"depth_radius"}, 1, 1,
       [](B& b, const std::string& n, const E& e) {
         // TensorFlow's default depth_radius is 5.
         return b.LocalResponseNorm(n, e.input(), static_cast<int>(e.IntOr("depth_radius", 5, 0)));
       }},
      {"dropout", {"rate"}, 1, 1,
       [](B& b, const std::string& n, const E& e) {
         e.CheckRate("rate");
         return b.Dropout(n, e.input());
       }},
      {kLossLayerType, {"classes"}, 1, 1,
       [](B& b, const std::string& n, const E& e) {
         const Tensor& x = e.input();
         const std::int64_t last = x.shape.empty() ? 0 : x.shape.back();
         return b.SoftmaxCrossEntropy(n, x, e.IntOr("classes", last, 1));
       }},
      {"embedding", {"vocab", "hidden"}, 1, 1,
       [](B& b, const std::string& n, const E& e) {
         return b.Embedding(n, e.input(), e.Int("vocab", 1), e.Int("hidden", 1));
       }},
      {"add", {}, 2, 2,
       [](B& b, const std::string& n, const E& e) {
         return b.Add(n, e.inputs()[0], e.inputs()[1]);
       }},
      {"concat", {"axis"}, 2, kAnyNumber,
       [](B& b, const std::string& n, const E& e) {
         return b.Concat(n, e.inputs(), static_cast<int>(e.IntOr("axis", 0, 0)));
       }},
      {"reshape", {"shape"}, 1, 1,
       [](B& b, const std::string& n, const E& e) {
         return b.Reshape(n, e.input(), e.ShapeOf("shape"));
       }},
      Plain("sigmoid", &B::Sigmoid),
      Plain("silu", &B::Silu),
      {"mul", {}, 2, 2,
       [](B& b, const std::string& n, const E& e) {
         return b.Mul(n, e.inputs()[0], e.inputs()[1]);
       }},
      Plain("rmsnorm", &B::RmsNorm),
      Plain("rotary", &B::Rotary),
      {"split_heads", {"heads"}, 1, 1,
       [](B& b, const std::string& n, const E& e) {
         return b.SplitHeads(n, e.input(), e.Int("heads", 1));
       }},
      Plain("merge_heads", &B::MergeHeads),
      {"repeat_heads", {"repeats"}, 1, 1,
       [](B& b, const std::string& n, const E& e) {
         return b.RepeatHeads(n, e.input(), e.Int("repeats", 1));
       }},
      {"attention", {"causal", "scale"}, 3, 3,
       [](B& b, const std::string& n, const E& e) {
         const Tensor& q = e.inputs()[0];
         // Default scale 1 / sqrt(D) (Vaswani et al. 2017).
         const double d = q.shape.empty() ? 1.0 : static_cast<double>(q.shape.back());
         return b.Attention(n, q, e.inputs()[1], e.inputs()[2],
                            {.causal = e.BoolOr("causal", false),
                             .scale = e.NumberOr("scale", 1.0 / std::sqrt(d))});
       }},
      RecurrentType("rnn", RnnCell::kTanh),
      RecurrentType("lstm", RnnCell::kLstm),
      RecurrentType("gru", RnnCell::kGru),
  };
  return types;
}

std::vector<std::string> LayerTypeNames() {
  std::vector<std::string> names;
  for (const LayerType& t : LayerTypes()) names.push_back(t.type);
  return names;
}

}  // namespace dtsim::models
