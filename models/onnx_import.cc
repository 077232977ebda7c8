#include "models/onnx_import.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/input_file.h"
#include "models/graph_builder.h"
#include "models/onnx_model.pb.h"

namespace dtsim::models {
namespace {

namespace onnx = dtsim::onnx_format;

constexpr const char* kSupported =
    "supported operators: Conv, Gemm, MatMul, Add, Relu, Tanh, Gelu, Dropout, Identity, "
    "BatchNormalization, LayerNormalization, LRN, MaxPool, AveragePool, GlobalAveragePool, "
    "Flatten, Reshape, Concat, Softmax, Gather, Constant (docs/onnx_import.md)";

// TensorProto.DataType (onnx.proto).
constexpr int kFloat = 1, kInt32 = 6, kInt64 = 7, kFloat16 = 10, kDouble = 11, kBfloat16 = 16;

bool IsFloatType(int t) {
  return t == kFloat || t == kFloat16 || t == kDouble || t == kBfloat16;
}

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string filename)
      : model_(model),
        filename_(std::move(filename)),
        builder_(std::filesystem::path(filename_).stem().string()) {}

  ModelGraph Run() {
    const onnx::GraphProto& g = model_.graph();
    if (g.node_size() > kMaxOnnxNodes) {
      FailModel("the graph has " + std::to_string(g.node_size()) + " nodes, more than " +
                std::to_string(kMaxOnnxNodes));
    }
    if (g.input_size() > kMaxOnnxNodes || g.initializer_size() > kMaxOnnxNodes ||
        g.output_size() > kMaxOnnxNodes) {
      FailModel("the graph has more than " + std::to_string(kMaxOnnxNodes) +
                " inputs, weights or outputs");
    }
    for (const onnx::TensorProto& t : g.initializer()) initializers_[t.name()] = &t;
    if (g.output_size() == 0) FailModel("the graph has no output");
    output_name_ = g.output(0).name();
    for (const onnx::ValueInfoProto& in : g.input()) {
      if (initializers_.count(in.name()) != 0) continue;  // weights listed as inputs (IR < 4)
      AddInput(in);
    }
    if (values_.empty()) FailModel("the graph has no input that is not a weight");
    FindLiveNodes();
    FindFusedBiases();
    for (int i = 0; i < g.node_size(); ++i) {
      node_index_ = i;
      const onnx::NodeProto& node = g.node(i);
      if (!live_[static_cast<std::size_t>(i)]) continue;  // no graph output reads it
      try {
        Import(node);
      } catch (const UserError& e) {
        if (!e.where().file.empty()) throw;  // already located
        Fail(node, e.message());
      }
    }
    const auto out = values_.find(output_name_);
    if (loss_done_) return Finish();
    if (out == values_.end()) {
      FailModel("the graph's output '" + output_name_ + "' is not produced by any node");
    }
    const Tensor& logits = out->second;
    if (logits.shape.empty()) FailModel("the graph's output '" + output_name_ + "' is a scalar");
    builder_.SoftmaxCrossEntropy(UniqueName("loss", ""), logits, logits.shape.back());
    return Finish();
  }

 private:
  ModelGraph Finish() {
    std::string producer = model_.producer_name().empty() ? "an unnamed producer"
                                                          : model_.producer_name();
    return builder_.Finish("imported from ONNX file " + filename_ + " (" + producer + ")");
  }

  [[noreturn]] void FailModel(const std::string& message) const {
    throw UserError(SourceLocation{filename_, 0, 0}, message,
                    "dtsim reads ONNX graphs as docs/onnx_import.md describes");
  }

  [[noreturn]] void Fail(const onnx::NodeProto& node, const std::string& message) const {
    throw UserError(SourceLocation{filename_, 0, 0},
                    "node " + std::to_string(node_index_) + " '" + node.name() + "' (" +
                        node.op_type() + "): " + message,
                    kSupported);
  }

  // A unique op name for the graph: the node's name, else its operator and
  // index; `suffix` tells apart several ops made from one node.
  std::string OpName(const onnx::NodeProto& node, const std::string& suffix = "") {
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on
    // `"_" + std::to_string(...)`.
    const std::string index = std::to_string(node_index_);
    std::string name = node.name();
    if (name.empty()) {
      name = node.op_type();
      name += '_';
      name += index;
    }
    name += suffix;
    return UniqueName(name, index);
  }

