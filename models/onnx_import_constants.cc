// The importer's constants: initializers and Constant nodes read into
// OnnxConst, and the nodes whose inputs are all constants folded
// (onnx_constants.h).
#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "models/onnx_import.h"
#include "models/onnx_importer.h"

namespace dtsim::models::onnx_import {
namespace {

ElementKind KindOf(int t) {
  if (IsFloatType(t)) return ElementKind::kFloat;
  return t == kBool ? ElementKind::kBool : ElementKind::kInt;
}

template <typename T>
std::vector<double> RawValues(const std::string& raw) {
  std::vector<double> v;
  for (std::size_t at = 0; at + sizeof(T) <= raw.size(); at += sizeof(T)) {
    T x;
    std::memcpy(&x, raw.data() + at, sizeof(T));  // little-endian, as ONNX stores it
    v.push_back(static_cast<double>(x));
  }
  return v;
}

}  // namespace

OnnxConst Importer::ReadTensor(const onnx::NodeProto* node, const onnx::TensorProto& t) const {
  OnnxConst c;
  c.kind = KindOf(t.data_type());
  if (t.dims_size() > kMaxOnnxRank + 1) {
    if (node != nullptr) Fail(*node, "a constant has more than " + std::to_string(kMaxOnnxRank + 1) + " dimensions");
    c.dims.assign(t.dims().begin(), t.dims().begin() + kMaxOnnxRank + 1);
    return c;
  }
  c.dims.assign(t.dims().begin(), t.dims().end());
  if (node == nullptr) c.weight = t.name();
  std::int64_t n = 1;
  for (std::int64_t d : c.dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxFoldedElements) return c;
  }
  std::vector<double> v;
  const int type = t.data_type();
  if (t.int64_data_size() > 0) {
    v.assign(t.int64_data().begin(), t.int64_data().end());
  } else if (t.int32_data_size() > 0) {
    v.assign(t.int32_data().begin(), t.int32_data().end());
  } else if (t.float_data_size() > 0) {
    v.assign(t.float_data().begin(), t.float_data().end());
  } else if (type == kInt64) {
    v = RawValues<std::int64_t>(t.raw_data());
  } else if (type == kInt32) {
    v = RawValues<std::int32_t>(t.raw_data());
  } else if (type == kFloat) {
    v = RawValues<float>(t.raw_data());
  } else if (type == kDouble) {
    v = RawValues<double>(t.raw_data());
  } else if (type == kBool || type == kUint8) {
    v = RawValues<std::uint8_t>(t.raw_data());
  } else if (type == kInt8) {
    v = RawValues<std::int8_t>(t.raw_data());
  }
  if (static_cast<std::int64_t>(v.size()) == n) c.values = std::move(v);
  return c;
}

