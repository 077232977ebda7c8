#include "models/onnx_constants.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "models/op.h"

namespace dtsim::models::onnx_import {
namespace {

std::int64_t Product(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxModelCount) {
      throw UserError("the constant " + DimsToString(dims) + " has more than 2^53 elements");
    }
  }
  return n;
}

std::vector<std::int64_t> Strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> s(dims.size(), 1);
  for (std::size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

// Whether values of a constant of `dims` are worth computing.
bool Foldable(const std::vector<std::int64_t>& dims) {
  return Product(dims) <= kMaxFoldedElements;
}

// The index into `in` (broadcast to `out`) of output element `flat`.
std::int64_t BroadcastIndex(std::int64_t flat, const std::vector<std::int64_t>& out,
                            const std::vector<std::int64_t>& in) {
  const std::vector<std::int64_t> in_strides = Strides(in);
  std::int64_t index = 0;
  const std::size_t shift = out.size() - in.size();
  for (std::size_t k = out.size(); k-- > 0;) {
    const std::int64_t coord = flat % out[k];
    flat /= out[k];
    if (k >= shift && in[k - shift] != 1) index += coord * in_strides[k - shift];
  }
  return index;
}

double Apply(const std::string& op, double a, double b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return a / b;
  if (op == "Pow") return std::pow(a, b);
  if (op == "Equal") return a == b ? 1 : 0;
  if (op == "Less") return a < b ? 1 : 0;
  if (op == "Greater") return a > b ? 1 : 0;
  if (op == "And") return (a != 0 && b != 0) ? 1 : 0;
  if (op == "Or") return (a != 0 || b != 0) ? 1 : 0;
  throw UserError("operator '" + op + "' is not folded on constants");
}

}  // namespace

std::string DimsToString(const std::vector<std::int64_t>& dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (k > 0) s += 'x';
    s += std::to_string(dims[k]);
  }
  return s;
}

std::int64_t OnnxConst::Elements() const { return Product(dims); }

std::optional<double> OnnxConst::Scalar() const {
  if (!values || values->size() != 1) return std::nullopt;
  return (*values)[0];
}

std::vector<std::int64_t> OnnxConst::Ints(const std::string& what) const {
  if (!values) throw UserError(what + " is a constant whose values are not in the file");
  std::vector<std::int64_t> out;
  for (double v : *values) {
    if (v != std::floor(v) || std::fabs(v) > static_cast<double>(kMaxModelCount)) {
      throw UserError(what + " holds " + std::to_string(v) + ", not an integer");
    }
    out.push_back(static_cast<std::int64_t>(v));
  }
  return out;
}

std::int64_t NormalizeAxis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw UserError("axis " + std::to_string(axis) + " is outside a tensor of " +
                    std::to_string(rank) + " dimensions");
  }
  return axis < 0 ? axis + r : axis;
}

std::vector<std::int64_t> BroadcastDims(const std::vector<std::int64_t>& a,
                                        const std::vector<std::int64_t>& b) {
  std::vector<std::int64_t> out(std::max(a.size(), b.size()), 1);
  for (std::size_t k = 0; k < out.size(); ++k) {
    const std::int64_t x = k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
    const std::int64_t y = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) {
      throw UserError("shapes " + DimsToString(a) + " and " + DimsToString(b) +
                      " do not broadcast");
    }
    out[k] = x == 1 ? y : x;
  }
  return out;
}

OnnxConst FoldBinary(const std::string& op, const OnnxConst& a, const OnnxConst& b) {
  OnnxConst out;
  out.dims = BroadcastDims(a.dims, b.dims);
  const bool logical = op == "Equal" || op == "Less" || op == "Greater" || op == "And" ||
                       op == "Or";
  out.kind = logical ? ElementKind::kBool
             : a.kind == ElementKind::kFloat || b.kind == ElementKind::kFloat
                 ? ElementKind::kFloat
                 : ElementKind::kInt;
  Apply(op, 1, 1);  // refuses operators it does not know
  if (!a.values || !b.values || !Foldable(out.dims)) return out;
  const std::int64_t n = Product(out.dims);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    double r = Apply(op, (*a.values)[static_cast<std::size_t>(BroadcastIndex(i, out.dims, a.dims))],
                     (*b.values)[static_cast<std::size_t>(BroadcastIndex(i, out.dims, b.dims))]);
    if (op == "Div" && out.kind == ElementKind::kInt) r = std::trunc(r);
    v[static_cast<std::size_t>(i)] = r;
  }
  out.values = std::move(v);
  return out;
}

