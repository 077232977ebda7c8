// The importer's layers (Conv, Gemm, MatMul, pools, activations, norms) and
// views (Reshape, Squeeze, Unsqueeze, Flatten, Transpose, Slice, Split,
// Gather of an index, Concat), and the arithmetic of activations (Add,
// Mul, Div).
#include <algorithm>
#include <cmath>
#include <tuple>

#include "common/error.h"
#include "models/onnx_import.h"
#include "models/onnx_importer.h"

namespace dtsim::models::onnx_import {
namespace {

std::int64_t Prod(const Shape& s, std::size_t from, std::size_t to) {
  std::int64_t n = 1;
  for (std::size_t k = from; k < to; ++k) n *= s[k];
  return n;
}

OnnxConst MinusInfinity() {
  OnnxConst c;
  c.values = std::vector<double>{-INFINITY};
  return c;
}

// "_<k>", appended piece by piece: GCC 12 warns falsely (-Wrestrict) on
// `"_" + std::to_string(k)`.
std::string Suffix(std::size_t k) {
  std::string s = "_";
  s += std::to_string(k);
  return s;
}

}  // namespace

std::array<int, 4> Importer::WindowStridesAndPads(const onnx::NodeProto& node) const {
  const std::vector<std::int64_t> s = Ints(node, "strides", {1, 1});
  if (s.size() != 2) Fail(node, "strides must have 2 values for a 2-D window");
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
  return {SmallInt(node, s[0], "stride", 1), SmallInt(node, s[1], "stride", 1),
          SmallInt(node, p[0], "padding", 0), SmallInt(node, p[1], "padding", 0)};
}

void Importer::Conv(const onnx::NodeProto& node) {
  const Act& xa = ActOf(node, 0);
  const Tensor x = Use(node, 0);
  const onnx::TensorProto* w = node.input_size() > 1 ? initializers_[node.input(1)] : nullptr;
  if (w == nullptr) Fail(node, "input 1 must be a weight (an initializer of the graph)");
  CheckWeight(node, *w);
  if (w->dims_size() != 4 || x.shape.size() != 3) {
    Fail(node, "only 2-D convolutions of (C, H, W) images are supported");
  }
  for (std::int64_t d : Ints(node, "dilations", {1, 1})) {
    if (d != 1) Fail(node, "dilated convolutions are not supported");
  }
  const std::int64_t groups = SmallInt(node, Int(node, "group", 1), "group", 1);
  std::int64_t channels = 0;
  if (__builtin_mul_overflow(w->dims(1), groups, &channels) || channels != x.shape[0]) {
    Fail(node, "the weight reads " + std::to_string(w->dims(1)) + " channels per group x " +
                   std::to_string(groups) + " groups, the input has " +
                   std::to_string(x.shape[0]));
  }
  ConvSpec spec;
  spec.out_channels = w->dims(0);
  spec.kernel_h = SmallInt(node, w->dims(2), "kernel height", 1);
  spec.kernel_w = SmallInt(node, w->dims(3), "kernel width", 1);
  std::tie(spec.stride_h, spec.stride_w, spec.pad_h, spec.pad_w) =
      std::tuple_cat(WindowStridesAndPads(node));
  spec.bias = node.input_size() > 2 && !node.input(2).empty();
  spec.groups = static_cast<int>(groups);
  ClaimWeight(node, w->name(), false);
  if (spec.bias) ClaimWeight(node, node.input(2), false);
  SetAct(node, 0, FromSample(xa, builder_.Conv2d(OpName(node), x, spec)));
}

void Importer::Gemm(const onnx::NodeProto& node) {
  const Act& xa = ActOf(node, 0);
  const Tensor x = Use(node, 0);
  const OnnxConst& w = Const(node, 1);
  if (w.weight.empty()) Fail(node, "input 1 must be a weight (an initializer of the graph)");
  CheckWeight(node, *initializers_[w.weight]);
  if (Int(node, "transA", 0) != 0) Fail(node, "transA = 1 is not supported");
  if (w.dims.size() != 2) Fail(node, "the weight must be a matrix");
  const bool trans_b = Int(node, "transB", 0) != 0;
  const std::int64_t in = trans_b ? w.dims[1] : w.dims[0];
  const std::int64_t out = trans_b ? w.dims[0] : w.dims[1];
  if (x.shape.empty() || x.shape.back() != in) {
    Fail(node, "the input is " + ShapeToString(x.shape) + " per sample, the weight reads " +
                   std::to_string(in) + " features");
  }
  const bool bias = node.input_size() > 2 && !node.input(2).empty();
  const bool own = ClaimWeight(node, w.weight, false);
  if (bias) ClaimWeight(node, node.input(2), false);
  const Tensor t = builder_.Dense(OpName(node), x,
                                  {.out_features = out, .bias = bias, .tied_weight = !own});
  SetAct(node, 0, FromSample(xa, t));
}

void Importer::MatMul(const onnx::NodeProto& node) {
  if (node.input_size() != 2) Fail(node, "a matrix product has two inputs");
  if (IsConst(node, 1)) {
    const OnnxConst& w = Const(node, 1);
    if (w.weight.empty() || w.dims.size() != 2) {
      Fail(node, "the second input is a constant that is neither a weight matrix nor the "
                 "transpose of one");
    }
    CheckWeight(node, *initializers_[w.weight]);
    const Act& xa = ActOf(node, 0);
    const Tensor x = Use(node, 0);
    if (x.shape.empty() || x.shape.back() != w.dims[0]) {
      Fail(node, "the input is " + ShapeToString(x.shape) + " per sample, the weight reads " +
                     std::to_string(w.dims[0]) + " features");
    }
    const std::int64_t out = w.dims[1];
    // A following Add of an N-element weight is the bias (nn.Linear on 3-D
    // inputs is exported as MatMul + Add).
    const onnx::NodeProto* add = OnlyReader(node.output(0), "Add");
    const OnnxConst* bias = nullptr;
    if (add != nullptr && add->input_size() == 2) {
      const std::string& other = add->input(0) == node.output(0) ? add->input(1) : add->input(0);
      bias = ConstOrNull(other);
      if (bias != nullptr && (bias->weight.empty() || bias->Elements() != out ||
                              bias->dims.empty() || bias->dims.back() != out)) {
        bias = nullptr;
      }
    }
    const bool own = ClaimWeight(node, w.weight, false);
    if (bias != nullptr) ClaimWeight(node, bias->weight, false);
    const Tensor t = builder_.Dense(
        OpName(node), x, {.out_features = out, .bias = bias != nullptr, .tied_weight = !own});
    SetAct(node, 0, FromSample(xa, t));
    if (bias != nullptr) {
      Consume(*add);
      acts_[add->output(0)] = FromSample(xa, t);
    }
    return;
  }
  Act a = ActOf(node, 0);
  Act b = ActOf(node, 1);
  if (a.causal || b.causal) Fail(node, "a masked value is only read by a Softmax");
  const double scale = a.scale * b.scale;
  a.scale = b.scale = 1.0;
  const Tensor ta = Materialize(node, a, OpName(node, "_a"));
  MatMulSpec spec;
  Tensor tb;
  if (b.key_transposed) {
    spec.transpose_b = true;
    tb = b.t;
  } else {
    tb = Materialize(node, b, OpName(node, "_b"));
  }
  Act out = FromSample(a, builder_.MatMul(OpName(node), ta, tb, spec));
  out.scale = scale;
  SetAct(node, 0, out);
}

void Importer::Pool(const onnx::NodeProto& node) {
  const Act& xa = ActOf(node, 0);
  const Tensor x = Use(node, 0);
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
  std::tie(spec.stride_h, spec.stride_w, spec.pad_h, spec.pad_w) =
      std::tuple_cat(WindowStridesAndPads(node));
  spec.ceil_mode = Int(node, "ceil_mode", 0) != 0;
  const Tensor t = node.op_type() == "MaxPool" ? builder_.MaxPool(OpName(node), x, spec)
                                                : builder_.AvgPool(OpName(node), x, spec);
  SetAct(node, 0, FromSample(xa, t));
}

void Importer::Elementwise(const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  const Act& xa = ActOf(node, 0);
  if (op == "Pad") {
    const std::vector<std::int64_t> pads =
        node.input_size() > 1 ? Const(node, 1).Ints("the pads") : Ints(node, "pads", {});
    if (std::any_of(pads.begin(), pads.end(), [](std::int64_t p) { return p != 0; })) {
      Fail(node, "padding by a separate node is not supported (only pads of 0, which change "
                 "nothing)");
    }
    return SetAct(node, 0, xa);
  }
  const Tensor x = Use(node, 0);
  const std::string name = OpName(node);
  Tensor t;
  if (op == "Relu") {
    t = builder_.Relu(name, x);
  } else if (op == "Clip") {
    // ReLU6 (MobileNet) costs what ReLU costs: it maps to Relu.
    const OnnxConst* lo = node.input_size() > 1 && !node.input(1).empty() ? &Const(node, 1) : nullptr;
    const OnnxConst* hi = node.input_size() > 2 && !node.input(2).empty() ? &Const(node, 2) : nullptr;
    const bool relu = lo != nullptr && lo->Scalar() == 0.0 &&
                      (hi == nullptr || hi->Scalar() == 6.0);
    if (!relu) Fail(node, "only Clip(0, 6) (ReLU6) and Clip(0) (ReLU) are supported");
    t = builder_.Relu(name, x);
  } else if (op == "Tanh") {
    t = builder_.Tanh(name, x);
  } else if (op == "Gelu") {
    t = builder_.Gelu(name, x);
  } else if (op == "BatchNormalization") {
    t = builder_.BatchNorm(name, x);
  } else if (op == "LayerNormalization") {
    if (SampleAxis(node, xa, Int(node, "axis", -1)) + 1 != static_cast<int>(x.shape.size())) {
      Fail(node, "only normalisation over the last axis is supported");
    }
    t = builder_.LayerNorm(name, x);
  } else if (op == "LRN") {
    const std::int64_t size = Int(node, "size", 0);
    if (size < 1 || size % 2 == 0) Fail(node, "size must be odd and positive");
    t = builder_.LocalResponseNorm(name, x, SmallInt(node, (size - 1) / 2, "half size", 0));
  } else {  // GlobalAveragePool
    t = builder_.GlobalAvgPool(name, x);
  }
  SetAct(node, 0, FromSample(xa, t));
}

void Importer::Reshape(const onnx::NodeProto& node) {
  const Act& x = ActOf(node, 0);
  const OnnxConst& shape = Const(node, 1);
  if (shape.Elements() > kMaxOnnxRank + 1) {
    Fail(node, "the shape has " + std::to_string(shape.Elements()) +
                   " dimensions, more than the batch and " + std::to_string(kMaxOnnxRank));
  }
  const std::vector<std::int64_t> target = shape.Ints("the shape");
  const Tensor t = x.key_transposed ? Use(node, 0) : x.t;
  Act a = Reshaped(node, x, t, ReshapeTarget(x.dims, target));
  a.scale = x.scale;
  a.causal = x.causal && a.SampleShape() == x.SampleShape();
  if (x.causal && !a.causal) Fail(node, "reshapes a masked attention score");
  SetAct(node, 0, a);
}

void Importer::SqueezeUnsqueeze(const onnx::NodeProto& node) {
  const Act& x = ActOf(node, 0);
  std::vector<std::int64_t> axes = node.input_size() > 1 ? Const(node, 1).Ints("the axes")
                                                         : Ints(node, "axes", {});
  std::vector<std::int64_t> dims = x.dims;
  if (node.op_type() == "Unsqueeze") {
    const std::size_t rank = dims.size() + axes.size();
    for (std::int64_t& a : axes) a = NormalizeAxis(a, rank);
    std::sort(axes.begin(), axes.end());
    for (std::int64_t a : axes) dims.insert(dims.begin() + a, 1);
  } else {
    for (std::int64_t& a : axes) a = NormalizeAxis(a, dims.size());
    std::vector<std::int64_t> kept;
    for (std::size_t k = 0; k < dims.size(); ++k) {
      const bool listed =
          std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(k)) != axes.end();
      if (listed && dims[k] != 1) Fail(node, "squeezes an axis of size " + std::to_string(dims[k]));
      if ((axes.empty() && dims[k] == 1) || listed) continue;
      kept.push_back(dims[k]);
    }
    dims = kept;
  }
  const Tensor t = x.key_transposed ? Use(node, 0) : x.t;
  Act a = Reshaped(node, x, t, dims);
  a.scale = x.scale;
  SetAct(node, 0, a);
}

