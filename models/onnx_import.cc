#include "models/onnx_import.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "common/error.h"
#include "common/input_file.h"
#include "models/onnx_importer.h"

namespace dtsim::models {
namespace onnx_import {
namespace {

constexpr const char* kSupported =
    "supported operators and patterns: docs/onnx_import.md";

}  // namespace

Shape Act::SampleShape() const {
  Shape s;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (k != batch_axis || !batch_alone) s.push_back(dims[k]);
  }
  return s;
}

Importer::Importer(const onnx::ModelProto& model, std::string filename)
    : model_(model),
      filename_(std::move(filename)),
      builder_(std::filesystem::path(filename_).stem().string()) {}

ModelGraph Importer::Run() {
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
  for (const onnx::TensorProto& t : g.initializer()) {
    initializers_[t.name()] = &t;
    consts_[t.name()] = ReadTensor(nullptr, t);
  }
  if (g.output_size() == 0) FailModel("the graph has no output");
  output_name_ = g.output(0).name();
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (initializers_.count(in.name()) != 0) continue;  // weights listed as inputs (IR < 4)
    AddInput(in);
  }
  if (acts_.empty()) FailModel("the graph has no input that is not a weight");
  FindLiveNodes();
  for (int i = 0; i < g.node_size(); ++i) {
    node_index_ = i;
    const onnx::NodeProto& node = g.node(i);
    if (!live_[static_cast<std::size_t>(i)]) continue;  // no graph output reads it
    if (consumed_.count(i) != 0) continue;               // imported with a pattern
    try {
      Import(node);
    } catch (const UserError& e) {
      if (!e.where().file.empty()) throw;  // already located
      Fail(node, e.message());
    }
  }
  if (loss_done_) return Finish();
  const auto out = acts_.find(output_name_);
  if (out == acts_.end()) {
    FailModel("the graph's output '" + output_name_ + "' is not produced by any node" +
              (consts_.count(output_name_) != 0 ? " from the input" : ""));
  }
  onnx::NodeProto none;
  none.set_name("output");
  Act logits = out->second;
  const Tensor t = Materialize(none, logits, UniqueName(output_name_ + "_view", ""));
  if (t.shape.empty()) FailModel("the graph's output '" + output_name_ + "' is a scalar");
  builder_.SoftmaxCrossEntropy(UniqueName("loss", ""), t, t.shape.back());
  return Finish();
}

ModelGraph Importer::Finish() {
  std::string producer = model_.producer_name().empty() ? "an unnamed producer"
                                                        : model_.producer_name();
  return builder_.Finish("imported from ONNX file " + filename_ + " (" + producer + ")");
}

void Importer::FailModel(const std::string& message) const {
  throw UserError(SourceLocation{filename_, 0, 0}, message,
                  "dtsim reads ONNX graphs as docs/onnx_import.md describes");
}

void Importer::Fail(const onnx::NodeProto& node, const std::string& message) const {
  throw UserError(SourceLocation{filename_, 0, 0},
                  "node " + std::to_string(node_index_) + " '" + node.name() + "' (" +
                      node.op_type() + "): " + message,
                  kSupported);
}