OnnxConst FoldUnary(const std::string& op, const OnnxConst& x, ElementKind kind) {
  OnnxConst out = x;
  out.table.reset();
  if (op != "Identity" && op != "Cast") out.weight.clear();
  out.kind = op == "Cast" ? kind : op == "Not" ? ElementKind::kBool : x.kind;
  if (!out.values) return out;
  for (double& v : *out.values) {
    if (op == "Not") {
      v = v == 0 ? 1 : 0;
    } else if (op == "Neg") {
      v = -v;
    } else if (op == "Sqrt") {
      v = std::sqrt(v);
    } else if (op == "Cast") {
      if (kind == ElementKind::kInt) v = std::trunc(v);
      if (kind == ElementKind::kBool) v = v != 0 ? 1 : 0;
    } else if (op != "Identity") {
      throw UserError("operator '" + op + "' is not folded on constants");
    }
  }
  return out;
}

OnnxConst FoldWhere(const OnnxConst& cond, const OnnxConst& a, const OnnxConst& b) {
  OnnxConst out;
  out.dims = BroadcastDims(cond.dims, BroadcastDims(a.dims, b.dims));
  out.kind = a.kind;
  if (!cond.values || !a.values || !b.values || !Foldable(out.dims)) return out;
  const std::int64_t n = Product(out.dims);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const bool c = (*cond.values)[static_cast<std::size_t>(BroadcastIndex(i, out.dims, cond.dims))] != 0;
    const OnnxConst& src = c ? a : b;
    v[static_cast<std::size_t>(i)] =
        (*src.values)[static_cast<std::size_t>(BroadcastIndex(i, out.dims, src.dims))];
  }
  out.values = std::move(v);
  return out;
}

OnnxConst FoldGather(const OnnxConst& data, const OnnxConst& indices, std::int64_t axis) {
  axis = NormalizeAxis(axis, data.dims.size());
  const std::vector<std::int64_t> ids = indices.Ints("the indices of a Gather");
  const std::int64_t size = data.dims[static_cast<std::size_t>(axis)];
  OnnxConst out;
  out.kind = data.kind;
  out.dims.assign(data.dims.begin(), data.dims.begin() + axis);
  out.dims.insert(out.dims.end(), indices.dims.begin(), indices.dims.end());
  out.dims.insert(out.dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  std::vector<std::int64_t> normalized;
  for (std::int64_t id : ids) {
    if (id < -size || id >= size) {
      throw UserError("index " + std::to_string(id) + " is outside dimension " +
                      std::to_string(axis) + " of size " + std::to_string(size));
    }
    normalized.push_back(id < 0 ? id + size : id);
  }
  if (!data.weight.empty() && !data.transposed && data.dims.size() == 2 && axis == 0) {
    TableRows t{.table = data.weight, .rows = data.dims[0], .width = data.dims[1]};
    const std::int64_t last = indices.dims.empty() ? 1 : indices.dims.back();
    t.zeros = std::all_of(normalized.begin(), normalized.end(), [](std::int64_t i) { return i == 0; });
    t.positions = !normalized.empty();
    for (std::size_t i = 0; i < normalized.size(); ++i) {
      t.positions = t.positions && normalized[i] == static_cast<std::int64_t>(i) % last;
    }
    out.table = t;
  }
  if (!data.values || !Foldable(out.dims)) return out;
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t k = 0; k < axis; ++k) outer *= data.dims[static_cast<std::size_t>(k)];
  for (std::size_t k = static_cast<std::size_t>(axis) + 1; k < data.dims.size(); ++k) inner *= data.dims[k];
  std::vector<double> v;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t id : normalized) {
      for (std::int64_t i = 0; i < inner; ++i) {
        v.push_back((*data.values)[static_cast<std::size_t>((o * size + id) * inner + i)]);
      }
    }
  }
  out.values = std::move(v);
  return out;
}