void Importer::Flatten(const onnx::NodeProto& node) {
  const Act& x = ActOf(node, 0);
  const std::int64_t axis = NormalizeAxis(Int(node, "axis", 1), x.dims.size() + 1);
  std::vector<std::int64_t> dims = {1, 1};
  for (std::size_t k = 0; k < x.dims.size(); ++k) {
    dims[static_cast<std::int64_t>(k) < axis ? 0 : 1] *= x.dims[k];
  }
  Act a = Reshaped(node, x, Use(node, 0), dims);
  if (!a.batch_alone) Fail(node, "only flattening after the batch (axis 1) is supported");
  SetAct(node, 0, a);
}

void Importer::Transpose(const onnx::NodeProto& node) {
  const Act& x = ActOf(node, 0);
  const std::size_t rank = x.dims.size();
  std::vector<std::int64_t> reverse;
  for (std::size_t k = rank; k-- > 0;) reverse.push_back(static_cast<std::int64_t>(k));
  const std::vector<std::int64_t> perm = Ints(node, "perm", reverse);
  if (perm.size() != rank) Fail(node, "the permutation does not match the rank");
  Act out = x;
  out.dims.clear();
  std::vector<std::int64_t> p;  // the permutation of the per-sample axes
  for (std::size_t j = 0; j < rank; ++j) {
    if (perm[j] < 0 || perm[j] >= static_cast<std::int64_t>(rank)) {
      Fail(node, "the permutation is not one of the axes");
    }
    out.dims.push_back(x.dims[static_cast<std::size_t>(perm[j])]);
    if (static_cast<std::size_t>(perm[j]) == x.batch_axis) {
      out.batch_axis = j;
      if (x.batch_alone) continue;
    }
    p.push_back(perm[j] - (x.batch_alone && perm[j] > static_cast<std::int64_t>(x.batch_axis)));
  }
  const std::size_t r = p.size();
  bool identity = true;
  for (std::size_t k = 0; k < r; ++k) identity = identity && p[k] == static_cast<std::int64_t>(k);
  if (identity) return SetAct(node, 0, out);
  if (x.scale != 1.0 || x.causal) Fail(node, "transposes a scaled or masked attention score");
  bool last_two = r >= 2 && p[r - 1] == static_cast<std::int64_t>(r - 2) &&
                  p[r - 2] == static_cast<std::int64_t>(r - 1);
  for (std::size_t k = 0; k + 2 < r; ++k) last_two = last_two && p[k] == static_cast<std::int64_t>(k);
  if (x.key_transposed) {
    if (!last_two) Fail(node, "transposes a transposed key other than back");
    out.key_transposed = false;
    return SetAct(node, 0, out);
  }
  const Shape in = x.SampleShape();
  if (last_two && r >= 3) {  // K^T, read by a MatMul
    out.t = Use(node, 0);
    out.key_transposed = true;
    return SetAct(node, 0, out);
  }
  // A swap of two leading blocks of axes [0, i) and [i, j), the rest kept:
  // (X, Y, Z) -> (Y, X, Z), SplitHeads' view (or MergeHeads' for
  // (A, S, D) -> (S, A, D)).
  for (std::size_t j = 2; j <= r; ++j) {
    const auto i = static_cast<std::size_t>(p[0]);
    if (i == 0 || i >= j) continue;
    bool block = true;
    for (std::size_t k = 0; k < r; ++k) {
      const std::int64_t want = k < j - i ? static_cast<std::int64_t>(i + k)
                                : k < j   ? static_cast<std::int64_t>(k - (j - i))
                                          : static_cast<std::int64_t>(k);
      block = block && p[k] == want;
    }
    if (!block) continue;
    const std::int64_t xs = Prod(in, 0, i), ys = Prod(in, i, j), zs = Prod(in, j, r);
    const Op& producer = builder_.graph().op(x.t.op);
    if (r == 3 && i == 1 && j == 2 && x.t.shape == in && producer.kind != OpKind::kReshape) {
      out.t = builder_.MergeHeads(OpName(node), x.t);
    } else {
      Tensor src = x.t;
      if (src.shape != Shape{xs, ys * zs}) {
        src = builder_.Reshape(OpName(node, "_rows"), src, {xs, ys * zs});
      }
      out.t = builder_.SplitHeads(OpName(node), src, ys);
    }
    return SetAct(node, 0, out);
  }
  std::string text;
  for (std::int64_t v : perm) {
    if (!text.empty()) text += ", ";
    text += std::to_string(v);
  }
  Fail(node, "the permutation (" + text + ") of " + DimsToString(x.dims) +
                 " is no view dtsim has: a swap of two leading groups of axes (attention "
                 "heads) or of the last two (a key read by MatMul)");
}

