// Patterns exporters write for one layer, recognised as that layer so that
// FLOPs, parameters and saved activations are the layer's, not the sum of
// its pieces. Each match is exact: every intermediate value is read only
// inside the pattern, every constant is the one the formula needs. A
// pattern that does not match leaves its nodes to be imported one by one,
// where the pieces dtsim has no op for are refused.
#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "models/onnx_importer.h"

namespace dtsim::models::onnx_import {
namespace {

// The input of a two-input `node` that is not `value`; "" when neither is.
std::string Other(const onnx::NodeProto& node, const std::string& value) {
  if (node.input_size() != 2) return "";
  if (node.input(0) == value) return node.input(1);
  if (node.input(1) == value) return node.input(0);
  return "";
}

bool Near(std::optional<double> v, double want) {
  return v && std::fabs(*v - want) <= 1e-6 * std::max(1.0, std::fabs(want));
}

}  // namespace

// Decomposed LayerNorm (PyTorch's export below opset 17), x (..., D):
//   m = ReduceMean(x, -1); d = Sub(x, m); v = ReduceMean(Pow(d, 2), -1)
//   y = Add(Mul(Div(d, Sqrt(Add(v, eps))), gamma), beta)
// with gamma and beta weights of D elements: one LayerNorm.
bool Importer::LayerNormPattern(const onnx::NodeProto& node) {
  if (!IsAct(node, 0)) return false;
  const Act& x = ActOf(node, 0);
  const auto last_axis = [&](const onnx::NodeProto& r) {
    std::vector<std::int64_t> axes = Ints(r, "axes", {});
    if (axes.empty() && r.input_size() > 1 && IsConst(r, 1) && Const(r, 1).values) {
      axes = Const(r, 1).Ints("the axes");
    }
    return axes.size() == 1 &&
           (axes[0] == -1 || axes[0] == static_cast<std::int64_t>(x.dims.size()) - 1) &&
           Int(r, "keepdims", 1) == 1;
  };
  const std::string& in = node.input(0);
  if (!last_axis(node)) return false;
  const onnx::NodeProto* sub = OnlyReader(node.output(0), "Sub");
  if (sub == nullptr || sub->input_size() != 2 || sub->input(0) != in ||
      sub->input(1) != node.output(0)) {
    return false;
  }
  const std::vector<int>& dr = Readers(sub->output(0));
  if (dr.size() != 2 || dr[0] < 0 || dr[1] < 0) return false;
  const onnx::NodeProto* pow = &NodeAt(dr[0]);
  const onnx::NodeProto* div = &NodeAt(dr[1]);
  if (pow->op_type() != "Pow") std::swap(pow, div);
  const OnnxConst* two = pow->op_type() == "Pow" && pow->input_size() == 2 ? Ahead(pow->input(1)) : nullptr;
  if (pow->op_type() != "Pow" || div->op_type() != "Div" || pow->input(0) != sub->output(0) ||
      two == nullptr || !Near(two->Scalar(), 2.0)) {
    return false;
  }
  const onnx::NodeProto* var = OnlyReader(pow->output(0), "ReduceMean");
  if (var == nullptr || !last_axis(*var)) return false;
  const onnx::NodeProto* eps = OnlyReader(var->output(0), "Add");
  if (eps == nullptr) return false;
  const OnnxConst* e = Ahead(Other(*eps, var->output(0)));
  if (e == nullptr || !e->Scalar() || *e->Scalar() < 0) return false;
  const onnx::NodeProto* sqrt = OnlyReader(eps->output(0), "Sqrt");
  if (sqrt == nullptr || OnlyReader(sqrt->output(0), "Div") != div ||
      div->input(0) != sub->output(0) || div->input(1) != sqrt->output(0)) {
    return false;
  }
  const std::int64_t d = x.dims.back();
  const auto vector_of_d = [&](const std::string& name) {
    const OnnxConst* c = Ahead(name);
    return c != nullptr && !c->weight.empty() && c->dims == std::vector<std::int64_t>{d} ? c
                                                                                       : nullptr;
  };
  const onnx::NodeProto* mul = OnlyReader(div->output(0), "Mul");
  if (mul == nullptr) return false;
  const OnnxConst* gamma = vector_of_d(Other(*mul, div->output(0)));
  const onnx::NodeProto* add = gamma == nullptr ? nullptr : OnlyReader(mul->output(0), "Add");
  const OnnxConst* beta = add == nullptr ? nullptr : vector_of_d(Other(*add, mul->output(0)));
  if (beta == nullptr) return false;
  ClaimWeight(node, gamma->weight, false);
  ClaimWeight(node, beta->weight, false);
  for (const onnx::NodeProto* n : {sub, pow, var, eps, sqrt, div, mul, add}) Consume(*n);
  const Tensor t = builder_.LayerNorm(OpName(node, "_layer_norm"), Use(node, 0));
  acts_[add->output(0)] = FromSample(x, t);
  return true;
}

// Decomposed GELU (erf form, every opset below 20):
//   y = Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
bool Importer::GeluPattern(const onnx::NodeProto& node) {
  if (!IsAct(node, 0) || !IsConst(node, 1) || !Near(Const(node, 1).Scalar(), std::sqrt(2.0))) {
    return false;
  }
  const std::string& x = node.input(0);
  const onnx::NodeProto* erf = OnlyReader(node.output(0), "Erf");
  const onnx::NodeProto* one = erf == nullptr ? nullptr : OnlyReader(erf->output(0), "Add");
  if (one == nullptr) return false;
  const OnnxConst* c1 = Ahead(Other(*one, erf->output(0)));
  if (c1 == nullptr || !Near(c1->Scalar(), 1.0)) return false;
  const onnx::NodeProto* mul = OnlyReader(one->output(0), "Mul");
  if (mul == nullptr || Other(*mul, one->output(0)) != x) return false;
  const onnx::NodeProto* half = OnlyReader(mul->output(0), "Mul");
  if (half == nullptr) return false;
  const OnnxConst* c05 = Ahead(Other(*half, mul->output(0)));
  if (c05 == nullptr || !Near(c05->Scalar(), 0.5)) return false;
  for (const onnx::NodeProto* n : {erf, one, mul, half}) Consume(*n);
  const Act& xa = ActOf(node, 0);
  acts_[half->output(0)] = FromSample(xa, builder_.Gelu(OpName(node, "_gelu"), Use(node, 0)));
  return true;
}

// Sigmoid(x) read only by Mul(x, Sigmoid(x)) is SiLU (Swish); any other
// Sigmoid is one (squeeze-excitation's gate).
void Importer::Sigmoid(const onnx::NodeProto& node) {
  const Act& x = ActOf(node, 0);
  const onnx::NodeProto* mul = OnlyReader(node.output(0), "Mul");
  if (mul != nullptr && Other(*mul, node.output(0)) == node.input(0)) {
    Consume(*mul);
    acts_[mul->output(0)] = FromSample(x, builder_.Silu(OpName(node, "_silu"), Use(node, 0)));
    return;
  }
  SetAct(node, 0, FromSample(x, builder_.Sigmoid(OpName(node), Use(node, 0))));
}

// Softmax over the last axis; a pending scale and causal mask (attention
// scores) become its options.
void Importer::Softmax(const onnx::NodeProto& node) {
  Act x = ActOf(node, 0);
  if (SampleAxis(node, x, Int(node, "axis", -1)) + 1 != static_cast<int>(x.SampleShape().size())) {
    Fail(node, "only a softmax over the last axis is supported");
  }
  const SoftmaxSpec spec{.causal = x.causal, .scale = x.scale};
  x.causal = false;
  x.scale = 1.0;
  const Tensor t = Materialize(node, x, OpName(node, "_in"));
  if (node.output(0) == output_name_) {
    if (spec.causal || spec.scale != 1.0) Fail(node, "the model's output is a masked softmax");
    // The model's output probabilities: training takes the loss here.
    builder_.SoftmaxCrossEntropy(OpName(node, "_loss"), t, t.shape.back());
    loss_done_ = true;
    return;
  }
  SetAct(node, 0, FromSample(x, builder_.Softmax(OpName(node), t, spec)));
}

bool Importer::CausalMask(const OnnxConst& mask, bool masked_value, std::int64_t s) {
  const std::size_t r = mask.dims.size();
  if (!mask.values || r < 2 || mask.dims[r - 1] != s || mask.dims[r - 2] != s) return false;
  for (std::size_t k = 0; k + 2 < r; ++k) {
    if (mask.dims[k] != 1) return false;
  }
  for (std::int64_t i = 0; i < s; ++i) {
    for (std::int64_t j = 0; j < s; ++j) {
      const bool masked = ((*mask.values)[static_cast<std::size_t>(i * s + j)] != 0) == masked_value;
      if (masked != (j > i)) return false;
    }
  }
  return true;
}

// Where(mask, -inf, scores) or Where(keep, scores, -inf) with a constant
// causal mask: the scores' softmax is causal.
void Importer::Where(const onnx::NodeProto& node) {
  if (node.input_size() != 3 || !IsConst(node, 0)) {
    Fail(node, "only a constant mask choosing between scores and -inf is supported");
  }
  const int act = IsAct(node, 1) ? 1 : 2;
  const OnnxConst* fill = ConstOrNull(node.input(act == 1 ? 2 : 1));
  if (!IsAct(node, act) || fill == nullptr || !fill->Scalar() || *fill->Scalar() != -INFINITY) {
    Fail(node, "only a constant mask choosing between scores and -inf is supported");
  }
  const OnnxConst& mask = Const(node, 0);
  if (!mask.values) {
    Fail(node, "the mask's values are not in the file: dtsim cannot tell a causal mask from "
               "another (keep integer and boolean tensors when stripping weights)");
  }
  Act x = ActOf(node, act);
  const Shape s = x.SampleShape();
  if (s.size() < 2 || s[s.size() - 2] != s.back() || !CausalMask(mask, act == 2, s.back())) {
    Fail(node, "the mask " + DimsToString(mask.dims) + " is not causal (j > i masked) over " +
                   ShapeToString(s) + " scores");
  }
  x.causal = true;
  SetAct(node, 0, x);
}

Tensor Importer::IdsOfShape(const onnx::NodeProto& node, const Tensor& x, const Shape& shape) {
  for (const Tensor& ids : id_inputs_) {
    if (ids.shape == shape) return ids;
  }
  const std::int64_t n = NumElements(shape);
  if (n > NumElements(x.shape)) Fail(node, "no tensor of the table's rows' shape to read");
  const Tensor flat = builder_.Reshape(OpName(node, "_ids_flat"), x, {NumElements(x.shape)});
  const Tensor part = builder_.Slice(OpName(node, "_ids_slice"), flat, 0, 0, n);
  return builder_.Reshape(OpName(node, "_ids"), part, shape);
}

// x + table: a position table (rows 0..S-1 of a weight, or a weight of x's
// per-sample shape, as ViT's) or a token-type table read at row 0: an
// embedding added to x, so that the table's parameters are counted.
bool Importer::TableAdd(const onnx::NodeProto& node, int act_input, const OnnxConst& c) {
  const Act& x = ActOf(node, act_input);
  const Shape s = x.SampleShape();
  if (s.size() < 2) return false;
  std::vector<std::int64_t> cd = c.dims;
  while (!cd.empty() && cd.front() == 1 && cd.size() > 2) cd.erase(cd.begin());
  const Shape rows_shape(s.begin(), s.end() - 1);
  const std::int64_t hidden = s.back();
  std::string table;
  std::int64_t vocab = 0;
  EmbeddingIds ids = EmbeddingIds::kPositions;
  if (c.table && cd == std::vector<std::int64_t>{s[s.size() - 2], hidden} &&
      c.table->width == hidden && (c.table->positions || c.table->zeros)) {
    table = c.table->table;
    vocab = c.table->rows;
    ids = c.table->positions ? EmbeddingIds::kPositions : EmbeddingIds::kZeros;
    if (c.table->positions && c.table->zeros && vocab == 1) ids = EmbeddingIds::kZeros;
  } else if (!c.weight.empty() && !c.transposed && s.size() == 2 && cd == s) {
    table = c.weight;
    vocab = s[0];
  } else {
    return false;
  }
  if (rows_shape.size() != 1) return false;
  ClaimWeight(node, table, true);
  const Tensor xt = Use(node, act_input);
  const Tensor e = builder_.Embedding(OpName(node, "_table"), IdsOfShape(node, xt, rows_shape),
                                      vocab, hidden, ids);
  SetAct(node, 0, FromSample(x, builder_.Add(OpName(node), xt, e)));
  return true;
}

// LSTM, GRU and RNN nodes (PyTorch's nn.LSTM/GRU/RNN export one node per
// layer): one Recurrent op per direction, with PyTorch's two bias vectors.
void Importer::Recurrent(const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  const RnnCell cell = op == "LSTM" ? RnnCell::kLstm : op == "GRU" ? RnnCell::kGru : RnnCell::kTanh;
  const std::int64_t gates = RnnGates(cell);
  if (Int(node, "layout", 0) != 0) Fail(node, "only layout 0 (sequence first) is supported");
  if (op == "GRU" && Int(node, "linear_before_reset", 0) != 1) {
    Fail(node, "only linear_before_reset = 1 (PyTorch's GRU) is supported");
  }
  if (Attr(node, "activations") != nullptr || Attr(node, "clip") != nullptr ||
      Int(node, "input_forget", 0) != 0) {
    Fail(node, "only the default activations, no clip and no coupled gates are supported");
  }
  if (node.input_size() > 4 && !node.input(4).empty()) {
    Fail(node, "sequence lengths are not supported: every sequence has the full length");
  }
  if (node.input_size() < 4 || node.input(3).empty()) {
    Fail(node, "a layer without biases is not supported (dtsim's recurrent layers have "
               "PyTorch's two bias vectors)");
  }
  const Act& xa = ActOf(node, 0);
  const Shape xs = xa.SampleShape();
  const OnnxConst& w = Const(node, 1);
  const OnnxConst& r = Const(node, 2);
  const OnnxConst& b = Const(node, 3);
  const std::string direction = Attr(node, "direction") ? Attr(node, "direction")->s() : "forward";
  const std::int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const std::int64_t hidden = Int(node, "hidden_size", 0);
  if (xs.size() != 2 || !xa.batch_alone || xa.batch_axis != 1) {
    Fail(node, "the input must be (S, batch, features)");
  }
  if (hidden < 1 || w.dims != std::vector<std::int64_t>{dirs, gates * hidden, xs[1]} ||
      r.dims != std::vector<std::int64_t>{dirs, gates * hidden, hidden} ||
      b.dims != std::vector<std::int64_t>{dirs, 2 * gates * hidden}) {
    Fail(node, "weights " + DimsToString(w.dims) + ", " + DimsToString(r.dims) + " and " +
                   DimsToString(b.dims) + " do not fit hidden_size " + std::to_string(hidden) +
                   " over " + std::to_string(xs[1]) + " features");
  }
  const Tensor x = Use(node, 0);
  std::vector<Tensor> outs;
  for (std::int64_t d = 0; d < dirs; ++d) {
    const std::string suffix = dirs == 1 ? "" : d == 0 ? "_forward" : "_backward";
    const Tensor h = builder_.Recurrent(OpName(node, suffix), x, {.cell = cell, .hidden = hidden});
    outs.push_back(dirs == 1 ? h : builder_.Reshape(OpName(node, suffix + "_y"), h, {xs[0], 1, hidden}));
  }
  Act y;
  y.t = dirs == 1 ? outs[0] : builder_.Concat(OpName(node, "_y"), outs, 1);
  y.dims = {xs[0], dirs, 1, hidden};  // Y: (S, directions, batch, hidden)
  y.batch_axis = 2;
  SetAct(node, 0, y);
}

}  // namespace dtsim::models::onnx_import