  // `name`, or `name` followed by "_tag" (or "_", then "_2", ...) until no
  // op, input or earlier name uses it.
  std::string UniqueName(std::string name, const std::string& tag) {
    const std::string base = name;
    for (int k = 1; !used_names_.insert(name).second; ++k) {
      name = base;
      name += '_';
      name += tag.empty() || k > 1 ? std::to_string(k) : tag;
    }
    return name;
  }

  void AddInput(const onnx::ValueInfoProto& in) {
    if (!in.type().has_tensor_type()) {
      FailModel("input '" + in.name() + "' is not a tensor");
    }
    const onnx::TypeProto::Tensor& t = in.type().tensor_type();
    const auto& dims = t.shape().dim();
    if (dims.size() > kMaxOnnxRank + 1) {
      FailModel("input '" + in.name() + "' has " + std::to_string(dims.size()) +
                " dimensions, more than the batch and " + std::to_string(kMaxOnnxRank));
    }
    if (dims.size() < 2) {
      FailModel("input '" + in.name() + "' has " + std::to_string(dims.size()) +
                " dimensions; the first is the batch, so at least 2 are needed");
    }
    Shape shape;
    for (int k = 1; k < dims.size(); ++k) {
      if (!dims[k].has_dim_value() || dims[k].dim_value() <= 0) {
        FailModel("dimension " + std::to_string(k) + " of input '" + in.name() + "' is " +
                  (dims[k].has_dim_param() ? "the symbol '" + dims[k].dim_param() + "'"
                                           : std::string("unknown")) +
                  ": only the batch (dimension 0) may vary; export with fixed sizes");
      }
      shape.push_back(dims[k].dim_value());
    }
    const int type = t.elem_type();
    if (!IsFloatType(type) && type != kInt64 && type != kInt32) {
      FailModel("input '" + in.name() + "' has element type " + std::to_string(type) +
                "; float inputs (images, features) and integer inputs (token ids) are read");
    }
    if (!used_names_.insert(in.name()).second || values_.count(in.name()) != 0) {
      FailModel("the input name '" + in.name() + "' is used twice");
    }
    values_[in.name()] = builder_.Input(in.name(), shape);
  }

  // The nodes some graph output depends on (live_[i]): ONNX values no
  // output reads are never computed, and skipping them keeps a file of
  // unused copies from costing a model's worth of ops. Linear in the graph.
  void FindLiveNodes() {
    const onnx::GraphProto& g = model_.graph();
    std::set<std::string> needed;
    for (const onnx::ValueInfoProto& out : g.output()) needed.insert(out.name());
    live_.assign(static_cast<std::size_t>(g.node_size()), false);
    for (int i = g.node_size() - 1; i >= 0; --i) {
      const onnx::NodeProto& node = g.node(i);
      bool live = false;
      for (const std::string& out : node.output()) live = live || needed.count(out) != 0;
      // A node without outputs is kept: it is refused when imported.
      if (!live && node.output_size() != 0) continue;
      live_[static_cast<std::size_t>(i)] = true;
      for (const std::string& in : node.input()) needed.insert(in);
    }
  }