void Importer::SliceAct(const onnx::NodeProto& node) {
  const Act& x = ActOf(node, 0);
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (node.input_size() > 1) {
    starts = Const(node, 1).Ints("starts");
    ends = Const(node, 2).Ints("ends");
    if (node.input_size() > 3 && !node.input(3).empty()) axes = Const(node, 3).Ints("axes");
    if (node.input_size() > 4 && !node.input(4).empty()) steps = Const(node, 4).Ints("steps");
  } else {
    starts = Ints(node, "starts", {});
    ends = Ints(node, "ends", {});
    axes = Ints(node, "axes", {});
  }
  if (axes.empty()) {
    for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    Fail(node, "starts, ends, axes and steps differ in length");
  }
  Tensor t = Use(node, 0);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::int64_t full_axis = NormalizeAxis(axes[k], x.dims.size());
    const std::int64_t d = x.dims[static_cast<std::size_t>(full_axis)];
    auto clamp = [&](std::int64_t v) { return std::clamp(v < 0 ? v + d : v, std::int64_t{0}, d); };
    const std::int64_t b = clamp(starts[k]), e = clamp(ends[k]);
    if (b == 0 && e >= d && steps[k] == 1) continue;  // all of it
    if (steps[k] != 1) Fail(node, "only slices of step 1 are supported");
    if (e <= b) Fail(node, "the slice is empty");
    const int axis = SampleAxis(node, x, full_axis);
    t = builder_.Slice(OpName(node, k == 0 ? std::string() : Suffix(k)), t, axis, b, e - b);
  }
  SetAct(node, 0, FromSample(x, t));
}