std::string Importer::OpName(const onnx::NodeProto& node, const std::string& suffix) {
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

std::string Importer::UniqueName(std::string name, const std::string& tag) {
  const std::string base = name;
  for (int k = 1; !used_names_.insert(name).second; ++k) {
    name = base;
    name += '_';
    name += tag.empty() || k > 1 ? std::to_string(k) : tag;
  }
  return name;
}

void Importer::AddInput(const onnx::ValueInfoProto& in) {
  if (!in.type().has_tensor_type()) FailModel("input '" + in.name() + "' is not a tensor");
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
  if (!used_names_.insert(in.name()).second || acts_.count(in.name()) != 0) {
    FailModel("the input name '" + in.name() + "' is used twice");
  }
  Act a;
  a.t = builder_.Input(in.name(), shape);
  // The graph is read at batch 1 (exporters write shapes for the example
  // batch; dtsim's counts are per sample).
  a.dims = shape;
  a.dims.insert(a.dims.begin(), 1);
  if (!IsFloatType(type)) id_inputs_.push_back(a.t);
  acts_[in.name()] = a;
}

void Importer::FindLiveNodes() {
  const onnx::GraphProto& g = model_.graph();
  std::set<std::string> needed;
  for (const onnx::ValueInfoProto& out : g.output()) {
    needed.insert(out.name());
    readers_[out.name()].push_back(-1);
  }
  live_.assign(static_cast<std::size_t>(g.node_size()), false);
  for (int i = g.node_size() - 1; i >= 0; --i) {
    const onnx::NodeProto& node = g.node(i);
    bool live = false;
    for (const std::string& out : node.output()) live = live || needed.count(out) != 0;
    // A node without outputs is kept: it is refused when imported.
    if (!live && node.output_size() != 0) continue;
    live_[static_cast<std::size_t>(i)] = true;
    for (const std::string& out : node.output()) producer_[out] = i;
    for (const std::string& in : node.input()) {
      needed.insert(in);
      readers_[in].push_back(i);
    }
  }
}

const std::vector<int>& Importer::Readers(const std::string& value) const {
  static const std::vector<int> kNone;
  const auto it = readers_.find(value);
  return it == readers_.end() ? kNone : it->second;
}

const onnx::NodeProto* Importer::OnlyReader(const std::string& value,
                                            const std::string& op) const {
  const std::vector<int>& r = Readers(value);
  if (r.size() != 1 || r[0] < 0 || consumed_.count(r[0]) != 0) return nullptr;
  const onnx::NodeProto& n = NodeAt(r[0]);
  return n.op_type() == op && n.output_size() >= 1 ? &n : nullptr;
}

void Importer::Consume(const onnx::NodeProto& node) {
  for (int i = 0; i < model_.graph().node_size(); ++i) {
    if (&NodeAt(i) == &node) consumed_.insert(i);
  }
}

bool Importer::ClaimWeight(const onnx::NodeProto& node, const std::string& weight,
                           bool embedding) {
  const auto it = claimed_.find(weight);
  if (it == claimed_.end()) {
    claimed_[weight] = embedding;
    return true;
  }
  if (it->second && !embedding) return false;  // the LM head tied to an embedding
  Fail(node, "the weight '" + weight + "' is shared with an earlier layer; dtsim counts a "
             "shared weight only as an LM head tied to its embedding");
}

void Importer::CheckWeight(const onnx::NodeProto& node, const onnx::TensorProto& w) const {
  bool ok = w.dims_size() <= kMaxOnnxRank + 1;
  std::int64_t n = 1;
  for (int k = 0; ok && k < w.dims_size(); ++k) {
    const std::int64_t d = w.dims(k);
    ok = d >= 1 && !__builtin_mul_overflow(n, d, &n) && n <= kMaxModelCount;
  }
  if (ok) return;
  std::string dims;
  for (int k = 0; k < w.dims_size() && k <= kMaxOnnxRank; ++k) {
    if (k > 0) dims += 'x';  // piece by piece: GCC 12 warns falsely (-Wrestrict)
    dims += std::to_string(w.dims(k));
  }
  Fail(node, "the weight '" + w.name() + "' (" + dims +
                 (w.dims_size() > kMaxOnnxRank + 1 ? "x..." : "") + ") needs 1 to " +
                 std::to_string(kMaxOnnxRank + 1) +
                 " positive dimensions and at most 2^53 elements");
}

int Importer::SmallInt(const onnx::NodeProto& node, std::int64_t v, const std::string& what,
                       std::int64_t lowest) const {
  if (v < lowest || v > std::numeric_limits<int>::max()) {
    Fail(node, what + " " + std::to_string(v) + " is outside [" + std::to_string(lowest) +
                   ", " + std::to_string(std::numeric_limits<int>::max()) + "]");
  }
  return static_cast<int>(v);
}

const onnx::AttributeProto* Importer::Attr(const onnx::NodeProto& node,
                                           const std::string& name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::int64_t Importer::Int(const onnx::NodeProto& node, const std::string& name,
                           std::int64_t fallback) {
  const onnx::AttributeProto* a = Attr(node, name);
  return a == nullptr ? fallback : a->i();
}

std::vector<std::int64_t> Importer::Ints(const onnx::NodeProto& node, const std::string& name,
                                         std::vector<std::int64_t> fallback) {
  const onnx::AttributeProto* a = Attr(node, name);
  if (a == nullptr) return fallback;
  return {a->ints().begin(), a->ints().end()};
}

const OnnxConst* Importer::ConstOrNull(const std::string& name) const {
  const auto it = consts_.find(name);
  return it == consts_.end() ? nullptr : &it->second;
}

bool Importer::IsConst(const onnx::NodeProto& node, int input) const {
  return input < node.input_size() && ConstOrNull(node.input(input)) != nullptr;
}

bool Importer::IsAct(const onnx::NodeProto& node, int input) const {
  return input < node.input_size() && acts_.count(node.input(input)) != 0;
}

const OnnxConst& Importer::Const(const onnx::NodeProto& node, int input) const {
  const OnnxConst* c = input < node.input_size() ? ConstOrNull(node.input(input)) : nullptr;
  if (c == nullptr) {
    Fail(node, "input " + std::to_string(input) +
                   " must be a constant (a weight, a Constant node or a shape computed from "
                   "them): dtsim needs fixed shapes");
  }
  return *c;
}

const Act& Importer::ActOf(const onnx::NodeProto& node, int input) const {
  if (input >= node.input_size() || node.input(input).empty()) {
    Fail(node, "input " + std::to_string(input) + " is missing");
  }
  const auto it = acts_.find(node.input(input));
  if (it == acts_.end()) {
    if (ConstOrNull(node.input(input)) != nullptr) {
      Fail(node, "input " + std::to_string(input) + " ('" + node.input(input) +
                     "') is a weight or constant where an activation was expected");
    }
    Fail(node, "reads '" + node.input(input) +
                   "', which no earlier node produces (ONNX lists nodes in topological order)");
  }
  return it->second;
}

Tensor Importer::Materialize(const onnx::NodeProto& node, Act& a, const std::string& name) {
  if (a.scale != 1.0 || a.causal) {
    Fail(node, "a value scaled by a constant or masked is only read by a Softmax (attention "
               "scores); dtsim has no op for it elsewhere");
  }
  const Shape want = a.SampleShape();
  if (a.key_transposed) {
    // (X, Y) viewed as (Y, X): SplitHeads of (X, Y) into Y heads of width 1.
    if (a.t.shape.size() != 2) {
      Fail(node, "a transpose of the last two axes of " + ShapeToString(a.t.shape) +
                     " is only read by a MatMul as its second input");
    }
    const Tensor heads = builder_.SplitHeads(name + "_transpose", a.t, a.t.shape[1]);
    a.t = builder_.Reshape(name, heads, want);
    a.key_transposed = false;
    return a.t;
  }
  if (a.t.shape != want) a.t = builder_.Reshape(name, a.t, want);
  return a.t;
}

Tensor Importer::Use(const onnx::NodeProto& node, int input) {
  ActOf(node, input);  // refuses a missing or constant input
  Act& a = acts_[node.input(input)];
  if (a.t.shape == a.SampleShape() && !a.key_transposed && a.scale == 1.0 && !a.causal) {
    return a.t;
  }
  std::string suffix = "_in";
  suffix += std::to_string(input);
  return Materialize(node, a, OpName(node, suffix));
}

void Importer::SetAct(const onnx::NodeProto& node, int output, Act a) {
  if (output >= node.output_size() || node.output(output).empty()) {
    Fail(node, "the node has no output " + std::to_string(output));
  }
  acts_[node.output(output)] = std::move(a);
}

void Importer::SetConst(const onnx::NodeProto& node, int output, OnnxConst c) {
  if (output >= node.output_size() || node.output(output).empty()) {
    Fail(node, "the node has no output " + std::to_string(output));
  }
  consts_[node.output(output)] = std::move(c);
}

Act Importer::FromSample(const Act& like, const Tensor& t) const {
  Act a;
  a.t = t;
  a.batch_alone = like.batch_alone;
  a.dims = t.shape;
  a.batch_axis = std::min(like.batch_axis, a.batch_alone ? a.dims.size() : a.dims.size() - 1);
  if (a.batch_alone) a.dims.insert(a.dims.begin() + static_cast<std::ptrdiff_t>(a.batch_axis), 1);
  return a;
}

const OnnxConst* Importer::Ahead(const std::string& name) {
  if (const OnnxConst* c = ConstOrNull(name)) return c;
  const auto p = producer_.find(name);
  if (p == producer_.end() || NodeAt(p->second).op_type() != "Constant") return nullptr;
  // A Constant node listed after the pattern's first node: fold it now.
  const int at = node_index_;
  node_index_ = p->second;
  ImportConstant(NodeAt(p->second));
  node_index_ = at;
  return ConstOrNull(name);
}

Act Importer::Reshaped(const onnx::NodeProto& node, const Act& from, const Tensor& t,
                       std::vector<std::int64_t> dims) const {
  // The batch sits after `before` elements of the row-major layout; it
  // stands alone at an axis of size 1 starting there, else it is merged
  // into the axis starting there (or holding that position).
  std::int64_t before = 1;
  for (std::size_t k = 0; k < from.batch_axis; ++k) before *= from.dims[k];
  Act a;
  a.t = t;
  a.dims = std::move(dims);
  std::int64_t prefix = 1;
  std::optional<std::size_t> merged;
  for (std::size_t k = 0; k < a.dims.size(); ++k) {
    if (prefix == before && a.dims[k] == 1) {
      a.batch_axis = k;
      a.batch_alone = true;
      return a;
    }
    if (!merged && (prefix == before || (prefix < before && prefix * a.dims[k] > before))) {
      merged = k;
    }
    prefix *= a.dims[k];
  }
  if (!merged) Fail(node, "cannot tell where the batch goes in " + DimsToString(a.dims));
  a.batch_axis = *merged;
  a.batch_alone = false;
  return a;
}

int Importer::SampleAxis(const onnx::NodeProto& node, const Act& a, std::int64_t axis) const {
  const auto full = static_cast<std::int64_t>(a.dims.size());
  if (axis < 0) axis += full;
  if (axis < 0 || axis >= full || (a.batch_alone && axis == static_cast<std::int64_t>(a.batch_axis))) {
    Fail(node, "axis " + std::to_string(axis) + " is the batch or outside the tensor");
  }
  if (a.batch_alone && axis > static_cast<std::int64_t>(a.batch_axis)) --axis;
  return static_cast<int>(axis);
}

void Importer::Import(const onnx::NodeProto& node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    Fail(node, "operators of domain '" + node.domain() + "' are not supported");
  }
  if (node.output_size() < 1 || node.output(0).empty()) Fail(node, "the node has no output");
  if (node.input_size() > kMaxOnnxNodes) Fail(node, "the node has too many inputs");
  if (ImportConstant(node)) return;
  const std::string& op = node.op_type();
  if (op == "Identity" || op == "Cast") {
    // A cast changes the element type only: dtsim sets the precision per
    // scenario.
    return SetAct(node, 0, ActOf(node, 0));
  }
  if (op == "Dropout") {
    // Ratio 0 (ViT's default) is an identity even in training.
    const OnnxConst* ratio = node.input_size() > 1 ? ConstOrNull(node.input(1)) : nullptr;
    if (ratio != nullptr && ratio->Scalar() == 0.0) return SetAct(node, 0, ActOf(node, 0));
    const Act& x = ActOf(node, 0);
    return SetAct(node, 0, FromSample(x, builder_.Dropout(OpName(node), Use(node, 0))));
  }
  if (op == "Conv") return Conv(node);
  if (op == "Gemm") return Gemm(node);
  if (op == "MatMul") return MatMul(node);
  if (op == "Relu" || op == "Tanh" || op == "Gelu" || op == "Clip" || op == "BatchNormalization" ||
      op == "LayerNormalization" || op == "LRN" || op == "GlobalAveragePool" || op == "Pad") {
    return Elementwise(node);
  }
  if (op == "MaxPool" || op == "AveragePool") return Pool(node);
  if (op == "Flatten") return Flatten(node);
  if (op == "Reshape") return Reshape(node);
  if (op == "Squeeze" || op == "Unsqueeze") return SqueezeUnsqueeze(node);
  if (op == "Transpose") return Transpose(node);
  if (op == "Slice") return SliceAct(node);
  if (op == "Split") return Split(node);
  if (op == "Concat") return Concat(node);
  if (op == "Add") return Add(node);
  if (op == "Mul" || op == "Div") return MulDiv(node);
  if (op == "ReduceMean" && LayerNormPattern(node)) return;
  if (op == "Sigmoid") return Sigmoid(node);
  if (op == "Softmax") return Softmax(node);
  if (op == "Where") return Where(node);
  if (op == "Gather") return GatherAct(node);
  if (op == "LSTM" || op == "GRU" || op == "RNN") return Recurrent(node);
  if (op == "ReduceMean" || op == "Erf" || op == "Sub" || op == "Pow" || op == "Sqrt") {
    Fail(node, "operator '" + op + "' is read only inside a decomposed LayerNorm or GELU, and "
               "this one is not part of one (docs/onnx_import.md gives the patterns)");
  }
  Fail(node, "operator '" + op + "' is not supported");
}

}  // namespace onnx_import