OnnxConst FoldSlice(const OnnxConst& x, const std::vector<std::int64_t>& starts,
                    const std::vector<std::int64_t>& ends, const std::vector<std::int64_t>& axes,
                    const std::vector<std::int64_t>& steps) {
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    throw UserError("a Slice needs as many starts, ends, axes and steps");
  }
  const std::size_t rank = x.dims.size();
  std::vector<std::int64_t> begin(rank, 0), step(rank, 1), dims = x.dims;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const auto a = static_cast<std::size_t>(NormalizeAxis(axes[i], rank));
    const std::int64_t d = x.dims[a];
    if (steps[i] == 0) throw UserError("a Slice step is 0");
    auto clamp = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
      if (v < 0) v = v < -d ? lo : v + d;
      return std::clamp(v, lo, hi);
    };
    if (steps[i] > 0) {
      const std::int64_t s = clamp(starts[i], 0, d), e = clamp(ends[i], 0, d);
      dims[a] = e > s ? (e - s + steps[i] - 1) / steps[i] : 0;
      begin[a] = s;
    } else {
      const std::int64_t s = clamp(starts[i], -1, d - 1), e = clamp(ends[i], -1, d - 1);
      dims[a] = s > e ? (s - e - steps[i] - 1) / -steps[i] : 0;
      begin[a] = s;
    }
    step[a] = steps[i];
  }
  OnnxConst out;
  out.dims = dims;
  out.kind = x.kind;
  if (!x.values || !Foldable(dims)) return out;
  const std::vector<std::int64_t> in_strides = Strides(x.dims);
  const std::int64_t n = Product(dims);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t flat = i, index = 0;
    for (std::size_t k = rank; k-- > 0;) {
      const std::int64_t coord = flat % dims[k];
      flat /= dims[k];
      index += (begin[k] + coord * step[k]) * in_strides[k];
    }
    v[static_cast<std::size_t>(i)] = (*x.values)[static_cast<std::size_t>(index)];
  }
  out.values = std::move(v);
  return out;
}

OnnxConst FoldConcat(const std::vector<OnnxConst>& parts, std::int64_t axis) {
  if (parts.empty()) throw UserError("a Concat has no input");
  const std::size_t rank = parts[0].dims.size();
  const auto a = static_cast<std::size_t>(NormalizeAxis(axis, rank));
  OnnxConst out;
  out.dims = parts[0].dims;
  out.dims[a] = 0;
  out.kind = parts[0].kind;
  bool known = true;
  for (const OnnxConst& p : parts) {
    std::vector<std::int64_t> x = p.dims, y = parts[0].dims;
    if (x.size() != rank) throw UserError("Concat inputs of different ranks");
    x[a] = y[a] = 0;
    if (x != y) {
      throw UserError("Concat inputs " + DimsToString(parts[0].dims) + " and " +
                      DimsToString(p.dims) + " differ beyond axis " + std::to_string(a));
    }
    out.dims[a] += p.dims[a];
    known = known && p.values.has_value();
  }
  if (!known || !Foldable(out.dims)) return out;
  std::int64_t outer = 1;
  for (std::size_t k = 0; k < a; ++k) outer *= out.dims[k];
  std::vector<double> v;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const OnnxConst& p : parts) {
      const std::int64_t chunk = p.Elements() / std::max<std::int64_t>(outer, 1);
      v.insert(v.end(), p.values->begin() + o * chunk, p.values->begin() + (o + 1) * chunk);
    }
  }
  out.values = std::move(v);
  return out;
}