void Importer::Split(const onnx::NodeProto& node) {
  const Act& x = ActOf(node, 0);
  const std::int64_t full_axis = NormalizeAxis(Int(node, "axis", 0), x.dims.size());
  const std::int64_t d = x.dims[static_cast<std::size_t>(full_axis)];
  std::vector<std::int64_t> sizes = node.input_size() > 1 && !node.input(1).empty()
                                        ? Const(node, 1).Ints("the split")
                                        : Ints(node, "split", {});
  if (sizes.empty()) {
    const std::int64_t n = node.output_size();
    if (d % n != 0) Fail(node, "cannot split " + std::to_string(d) + " into equal parts");
    sizes.assign(static_cast<std::size_t>(n), d / n);
  }
  if (static_cast<int>(sizes.size()) != node.output_size()) {
    Fail(node, "the split has " + std::to_string(sizes.size()) + " sizes for " +
                   std::to_string(node.output_size()) + " outputs");
  }
  const int axis = SampleAxis(node, x, full_axis);
  const Tensor t = Use(node, 0);
  std::int64_t begin = 0;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] < 1 || begin + sizes[k] > d) Fail(node, "the split sizes exceed the axis");
    const Tensor part =
        builder_.Slice(OpName(node, Suffix(k)), t, axis, begin, sizes[k]);
    begin += sizes[k];
    SetAct(node, static_cast<int>(k), FromSample(x, part));
  }
  if (begin != d) Fail(node, "the split sizes do not add up to the axis");
}