bool IsOnnxPath(const std::string& path) { return path.ends_with(".onnx"); }

ModelGraph ParseOnnxModel(const std::string& bytes, const std::string& filename) {
  onnx_format::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    throw UserError(SourceLocation{filename, 0, 0}, "not an ONNX model (protobuf parse failed)",
                    "give a .onnx file as torch.onnx.export or onnx.save write them");
  }
  if (!model.has_graph()) {
    throw UserError(SourceLocation{filename, 0, 0}, "the ONNX model has no graph");
  }
  try {
    ModelGraph g = onnx_import::Importer(model, filename).Run();
    const std::string warning = onnx_import::FoldedBatchNormWarning(model, filename);
    if (!warning.empty()) g.AddWarning(warning);
    return g;
  } catch (const UserError& e) {
    // The graph builder's errors ("layer 'x': the name is already used")
    // know the layer, not the file.
    if (!e.where().file.empty()) throw;
    throw UserError(SourceLocation{filename, 0, 0}, e.message(), e.hint());
  }
}

std::string OnnxFoldedBatchNormWarning(const std::string& bytes, const std::string& filename) {
  onnx_format::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    throw UserError(SourceLocation{filename, 0, 0}, "not an ONNX model (protobuf parse failed)");
  }
  return onnx_import::FoldedBatchNormWarning(model, filename);
}

ModelGraph LoadOnnxModel(const std::string& path) {
  return ParseOnnxModel(ReadRegularFile(path, "ONNX file", kMaxOnnxFileBytes), path);
}

}  // namespace dtsim::models