OnnxConst FoldTranspose(const OnnxConst& x, const std::vector<std::int64_t>& perm) {
  const std::size_t rank = x.dims.size();
  if (perm.size() != rank) throw UserError("a Transpose's perm does not match the rank");
  OnnxConst out;
  out.kind = x.kind;
  std::vector<bool> seen(rank, false);
  for (std::int64_t p : perm) {
    if (p < 0 || static_cast<std::size_t>(p) >= rank || seen[static_cast<std::size_t>(p)]) {
      throw UserError("a Transpose's perm is not a permutation");
    }
    seen[static_cast<std::size_t>(p)] = true;
    out.dims.push_back(x.dims[static_cast<std::size_t>(p)]);
  }
  if (!x.weight.empty() && rank == 2 && perm[0] == 1) {
    out.weight = x.weight;
    out.transposed = !x.transposed;
  }
  if (!x.values || !Foldable(out.dims)) return out;
  const std::vector<std::int64_t> in_strides = Strides(x.dims);
  const std::int64_t n = Product(out.dims);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t flat = i, index = 0;
    for (std::size_t k = rank; k-- > 0;) {
      index += (flat % out.dims[k]) * in_strides[static_cast<std::size_t>(perm[k])];
      flat /= out.dims[k];
    }
    v[static_cast<std::size_t>(i)] = (*x.values)[static_cast<std::size_t>(index)];
  }
  out.values = std::move(v);
  return out;
}

OnnxConst FoldReshape(const OnnxConst& x, std::vector<std::int64_t> dims) {
  if (Product(dims) != x.Elements()) {
    throw UserError("cannot view the constant " + DimsToString(x.dims) + " as " +
                    DimsToString(dims));
  }
  OnnxConst out = x;
  out.dims = std::move(dims);
  out.transposed = false;
  if (x.transposed) out.weight.clear();
  return out;
}

OnnxConst FoldExpand(const OnnxConst& x, const std::vector<std::int64_t>& shape) {
  OnnxConst out;
  out.dims = BroadcastDims(x.dims, shape);
  out.kind = x.kind;
  if (out.dims.size() >= x.dims.size() && Product(out.dims) == x.Elements()) {
    out.weight = x.weight;  // only leading 1s added: the same weight
    out.table = x.table;
  }
  if (!x.values || !Foldable(out.dims)) return out;
  const std::int64_t n = Product(out.dims);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    v[static_cast<std::size_t>(i)] =
        (*x.values)[static_cast<std::size_t>(BroadcastIndex(i, out.dims, x.dims))];
  }
  out.values = std::move(v);
  return out;
}

OnnxConst FoldRange(double start, double limit, double delta, ElementKind kind) {
  if (delta == 0) throw UserError("a Range's delta is 0");
  const double count = std::max(0.0, std::ceil((limit - start) / delta));
  if (count > static_cast<double>(kMaxFoldedElements)) {
    throw UserError("a Range of " + std::to_string(count) + " elements is too long to fold");
  }
  OnnxConst out;
  out.kind = kind;
  out.dims = {static_cast<std::int64_t>(count)};
  std::vector<double> v;
  for (std::int64_t i = 0; i < out.dims[0]; ++i) v.push_back(start + static_cast<double>(i) * delta);
  out.values = std::move(v);
  return out;
}

OnnxConst FoldConstantOfShape(const std::vector<std::int64_t>& shape, double fill,
                              ElementKind kind) {
  OnnxConst out;
  out.dims = shape;
  out.kind = kind;
  if (Foldable(shape)) out.values = std::vector<double>(static_cast<std::size_t>(Product(shape)), fill);
  return out;
}

std::vector<std::int64_t> ReshapeTarget(const std::vector<std::int64_t>& in,
                                        const std::vector<std::int64_t>& target) {
  std::vector<std::int64_t> out;
  std::optional<std::size_t> infer;
  for (std::size_t k = 0; k < target.size(); ++k) {
    std::int64_t d = target[k];
    if (d == 0) {
      if (k >= in.size()) throw UserError("0 copies a dimension the input lacks");
      d = in[k];
    } else if (d == -1) {
      if (infer) throw UserError("more than one dimension is inferred (-1)");
      infer = k;
      d = 1;
    } else if (d < 0) {
      throw UserError("dimension " + std::to_string(d) + " is negative");
    }
    out.push_back(d);
  }
  const std::int64_t elements = Product(in);
  const std::int64_t rest = Product(out);
  if (infer) {
    if (rest == 0 || elements % rest != 0) {
      throw UserError("cannot infer a dimension of " + DimsToString(target) + " from " +
                      DimsToString(in));
    }
    out[*infer] = elements / rest;
  } else if (rest != elements) {
    throw UserError("reshaping " + DimsToString(in) + " to " + DimsToString(out) +
                    " changes the number of elements");
  }
  return out;
}

}  // namespace dtsim::models::onnx_import