void Importer::GatherAct(const onnx::NodeProto& node) {
  if (IsConst(node, 0)) {  // rows of a table: an embedding
    const OnnxConst& table = Const(node, 0);
    const onnx::TensorProto* w = table.weight.empty() ? nullptr : initializers_[table.weight];
    if (w == nullptr || table.transposed) Fail(node, "input 0 must be a weight (an embedding table)");
    CheckWeight(node, *w);
    if (table.dims.size() != 2 || Int(node, "axis", 0) != 0) {
      Fail(node, "only row lookups in a 2-D table (an embedding) are supported");
    }
    const Act& ids = ActOf(node, 1);
    ClaimWeight(node, table.weight, true);
    const Tensor t =
        builder_.Embedding(OpName(node), Use(node, 1), table.dims[0], table.dims[1]);
    return SetAct(node, 0, FromSample(ids, t));
  }
  // One index of an activation's axis (BERT's first token): a slice.
  const Act& x = ActOf(node, 0);
  const OnnxConst& index = Const(node, 1);
  const std::vector<std::int64_t> i = index.Ints("the index");
  if (i.size() != 1) Fail(node, "only one index of an activation is read");
  const std::int64_t full_axis = NormalizeAxis(Int(node, "axis", 0), x.dims.size());
  const std::int64_t d = x.dims[static_cast<std::size_t>(full_axis)];
  const std::int64_t at = i[0] < 0 ? i[0] + d : i[0];
  if (at < 0 || at >= d) Fail(node, "index " + std::to_string(i[0]) + " is outside the axis");
  const Tensor t = builder_.Slice(OpName(node), Use(node, 0), SampleAxis(node, x, full_axis), at, 1);
  Act a = FromSample(x, t);
  if (index.dims.empty()) {  // a scalar index drops the axis
    a.dims.erase(a.dims.begin() + full_axis);
    if (full_axis < static_cast<std::int64_t>(a.batch_axis)) --a.batch_axis;
  }
  SetAct(node, 0, a);
}