bool Importer::ImportConstant(const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  if (op == "Constant") {
    const onnx::AttributeProto* v = Attr(node, "value");
    OnnxConst c;
    if (v != nullptr && v->has_t()) {
      c = ReadTensor(&node, v->t());
    } else if ((v = Attr(node, "value_int")) != nullptr) {
      c.kind = ElementKind::kInt;
      c.values = std::vector<double>{static_cast<double>(v->i())};
    } else if ((v = Attr(node, "value_float")) != nullptr) {
      c.values = std::vector<double>{v->f()};
    } else if ((v = Attr(node, "value_ints")) != nullptr) {
      c.kind = ElementKind::kInt;
      c.dims = {v->ints_size()};
      c.values = std::vector<double>(v->ints().begin(), v->ints().end());
    } else if ((v = Attr(node, "value_floats")) != nullptr) {
      c.dims = {v->floats_size()};
      c.values = std::vector<double>(v->floats().begin(), v->floats().end());
    } else {
      Fail(node, "only tensor, int and float constants are read");
    }
    SetConst(node, 0, std::move(c));
    return true;
  }
  if (op == "Shape") {
    std::vector<std::int64_t> dims;
    if (IsAct(node, 0)) {
      dims = ActOf(node, 0).dims;
    } else {
      dims = Const(node, 0).dims;
    }
    const auto rank = static_cast<std::int64_t>(dims.size());
    std::int64_t start = Int(node, "start", 0), end = Int(node, "end", rank);
    start = std::clamp(start < 0 ? start + rank : start, std::int64_t{0}, rank);
    end = std::clamp(end < 0 ? end + rank : end, std::int64_t{0}, rank);
    OnnxConst c;
    c.kind = ElementKind::kInt;
    c.dims = {std::max<std::int64_t>(end - start, 0)};
    c.values = std::vector<double>(dims.begin() + start, dims.begin() + std::max(start, end));
    SetConst(node, 0, std::move(c));
    return true;
  }
  bool any = false;
  for (int k = 0; k < node.input_size(); ++k) {
    if (node.input(k).empty()) continue;
    if (!IsConst(node, k)) return false;
    any = true;
  }
  if (!any && op != "Range" && op != "RandomNormal") return false;
  auto ints_or = [&](int input, std::vector<std::int64_t> fallback) {
    if (input < node.input_size() && !node.input(input).empty()) {
      return Const(node, input).Ints("input " + std::to_string(input));
    }
    return fallback;
  };
  const OnnxConst& x = Const(node, 0);
  OnnxConst out;
  if (op == "Identity" || op == "Not" || op == "Neg" || op == "Sqrt") {
    out = FoldUnary(op, x, x.kind);
  } else if (op == "Cast") {
    out = FoldUnary(op, x, KindOf(static_cast<int>(Int(node, "to", kFloat))));
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" ||
             op == "Equal" || op == "Less" || op == "Greater" || op == "And" || op == "Or") {
    out = FoldBinary(op, x, Const(node, 1));
  } else if (op == "Where") {
    out = FoldWhere(x, Const(node, 1), Const(node, 2));
  } else if (op == "Gather") {
    out = FoldGather(x, Const(node, 1), Int(node, "axis", 0));
  } else if (op == "Slice") {
    const std::vector<std::int64_t> starts = ints_or(1, {});
    std::vector<std::int64_t> axes(starts.size());
    for (std::size_t k = 0; k < axes.size(); ++k) axes[k] = static_cast<std::int64_t>(k);
    out = FoldSlice(x, starts, ints_or(2, {}), ints_or(3, axes),
                    ints_or(4, std::vector<std::int64_t>(starts.size(), 1)));
  } else if (op == "Concat") {
    std::vector<OnnxConst> parts;
    for (int k = 0; k < node.input_size(); ++k) parts.push_back(Const(node, k));
    out = FoldConcat(parts, Int(node, "axis", 0));
  } else if (op == "Transpose") {
    std::vector<std::int64_t> reverse;
    for (std::size_t k = x.dims.size(); k-- > 0;) reverse.push_back(static_cast<std::int64_t>(k));
    out = FoldTranspose(x, Ints(node, "perm", reverse));
  } else if (op == "Reshape") {
    out = FoldReshape(x, ReshapeTarget(x.dims, ints_or(1, {})));
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    std::vector<std::int64_t> axes = ints_or(1, Ints(node, "axes", {}));
    std::vector<std::int64_t> dims = x.dims;
    if (op == "Unsqueeze") {
      const std::size_t rank = dims.size() + axes.size();
      for (std::int64_t& a : axes) a = NormalizeAxis(a, rank);
      std::sort(axes.begin(), axes.end());
      for (std::int64_t a : axes) dims.insert(dims.begin() + a, 1);
    } else {
      for (std::int64_t& a : axes) a = NormalizeAxis(a, dims.size());
      std::vector<std::int64_t> kept;
      for (std::size_t k = 0; k < dims.size(); ++k) {
        const bool listed = std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(k)) != axes.end();
        if ((axes.empty() && dims[k] == 1) || listed) continue;
        kept.push_back(dims[k]);
      }
      dims = kept;
    }
    out = FoldReshape(x, dims);
  } else if (op == "Expand") {
    out = FoldExpand(x, ints_or(1, {}));
  } else if (op == "ConstantOfShape") {
    const onnx::AttributeProto* v = Attr(node, "value");
    OnnxConst fill;
    fill.values = std::vector<double>{0.0};
    if (v != nullptr && v->has_t()) fill = ReadTensor(&node, v->t());
    if (!fill.Scalar()) Fail(node, "the fill value must be one known number");
    out = FoldConstantOfShape(x.Ints("the shape"), *fill.Scalar(), fill.kind);
  } else if (op == "Range") {
    const std::optional<double> start = x.Scalar(), limit = Const(node, 1).Scalar(),
                                delta = Const(node, 2).Scalar();
    if (!start || !limit || !delta) Fail(node, "start, limit and delta must be known numbers");
    out = FoldRange(*start, *limit, *delta, x.kind);
  } else {
    Fail(node, "operator '" + op + "' on constants is not folded");
  }
  SetConst(node, 0, std::move(out));
  return true;
}

}  // namespace dtsim::models::onnx_import