  // MatMul nodes with a weight whose only reader is an Add of a bias
  // vector (PyTorch exports nn.Linear on 3-D inputs this way): the pair is
  // one dense layer with a bias.
  void FindFusedBiases() {
    const onnx::GraphProto& g = model_.graph();
    std::map<std::string, std::vector<int>> readers;
    for (int i = 0; i < g.node_size(); ++i) {
      for (const std::string& in : g.node(i).input()) readers[in].push_back(i);
    }
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& m = g.node(i);
      if (m.op_type() != "MatMul" || m.input_size() != 2 || m.output_size() != 1) continue;
      const onnx::TensorProto* w = Initializer(m.input(1));
      if (w == nullptr || w->dims_size() != 2) continue;
      const auto r = readers.find(m.output(0));
      if (r == readers.end() || r->second.size() != 1 || m.output(0) == output_name_) continue;
      const onnx::NodeProto& add = g.node(r->second[0]);
      if (add.op_type() != "Add" || add.input_size() != 2) continue;
      const std::string& other = add.input(0) == m.output(0) ? add.input(1) : add.input(0);
      const onnx::TensorProto* bias = Initializer(other);
      if (bias == nullptr || Elements(*bias) != std::optional<std::int64_t>(w->dims(1))) continue;
      fused_bias_of_[i] = r->second[0];
      fused_add_.insert(r->second[0]);
    }
  }

  const onnx::TensorProto* Initializer(const std::string& name) const {
    const auto it = initializers_.find(name);
    return it == initializers_.end() ? nullptr : it->second;
  }

  // The elements of `t`; nullopt when a dimension is below 1, there are
  // more than kMaxOnnxRank + 1 dimensions or the product exceeds
  // kMaxModelCount.
  static std::optional<std::int64_t> Elements(const onnx::TensorProto& t) {
    if (t.dims_size() > kMaxOnnxRank + 1) return std::nullopt;
    std::int64_t n = 1;
    for (std::int64_t d : t.dims()) {
      if (d < 1 || __builtin_mul_overflow(n, d, &n) || n > kMaxModelCount) return std::nullopt;
    }
    return n;
  }

  // Refuses a weight whose dimensions are not all positive or whose size
  // exceeds kMaxModelCount elements.
  void CheckWeight(const onnx::NodeProto& node, const onnx::TensorProto& w) const {
    if (!Elements(w)) {
      std::string dims;
      for (int k = 0; k < w.dims_size() && k <= kMaxOnnxRank; ++k) {
        if (k > 0) dims += 'x';  // piece by piece: GCC 12 warns falsely (-Wrestrict)
        dims += std::to_string(w.dims(k));
      }
      Fail(node, "the weight '" + w.name() + "' (" + dims + (w.dims_size() > kMaxOnnxRank + 1 ? "x..." : "") +
                     ") needs 1 to " + std::to_string(kMaxOnnxRank + 1) +
                     " positive dimensions and at most 2^53 elements");
    }
  }

  // An int64 value (an attribute, a weight's dimension) used as an int
  // (window size, stride, padding, groups): refused outside [lowest,
  // INT_MAX] rather than cut.
  int SmallInt(const onnx::NodeProto& node, std::int64_t v, const std::string& what,
               std::int64_t lowest) const {
    if (v < lowest || v > std::numeric_limits<int>::max()) {
      Fail(node, what + " " + std::to_string(v) + " is outside [" + std::to_string(lowest) +
                     ", " + std::to_string(std::numeric_limits<int>::max()) + "]");
    }
    return static_cast<int>(v);
  }

  const Tensor& Value(const onnx::NodeProto& node, int input) const {
    if (input >= node.input_size() || node.input(input).empty()) {
      Fail(node, "input " + std::to_string(input) + " is missing");
    }
    const auto it = values_.find(node.input(input));
    if (it == values_.end()) {
      if (Initializer(node.input(input)) != nullptr) {
        Fail(node, "input " + std::to_string(input) + " ('" + node.input(input) +
                       "') is a weight where an activation was expected");
      }
      Fail(node, "reads '" + node.input(input) +
                     "', which no earlier node produces (ONNX lists nodes in topological "
                     "order)");
    }
    return it->second;
  }

  const onnx::TensorProto& Weight(const onnx::NodeProto& node, int input) const {
    const onnx::TensorProto* w =
        input < node.input_size() ? Initializer(node.input(input)) : nullptr;
    if (w == nullptr) {
      Fail(node, "input " + std::to_string(input) +
                     " must be a weight (an initializer of the graph)");
    }
    CheckWeight(node, *w);
    return *w;
  }

  static const onnx::AttributeProto* Attr(const onnx::NodeProto& node, const std::string& name) {
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
  static std::int64_t Int(const onnx::NodeProto& node, const std::string& name,
                          std::int64_t fallback) {
    const onnx::AttributeProto* a = Attr(node, name);
    return a == nullptr ? fallback : a->i();
  }
  static std::vector<std::int64_t> Ints(const onnx::NodeProto& node, const std::string& name,
                                        std::vector<std::int64_t> fallback) {
    const onnx::AttributeProto* a = Attr(node, name);
    if (a == nullptr) return fallback;
    return {a->ints().begin(), a->ints().end()};
  }

  // The integer values of a constant tensor (a shape: the batch and at most
  // kMaxOnnxRank dimensions), counted before they are copied.
  std::vector<std::int64_t> IntegerData(const onnx::NodeProto& node,
                                        const onnx::TensorProto& t) const {
    const std::size_t width = t.data_type() == kInt32 ? 4 : 8;
    const std::size_t count = t.int64_data_size() > 0   ? static_cast<std::size_t>(t.int64_data_size())
                              : t.int32_data_size() > 0 ? static_cast<std::size_t>(t.int32_data_size())
                                                        : t.raw_data().size() / width;
    if (count > static_cast<std::size_t>(kMaxOnnxRank) + 1) {
      Fail(node, "the shape has " + std::to_string(count) + " dimensions, more than the batch and " +
                     std::to_string(kMaxOnnxRank));
    }
    if (t.int64_data_size() > 0) return {t.int64_data().begin(), t.int64_data().end()};
    if (t.int32_data_size() > 0) return {t.int32_data().begin(), t.int32_data().end()};
    const std::string& raw = t.raw_data();
    if (t.data_type() != kInt64 && t.data_type() != kInt32) {
      Fail(node, "a shape must be a tensor of int64 values");
    }
    std::vector<std::int64_t> values;
    for (std::size_t at = 0; at + width <= raw.size(); at += width) {
      if (width == 8) {
        std::int64_t v;
        std::memcpy(&v, raw.data() + at, 8);  // little-endian, as ONNX stores it and x86 reads
        values.push_back(v);
      } else {
        std::int32_t v;
        std::memcpy(&v, raw.data() + at, 4);
        values.push_back(v);
      }
    }
    return values;
  }

  std::vector<std::int64_t> ConstantInts(const onnx::NodeProto& node, int input) const {
    const std::string& name = input < node.input_size() ? node.input(input) : std::string();
    const auto c = constants_.find(name);
    if (c != constants_.end()) return IntegerData(node, *c->second);
    const onnx::TensorProto* t = Initializer(name);
    if (t == nullptr) {
      Fail(node, "input " + std::to_string(input) + " must be a constant (an initializer or a "
                 "Constant node): dtsim needs fixed shapes");
    }
    return IntegerData(node, *t);
  }

  // Pads of a 2-D window as (pad_h, pad_w): ONNX gives [h_begin, w_begin,
  // h_end, w_end]; dtsim's ops pad both sides alike.
  std::pair<int, int> Pads(const onnx::NodeProto& node) const {
    const onnx::AttributeProto* auto_pad = Attr(node, "auto_pad");
    if (auto_pad != nullptr && auto_pad->s() != "NOTSET" && auto_pad->s() != "VALID") {
      Fail(node, "auto_pad " + auto_pad->s() + " is not supported: export with explicit pads");
    }
    const std::vector<std::int64_t> p = Ints(node, "pads", {0, 0, 0, 0});
    if (p.size() != 4) Fail(node, "pads must have 4 values for a 2-D window");
    if (p[0] != p[2] || p[1] != p[3]) {
      Fail(node, "asymmetric padding (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) +
                     ", " + std::to_string(p[2]) + ", " + std::to_string(p[3]) +
                     ") is not supported");
    }
    return {SmallInt(node, p[0], "padding", 0), SmallInt(node, p[1], "padding", 0)};
  }

  std::pair<int, int> Strides(const onnx::NodeProto& node) const {
    const std::vector<std::int64_t> s = Ints(node, "strides", {1, 1});
    if (s.size() != 2) Fail(node, "strides must have 2 values for a 2-D window");
    return {SmallInt(node, s[0], "stride", 1), SmallInt(node, s[1], "stride", 1)};
  }

  // An axis of a per-sample shape of `rank` dimensions from an ONNX axis
  // (which counts the batch as dimension 0; negative from the end).
  int SampleAxis(const onnx::NodeProto& node, std::int64_t axis, std::size_t rank) const {
    const auto full = static_cast<std::int64_t>(rank) + 1;
    if (axis < 0) axis += full;
    if (axis <= 0 || axis >= full) {
      Fail(node, "axis " + std::to_string(axis) + " is the batch or outside the tensor");
    }
    return static_cast<int>(axis - 1);
  }

  void Output(const onnx::NodeProto& node, const Tensor& t) {
    if (node.output_size() < 1) Fail(node, "the node has no output");
    values_[node.output(0)] = t;
  }

  void Import(const onnx::NodeProto& node) {
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      Fail(node, "operators of domain '" + node.domain() + "' are not supported");
    }
    if (node.output_size() < 1 || node.output(0).empty()) Fail(node, "the node has no output");
    if (node.input_size() > kMaxOnnxNodes) Fail(node, "the node has too many inputs");
    if (fused_add_.count(node_index_) != 0) {  // the bias of the MatMul before
      values_[node.output(0)] = fused_output_;
      return;
    }
    const std::string& op = node.op_type();
    if (op == "Constant") {
      const onnx::AttributeProto* v = Attr(node, "value");
      if (v == nullptr || !v->has_t()) Fail(node, "only tensor constants are read");
      if (v->t().data_type() == kInt64 || v->t().data_type() == kInt32) {
        constants_[node.output(0)] = &v->t();  // read when a Reshape reads it
      }
      return;
    }
    if (op == "Identity" || op == "Dropout") {
      const Tensor& x = Value(node, 0);
      Output(node, op == "Identity" ? x : builder_.Dropout(OpName(node), x));
      return;
    }
    if (op == "Conv") return Conv(node);
    if (op == "Gemm") return Gemm(node);
    if (op == "MatMul") return MatMul(node);
    if (op == "Relu") return Output(node, builder_.Relu(OpName(node), Value(node, 0)));
    if (op == "Tanh") return Output(node, builder_.Tanh(OpName(node), Value(node, 0)));
    if (op == "Gelu") return Output(node, builder_.Gelu(OpName(node), Value(node, 0)));
    if (op == "BatchNormalization") {
      return Output(node, builder_.BatchNorm(OpName(node), Value(node, 0)));
    }
    if (op == "LayerNormalization") {
      const Tensor& x = Value(node, 0);
      if (SampleAxis(node, Int(node, "axis", -1), x.shape.size()) + 1 !=
          static_cast<int>(x.shape.size())) {
        Fail(node, "only normalisation over the last axis is supported");
      }
      return Output(node, builder_.LayerNorm(OpName(node), x));
    }
    if (op == "LRN") {
      const std::int64_t size = Int(node, "size", 0);
      if (size < 1 || size % 2 == 0) Fail(node, "size must be odd and positive");
      return Output(node, builder_.LocalResponseNorm(OpName(node), Value(node, 0),
                                                     SmallInt(node, (size - 1) / 2, "half size", 0)));
    }
    if (op == "MaxPool" || op == "AveragePool") return Pool(node);
    if (op == "GlobalAveragePool") {
      return Output(node, builder_.GlobalAvgPool(OpName(node), Value(node, 0)));
    }
    if (op == "Flatten") {
      const Tensor& x = Value(node, 0);
      if (Int(node, "axis", 1) != 1) Fail(node, "only axis 1 (keep the batch) is supported");
      return Output(node, builder_.Reshape(OpName(node), x, {NumElements(x.shape)}));
    }
    if (op == "Reshape") return Reshape(node);
    if (op == "Add") return Add(node);
    if (op == "Concat") {
      std::vector<Tensor> parts;
      for (int k = 0; k < node.input_size(); ++k) parts.push_back(Value(node, k));
      if (parts.size() < 2) Fail(node, "a concatenation needs at least two inputs");
      const int axis = SampleAxis(node, Int(node, "axis", 1), parts[0].shape.size());
      return Output(node, builder_.Concat(OpName(node), parts, axis));
    }
    if (op == "Softmax") return Softmax(node);
    if (op == "Gather") return Gather(node);
    Fail(node, "operator '" + op + "' is not supported");
  }

  void Conv(const onnx::NodeProto& node) {
    const Tensor& x = Value(node, 0);
    const onnx::TensorProto& w = Weight(node, 1);
    if (w.dims_size() != 4 || x.shape.size() != 3) {
      Fail(node, "only 2-D convolutions of (C, H, W) images are supported");
    }
    for (std::int64_t d : Ints(node, "dilations", {1, 1})) {
      if (d != 1) Fail(node, "dilated convolutions are not supported");
    }
    const std::int64_t groups = SmallInt(node, Int(node, "group", 1), "group", 1);
    std::int64_t channels = 0;
    if (__builtin_mul_overflow(w.dims(1), groups, &channels) || channels != x.shape[0]) {
      Fail(node, "the weight reads " + std::to_string(w.dims(1)) + " channels per group x " +
                     std::to_string(groups) + " groups, the input has " +
                     std::to_string(x.shape[0]));
    }
    ConvSpec spec;
    spec.out_channels = w.dims(0);
    spec.kernel_h = SmallInt(node, w.dims(2), "kernel height", 1);
    spec.kernel_w = SmallInt(node, w.dims(3), "kernel width", 1);
    std::tie(spec.stride_h, spec.stride_w) = Strides(node);
    std::tie(spec.pad_h, spec.pad_w) = Pads(node);
    spec.bias = node.input_size() > 2 && !node.input(2).empty();
    spec.groups = static_cast<int>(groups);
    Output(node, builder_.Conv2d(OpName(node), x, spec));
  }

  void Gemm(const onnx::NodeProto& node) {
    const Tensor& x = Value(node, 0);
    const onnx::TensorProto& w = Weight(node, 1);
    if (Int(node, "transA", 0) != 0) Fail(node, "transA = 1 is not supported");
    if (w.dims_size() != 2) Fail(node, "the weight must be a matrix");
    const bool trans_b = Int(node, "transB", 0) != 0;
    const std::int64_t in = trans_b ? w.dims(1) : w.dims(0);
    const std::int64_t out = trans_b ? w.dims(0) : w.dims(1);
    if (x.shape.size() != 1 || x.shape[0] != in) {
      Fail(node, "the input is " + ShapeToString(x.shape) + " per sample, the weight reads " +
                     std::to_string(in) + " features");
    }
    const bool bias = node.input_size() > 2 && !node.input(2).empty();
    Output(node, builder_.Dense(OpName(node), x, {.out_features = out, .bias = bias}));
  }

  void MatMul(const onnx::NodeProto& node) {
    if (node.input_size() != 2) Fail(node, "a matrix product has two inputs");
    const Tensor& a = Value(node, 0);
    if (const onnx::TensorProto* w = Initializer(node.input(1))) {
      if (w->dims_size() != 2) Fail(node, "a weight of a MatMul must be a matrix");
      CheckWeight(node, *w);
      if (a.shape.empty() || a.shape.back() != w->dims(0)) {
        Fail(node, "the input is " + ShapeToString(a.shape) + " per sample, the weight reads " +
                       std::to_string(w->dims(0)) + " features");
      }
      const bool bias = fused_bias_of_.count(node_index_) != 0;
      const Tensor t =
          builder_.Dense(OpName(node), a, {.out_features = w->dims(1), .bias = bias});
      if (bias) fused_output_ = t;
      Output(node, t);
      return;
    }
    Output(node, builder_.MatMul(OpName(node), a, Value(node, 1)));
  }

  void Pool(const onnx::NodeProto& node) {
    const Tensor& x = Value(node, 0);
    const std::vector<std::int64_t> k = Ints(node, "kernel_shape", {});
    if (k.size() != 2 || x.shape.size() != 3) {
      Fail(node, "only 2-D pooling of (C, H, W) images is supported");
    }
    for (std::int64_t d : Ints(node, "dilations", {1, 1})) {
      if (d != 1) Fail(node, "dilated pooling is not supported");
    }
    PoolSpec spec;
    spec.kernel_h = SmallInt(node, k[0], "kernel height", 1);
    spec.kernel_w = SmallInt(node, k[1], "kernel width", 1);
    std::tie(spec.stride_h, spec.stride_w) = Strides(node);
    std::tie(spec.pad_h, spec.pad_w) = Pads(node);
    spec.ceil_mode = Int(node, "ceil_mode", 0) != 0;
    Output(node, node.op_type() == "MaxPool" ? builder_.MaxPool(OpName(node), x, spec)
                                             : builder_.AvgPool(OpName(node), x, spec));
  }

  void Reshape(const onnx::NodeProto& node) {
    const Tensor& x = Value(node, 0);
    const std::vector<std::int64_t> target = ConstantInts(node, 1);
    if (target.size() < 2) Fail(node, "the shape must keep the batch as dimension 0");
    // Dimension 0 is the batch (0, -1 or a number); 0 copies the input's
    // dimension, -1 takes what is left.
    Shape shape;
    std::optional<std::size_t> infer;
    for (std::size_t k = 1; k < target.size(); ++k) {
      std::int64_t d = target[k];
      if (d == 0) {
        if (k - 1 >= x.shape.size()) Fail(node, "0 copies a dimension the input lacks");
        d = x.shape[k - 1];
      } else if (d == -1) {
        if (infer || target[0] == -1) Fail(node, "more than one dimension is inferred (-1)");
        infer = shape.size();
        d = 1;
      } else if (d < 0) {
        Fail(node, "dimension " + std::to_string(d) + " is negative");
      }
      shape.push_back(d);
    }
    const std::int64_t elements = NumElements(x.shape);
    std::int64_t rest = 1;
    for (const std::int64_t d : shape) {
      if (__builtin_mul_overflow(rest, d, &rest) || rest > kMaxModelCount) {
        Fail(node, "the shape " + ShapeToString(shape) + " has more than 2^53 elements per sample");
      }
    }
    if (infer) {
      if (rest == 0 || elements % rest != 0) {
        Fail(node, "cannot infer a dimension of " + ShapeToString(shape) + " from " +
                       ShapeToString(x.shape));
      }
      shape[*infer] = elements / rest;
      rest = elements;
    }
    if (rest != elements) {
      Fail(node, "reshaping " + ShapeToString(x.shape) + " to " + ShapeToString(shape) +
                     " changes the elements per sample (the batch must stay dimension 0)");
    }
    Output(node, builder_.Reshape(OpName(node), x, shape));
  }

  void Add(const onnx::NodeProto& node) {
    if (node.input_size() != 2) Fail(node, "an addition has two inputs");
    for (int k = 0; k < 2; ++k) {
      if (Initializer(node.input(k)) != nullptr || constants_.count(node.input(k)) != 0) {
        Fail(node, "adding a constant (a bias not after a MatMul, a position table) is not "
                   "supported");
      }
    }
    const Tensor& a = Value(node, 0);
    const Tensor& b = Value(node, 1);
    if (a.shape != b.shape) {
      Fail(node, "broadcasting " + ShapeToString(a.shape) + " + " + ShapeToString(b.shape) +
                     " is not supported");
    }
    Output(node, builder_.Add(OpName(node), a, b));
  }

  void Softmax(const onnx::NodeProto& node) {
    const Tensor& x = Value(node, 0);
    if (SampleAxis(node, Int(node, "axis", -1), x.shape.size()) + 1 !=
        static_cast<int>(x.shape.size())) {
      Fail(node, "only a softmax over the last axis is supported");
    }
    if (node.output_size() > 0 && node.output(0) == output_name_) {
      // The model's output probabilities: training takes the loss here.
      builder_.SoftmaxCrossEntropy(OpName(node, "_loss"), x, x.shape.back());
      loss_done_ = true;
      return;
    }
    Output(node, builder_.Softmax(OpName(node), x));
  }

  void Gather(const onnx::NodeProto& node) {
    const onnx::TensorProto& table = Weight(node, 0);
    if (table.dims_size() != 2 || Int(node, "axis", 0) != 0) {
      Fail(node, "only row lookups in a 2-D table (an embedding) are supported");
    }
    const Tensor& ids = Value(node, 1);
    Output(node, builder_.Embedding(OpName(node), ids, table.dims(0), table.dims(1)));
  }

  const onnx::ModelProto& model_;
  std::string filename_;
  GraphBuilder builder_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, Tensor> values_;
  std::map<std::string, const onnx::TensorProto*> constants_;  // integer Constant nodes
  std::set<std::string> used_names_;
  std::map<int, int> fused_bias_of_;  // MatMul node -> its bias Add
  std::set<int> fused_add_;
  std::vector<bool> live_;  // per node: a graph output depends on it
  Tensor fused_output_;
  std::string output_name_;
  int node_index_ = 0;
  bool loss_done_ = false;
};

}  // namespace

bool IsOnnxPath(const std::string& path) { return path.ends_with(".onnx"); }

ModelGraph ParseOnnxModel(const std::string& bytes, const std::string& filename) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    throw UserError(SourceLocation{filename, 0, 0}, "not an ONNX model (protobuf parse failed)",
                    "give a .onnx file as torch.onnx.export or onnx.save write them");
  }
  if (!model.has_graph()) {
    throw UserError(SourceLocation{filename, 0, 0}, "the ONNX model has no graph");
  }
  try {
    return Importer(model, filename).Run();
  } catch (const UserError& e) {
    // The graph builder's errors ("layer 'x': the name is already used")
    // know the layer, not the file.
    if (!e.where().file.empty()) throw;
    throw UserError(SourceLocation{filename, 0, 0}, e.message(), e.hint());
  }
}

ModelGraph LoadOnnxModel(const std::string& path) {
  return ParseOnnxModel(ReadRegularFile(path, "ONNX file", kMaxOnnxFileBytes), path);
}

}  // namespace dtsim::models