void Importer::Concat(const onnx::NodeProto& node) {
  if (node.input_size() == 1) return SetAct(node, 0, ActOf(node, 0));  // DenseNet's first layer
  int first = -1;
  for (int k = 0; k < node.input_size() && first < 0; ++k) {
    if (IsAct(node, k)) first = k;
  }
  const Act& x = ActOf(node, first < 0 ? 0 : first);
  const std::int64_t full_axis = NormalizeAxis(Int(node, "axis", 1), x.dims.size());
  const int axis = SampleAxis(node, x, full_axis);
  const Tensor anchor = Use(node, first);
  std::vector<Tensor> parts;
  for (int k = 0; k < node.input_size(); ++k) {
    if (IsAct(node, k)) {
      parts.push_back(Use(node, k));
      continue;
    }
    // A learned constant joined to the sequence (ViT's class token): a
    // table of its rows, read in order.
    const OnnxConst& c = Const(node, k);
    if (c.weight.empty() || c.transposed || c.dims.size() != x.dims.size() ||
        !x.batch_alone || c.dims[x.batch_axis] != 1) {
      Fail(node, "input " + std::to_string(k) + " is a constant that is not a learned table "
                 "broadcast over the batch");
    }
    Shape rows = c.dims;
    rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(x.batch_axis));
    const std::int64_t hidden = rows.back();
    rows.pop_back();
    if (rows.empty()) Fail(node, "input " + std::to_string(k) + " is a vector, not a table");
    const std::int64_t vocab = NumElements(rows);
    ClaimWeight(node, c.weight, true);
    const Tensor ids = IdsOfShape(node, anchor, rows);
    parts.push_back(builder_.Embedding(OpName(node, "_table" + Suffix(static_cast<std::size_t>(k))), ids, vocab,
                                       hidden,
                                       vocab == 1 ? EmbeddingIds::kZeros : EmbeddingIds::kPositions));
  }
  SetAct(node, 0, FromSample(x, builder_.Concat(OpName(node), parts, axis)));
}

void Importer::Add(const onnx::NodeProto& node) {
  if (node.input_size() != 2) Fail(node, "an addition has two inputs");
  if (IsAct(node, 0) && IsAct(node, 1)) {
    const Act& a = ActOf(node, 0);
    const Act& b = ActOf(node, 1);
    if (a.SampleShape() != b.SampleShape()) {
      Fail(node, "broadcasting " + ShapeToString(a.SampleShape()) + " + " +
                     ShapeToString(b.SampleShape()) + " is not supported");
    }
    const Tensor ta = Use(node, 0);
    const Tensor tb = Use(node, 1);
    return SetAct(node, 0, FromSample(a, builder_.Add(OpName(node), ta, tb)));
  }
  const int act = IsAct(node, 0) ? 0 : 1;
  const OnnxConst& c = Const(node, 1 - act);
  const Act& x = ActOf(node, act);
  // An additive mask of 0 and -inf above the diagonal: a causal softmax.
  const Shape s = x.SampleShape();
  if (c.values && s.size() >= 2 &&
      std::all_of(c.values->begin(), c.values->end(),
                  [](double v) { return v == 0 || v == -INFINITY; }) &&
      CausalMask(FoldBinary("Equal", c, MinusInfinity()), true, s.back())) {
    Act out = x;
    out.causal = true;
    return SetAct(node, 0, out);
  }
  if (TableAdd(node, act, c)) return;
  Fail(node, "adding a constant " + DimsToString(c.dims) + " to " + ShapeToString(s) +
                 " that is neither the bias of a MatMul nor a position table is not supported");
}

void Importer::MulDiv(const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  if (node.input_size() != 2) Fail(node, "a " + op + " has two inputs");
  if (op == "Div" && GeluPattern(node)) return;
  if (IsAct(node, 0) && IsAct(node, 1)) {
    if (op == "Div") Fail(node, "dividing two activations is not supported");
    const Act& a = ActOf(node, 0);
    const Act& b = ActOf(node, 1);
    const Shape sa = a.SampleShape(), sb = b.SampleShape();
    auto fits = [](const Shape& big, const Shape& small) {
      if (big.size() != small.size()) return false;
      for (std::size_t k = 0; k < big.size(); ++k) {
        if (small[k] != big[k] && small[k] != 1) return false;
      }
      return true;
    };
    const bool a_big = fits(sa, sb);
    if (!a_big && !fits(sb, sa)) {
      Fail(node, "multiplying " + ShapeToString(sa) + " by " + ShapeToString(sb) +
                     ": one must broadcast into the other");
    }
    const Tensor ta = Use(node, 0);
    const Tensor tb = Use(node, 1);
    const Tensor t = a_big ? builder_.Mul(OpName(node), ta, tb) : builder_.Mul(OpName(node), tb, ta);
    return SetAct(node, 0, FromSample(a_big ? a : b, t));
  }
  const int act = IsAct(node, 0) ? 0 : 1;
  const OnnxConst& c = Const(node, 1 - act);
  const std::optional<double> v = c.Scalar();
  if (!v || *v == 0 || (op == "Div" && act == 1)) {
    Fail(node, op + " of an activation by a constant " + DimsToString(c.dims) +
                   " is read only as attention's scale (a known number, read by a Softmax) "
                   "or inside a decomposed LayerNorm or GELU");
  }
  Act out = ActOf(node, act);
  out.scale *= op == "Mul" ? *v : 1.0 / *v;
  SetAct(node, 0, out);
}

}  // namespace dtsim::models::onnx_import
