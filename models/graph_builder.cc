#include "models/graph_builder.h"

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <utility>

#include "common/error.h"

namespace dtsim::models {
namespace {

double Elements(const Shape& shape) { return static_cast<double>(NumElements(shape)); }

// Throws the UserError for a layer that does not fit its input.
void Require(bool ok, const std::string& op_name, const std::string& message,
             const std::string& hint = "") {
  if (!ok) throw UserError("layer '" + op_name + "': " + message, hint);
}

void RequireRank(const Tensor& x, std::size_t rank, const std::string& op_name,
                 const char* layout) {
  Require(x.shape.size() == rank, op_name,
          "expects a " + std::string(layout) + " input, got shape " + ShapeToString(x.shape));
}

// Output length of a sliding window along one axis (PyTorch Conv2d/MaxPool2d):
//   out = floor((in + 2 * pad - kernel) / stride) + 1
// With ceil_mode the division rounds up, except that the last window may not
// start inside the right padding: if (out - 1) * stride >= in + pad, out -= 1.
std::int64_t WindowOutput(std::int64_t in, int kernel, int stride, int pad, bool ceil_mode,
                          const std::string& op_name) {
  Require(kernel > 0 && stride > 0 && pad >= 0, op_name,
          "kernel and stride must be positive and padding non-negative");
  const std::int64_t span = in + 2 * std::int64_t{pad} - kernel;
  Require(span >= 0, op_name,
          "window of " + std::to_string(kernel) + " does not fit an input of " +
              std::to_string(in) + " with padding " + std::to_string(pad));
  std::int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// The product of `factors` (each >= 0), or UserError when it exceeds
// kMaxModelCount: `what` of layer `op_name` ("parameters").
std::int64_t CheckedProduct(std::initializer_list<std::int64_t> factors,
                            const std::string& op_name, const char* what) {
  std::int64_t product = 1;
  for (const std::int64_t f : factors) {
    DTSIM_CHECK(f >= 0, "a size factor of layer '" + op_name + "' is negative");
    if (__builtin_mul_overflow(product, f, &product) || product > kMaxModelCount) {
      throw UserError("layer '" + op_name + "': its " + what + " exceed 2^53 (9.0e15), the most " +
                          "dtsim's arithmetic holds exactly",
                      "check the sizes of this layer and of its input");
    }
  }
  return product;
}

// Checks that every dimension of an op's output is positive and that it has
// at most kMaxModelCount elements per sample.
void CheckShape(const std::string& op_name, const Shape& shape) {
  std::int64_t elements = 1;
  for (const std::int64_t d : shape) {
    Require(d > 0, op_name, "its output shape " + ShapeToString(shape) + " has an empty dimension");
    if (__builtin_mul_overflow(elements, d, &elements) || elements > kMaxModelCount) {
      throw UserError("layer '" + op_name + "': its output " + ShapeToString(shape) +
                          " has more than 2^53 (9.0e15) elements per sample, the most dtsim's "
                          "arithmetic holds exactly",
                      "check the sizes of this layer and of its input");
    }
  }
}

Op MakeOp(const std::string& name, OpKind kind, Shape output_shape) {
  CheckShape(name, output_shape);
  Op op;
  op.name = name;
  op.kind = kind;
  op.output_shape = std::move(output_shape);
  return op;
}

}  // namespace

ConvSpec ConvSpec::Square(std::int64_t out_channels, int kernel, int stride, int pad) {
  ConvSpec s;
  s.out_channels = out_channels;
  s.kernel_h = s.kernel_w = kernel;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = pad;
  return s;
}

ConvSpec ConvSpec::Rect(std::int64_t out_channels, int kernel_h, int kernel_w, int pad_h,
                        int pad_w) {
  ConvSpec s;
  s.out_channels = out_channels;
  s.kernel_h = kernel_h;
  s.kernel_w = kernel_w;
  s.pad_h = pad_h;
  s.pad_w = pad_w;
  return s;
}

ConvSpec ConvSpec::NoBias() const {
  ConvSpec s = *this;
  s.bias = false;
  return s;
}

PoolSpec PoolSpec::Square(int kernel, int stride, int pad) {
  PoolSpec s;
  s.kernel_h = s.kernel_w = kernel;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = pad;
  return s;
}

PoolSpec PoolSpec::WithCeilMode() const {
  PoolSpec s = *this;
  s.ceil_mode = true;
  return s;
}

GraphBuilder::GraphBuilder(std::string model_name) : graph_(std::move(model_name)) {}

Tensor GraphBuilder::Emit(Op op, const std::vector<Tensor>& inputs, const Saves& saves) {
  Require(!op.name.empty(), "(unnamed)", "every layer needs a name");
  if (graph_.num_ops() >= kMaxModelOps) {
    throw UserError("model '" + graph_.name() + "' has more than " +
                        std::to_string(kMaxModelOps) + " layers",
                    "dtsim models up to a million ops; GPT-3 175B has about 2,400");
  }
  DTSIM_CHECK(op.params >= 0 && op.params <= kMaxModelCount, "unchecked parameter count");
  if (params_ > kMaxModelCount - op.params) {
    throw UserError("layer '" + op.name + "': the model's parameters exceed 2^53 (9.0e15), the "
                    "most dtsim's arithmetic holds exactly",
                    "check the sizes of the model's layers");
  }
  params_ += op.params;
  Require(graph_.Find(op.name) == graph_.num_ops(), op.name, "the name is already used",
          "give every layer a unique name");
  std::vector<OpId> ids;
  for (const Tensor& t : inputs) {
    op.input_shapes.push_back(t.shape);
    ids.push_back(t.op);
  }
  double saved = saves.extra_elements;
  for (std::size_t i : saves.inputs) saved += Keep(inputs.at(i));
  op.saved_elements_per_sample = saved;
  Shape out = op.output_shape;
  const OpId id = graph_.AddOp(std::move(op), ids);
  storage_of_.push_back(id);
  kept_.push_back(false);
  if (saves.output) graph_.mutable_op(id).saved_elements_per_sample += Keep({id, out});
  return {id, out};
}

double GraphBuilder::Keep(const Tensor& t) {
  const OpId root = storage_of_.at(t.op);
  if (kept_[root]) return 0;
  kept_[root] = true;
  return Elements(t.shape);
}

Tensor GraphBuilder::Input(const std::string& name, Shape shape) {
  Require(!shape.empty() && std::all_of(shape.begin(), shape.end(),
                                        [](std::int64_t d) { return d > 0; }),
          name, "an input shape needs one or more positive dimensions, got " +
                    ShapeToString(shape));
  // A data source: no compute, nothing kept.
  return Emit(MakeOp(name, OpKind::kInput, std::move(shape)), {}, {});
}

namespace {

// A conv's or pool's window in the op's attributes (ConvSpec and PoolSpec
// name their fields alike).
template <typename Spec>
void SetWindow(const Spec& spec, OpAttrs* attrs) {
  attrs->kernel_h = spec.kernel_h;
  attrs->kernel_w = spec.kernel_w;
  attrs->stride_h = spec.stride_h;
  attrs->stride_w = spec.stride_w;
  attrs->pad_h = spec.pad_h;
  attrs->pad_w = spec.pad_w;
}

}  // namespace

// Convolution, x = (C, H, W), output (K, OH, OW), groups g:
//   MACs          = K * OH * OW * (C / g) * kh * kw
//   fwd           = 2 * MACs (+ K * OH * OW bias adds)
//   bwd_input     = 2 * MACs                        (transposed convolution)
//   bwd_weight    = 2 * MACs (+ K * OH * OW bias-gradient adds)
//   params        = K * (C / g) * kh * kw (+ K)
//   keeps its input (the weight gradient needs it).
Tensor GraphBuilder::Conv2d(const std::string& name, const Tensor& x, const ConvSpec& spec) {
  RequireRank(x, 3, name, "(C, H, W)");
  const std::int64_t c = x.shape[0];
  const std::int64_t k = spec.out_channels;
  Require(k > 0, name, "out_channels must be positive");
  Require(spec.groups > 0 && c % spec.groups == 0 && k % spec.groups == 0, name,
          "groups (" + std::to_string(spec.groups) + ") must divide the input channels (" +
              std::to_string(c) + ") and out_channels (" + std::to_string(k) + ")");
  const std::int64_t oh =
      WindowOutput(x.shape[1], spec.kernel_h, spec.stride_h, spec.pad_h, false, name);
  const std::int64_t ow =
      WindowOutput(x.shape[2], spec.kernel_w, spec.stride_w, spec.pad_w, false, name);
  Op op = MakeOp(name, OpKind::kConv2d, {k, oh, ow});
  const double out_elems = Elements(op.output_shape);
  const double macs = out_elems * static_cast<double>(c / spec.groups) * spec.kernel_h *
                      spec.kernel_w;
  const double bias_adds = spec.bias ? out_elems : 0.0;
  op.fwd_flops = 2 * macs + bias_adds;
  op.bwd_input_flops = 2 * macs;
  op.bwd_weight_flops = 2 * macs + bias_adds;
  // K filters of (C / g) x kh x kw weights and a bias each.
  const std::int64_t per_filter =
      CheckedProduct({c / spec.groups, spec.kernel_h, spec.kernel_w}, name, "parameters");
  op.params = CheckedProduct({k, per_filter + (spec.bias ? 1 : 0)}, name, "parameters");
  SetWindow(spec, &op.attrs);
  op.attrs.groups = spec.groups;
  op.attrs.bias = spec.bias;
  op.read_elements_per_sample = Elements(x.shape);
  op.written_elements_per_sample = out_elems;
  return Emit(std::move(op), {x}, {.inputs = {0}});
}

// Dense on the last dimension, x = (..., in) with R = elements / in rows:
//   MACs = R * in * out
//   fwd = 2 * MACs (+ R * out bias adds), bwd_input = 2 * MACs,
//   bwd_weight = 2 * MACs (+ R * out bias-gradient adds)
//   params = in * out (0 when tied to an embedding) (+ out)
//   keeps its input.
Tensor GraphBuilder::Dense(const std::string& name, const Tensor& x, const DenseSpec& spec) {
  Require(!x.shape.empty(), name, "expects an input with a feature dimension");
  Require(spec.out_features > 0, name, "out_features must be positive");
  const std::int64_t in = x.shape.back();
  Shape out = x.shape;
  out.back() = spec.out_features;
  Op op = MakeOp(name, OpKind::kDense, out);
  const double rows = Elements(x.shape) / static_cast<double>(in);
  const double macs = rows * static_cast<double>(in) * static_cast<double>(spec.out_features);
  const double bias_adds = spec.bias ? rows * static_cast<double>(spec.out_features) : 0.0;
  op.fwd_flops = 2 * macs + bias_adds;
  op.bwd_input_flops = 2 * macs;
  op.bwd_weight_flops = 2 * macs + bias_adds;
  // An in x out weight (none when tied to an embedding) and a bias of out.
  op.params = CheckedProduct({spec.out_features, (spec.tied_weight ? 0 : in) + (spec.bias ? 1 : 0)},
                             name, "parameters");
  if (spec.experts > 0) {
    Require(!spec.tied_weight && spec.top_k > 0 && spec.top_k <= spec.experts, name,
            "routed experts need an own weight and 1 <= top_k <= experts");
    op.params = CheckedProduct({op.params, spec.experts}, name, "parameters");
    op.attrs.experts = spec.experts;
    op.attrs.top_k = spec.top_k;
    op.attrs.expert_load_skew = spec.expert_load_skew;
  }
  op.attrs.bias = spec.bias;
  if (spec.tied_weight) {
    // The tied table is the embedding of out_features rows of width `in`
    // (none found: tied_to stays -1 and only real execution refuses it).
    for (OpId id = 0; id < graph_.num_ops(); ++id) {
      const Op& e = graph_.op(id);
      if (e.kind == OpKind::kEmbedding && e.attrs.vocab == spec.out_features &&
          e.output_shape.back() == in) {
        op.attrs.tied_to = static_cast<std::int64_t>(id);
        break;
      }
    }
  }
  op.read_elements_per_sample = Elements(x.shape);
  op.written_elements_per_sample = Elements(out);
  return Emit(std::move(op), {x}, {.inputs = {0}});
}

// Batched matmul, a = (B..., M, K), b = (B..., K, N), B = product of the
// leading dimensions:
//   fwd = 2 * B * M * K * N
//   bwd_input = 2 * fwd (dA = dC B^T and dB = A^T dC), no weights
//   keeps both operands.
Tensor GraphBuilder::MatMul(const std::string& name, const Tensor& a, const Tensor& b,
                            const MatMulSpec& spec) {
  Require(a.shape.size() >= 2 && a.shape.size() == b.shape.size(), name,
          "expects two operands of the same rank >= 2, got " + ShapeToString(a.shape) +
              " and " + ShapeToString(b.shape));
  const std::size_t r = a.shape.size();
  Require(std::equal(a.shape.begin(), a.shape.end() - 2, b.shape.begin()), name,
          "leading (batch) dimensions differ: " + ShapeToString(a.shape) + " and " +
              ShapeToString(b.shape));
  const std::int64_t m = a.shape[r - 2];
  const std::int64_t k = a.shape[r - 1];
  const std::int64_t kb = spec.transpose_b ? b.shape[r - 1] : b.shape[r - 2];
  const std::int64_t n = spec.transpose_b ? b.shape[r - 2] : b.shape[r - 1];
  Require(k == kb, name,
          "inner dimensions differ: " + ShapeToString(a.shape) + " times " +
              ShapeToString(b.shape) + (spec.transpose_b ? " transposed" : ""));
  Shape out(a.shape.begin(), a.shape.end() - 2);
  out.push_back(m);
  out.push_back(n);
  Op op = MakeOp(name, OpKind::kMatMul, out);
  const double batch = Elements(out) / (static_cast<double>(m) * static_cast<double>(n));
  op.fwd_flops = 2 * batch * static_cast<double>(m) * static_cast<double>(k) *
                 static_cast<double>(n);
  op.bwd_input_flops = 2 * op.fwd_flops;
  op.attrs.transpose_b = spec.transpose_b;
  op.read_elements_per_sample = Elements(a.shape) + Elements(b.shape);
  op.written_elements_per_sample = Elements(out);
  return Emit(std::move(op), {a, b}, {.inputs = {0, 1}});
}

// Pooling, x = (C, H, W), window kh x kw, output (C, OH, OW):
//   max: fwd = kh * kw compares per output element, bwd_input = 1 per output
//        element (the gradient goes to the argmax); keeps its input and the
//        argmax indices (one per output element), as PyTorch does.
//   avg: fwd = kh * kw per output element (kh * kw - 1 adds, 1 divide),
//        bwd_input = kh * kw per output element (spread over the window);
//        keeps nothing.
Tensor GraphBuilder::Pool(const std::string& name, OpKind kind, const Tensor& x,
                          const PoolSpec& spec) {
  RequireRank(x, 3, name, "(C, H, W)");
  const std::int64_t oh =
      WindowOutput(x.shape[1], spec.kernel_h, spec.stride_h, spec.pad_h, spec.ceil_mode, name);
  const std::int64_t ow =
      WindowOutput(x.shape[2], spec.kernel_w, spec.stride_w, spec.pad_w, spec.ceil_mode, name);
  const Shape out = {x.shape[0], oh, ow};
  const double out_elems = Elements(out);
  const double window = static_cast<double>(spec.kernel_h) * spec.kernel_w;
  Op op = MakeOp(name, kind, out);
  SetWindow(spec, &op.attrs);
  op.attrs.ceil_mode = spec.ceil_mode;
  op.fwd_flops = window * out_elems;
  op.read_elements_per_sample = Elements(x.shape);
  op.written_elements_per_sample = out_elems;
  if (kind == OpKind::kMaxPool) {
    op.bwd_input_flops = out_elems;
    return Emit(std::move(op), {x}, {.inputs = {0}, .extra_elements = out_elems});
  }
  op.bwd_input_flops = window * out_elems;
  return Emit(std::move(op), {x}, {});
}

Tensor GraphBuilder::MaxPool(const std::string& name, const Tensor& x, const PoolSpec& spec) {
  return Pool(name, OpKind::kMaxPool, x, spec);
}

Tensor GraphBuilder::AvgPool(const std::string& name, const Tensor& x, const PoolSpec& spec) {
  return Pool(name, OpKind::kAvgPool, x, spec);
}

Tensor GraphBuilder::GlobalAvgPool(const std::string& name, const Tensor& x) {
  RequireRank(x, 3, name, "(C, H, W)");
  Require(x.shape[1] <= INT_MAX && x.shape[2] <= INT_MAX, name,
          "pools a window of " + std::to_string(x.shape[1]) + "x" + std::to_string(x.shape[2]) +
              ", larger than dtsim's window sizes (int)");
  PoolSpec spec;
  spec.kernel_h = static_cast<int>(x.shape[1]);
  spec.kernel_w = static_cast<int>(x.shape[2]);
  return Pool(name, OpKind::kAvgPool, x, spec);
}

// Shape-preserving op with per-element FLOP counts; reads n, writes n.
Tensor GraphBuilder::Elementwise(const std::string& name, OpKind kind, const Tensor& x,
                                 double fwd_per_element, double bwd_per_element,
                                 const Saves& saves) {
  Require(!x.shape.empty(), name, "expects a non-scalar input");
  const double n = Elements(x.shape);
  Op op = MakeOp(name, kind, x.shape);
  op.fwd_flops = fwd_per_element * n;
  op.bwd_input_flops = bwd_per_element * n;
  op.read_elements_per_sample = n;
  op.written_elements_per_sample = n;
  return Emit(std::move(op), {x}, saves);
}

// ReLU: fwd 1 (max(x, 0)), bwd 1 (select) per element; keeps its output.
Tensor GraphBuilder::Relu(const std::string& name, const Tensor& x) {
  return Elementwise(name, OpKind::kRelu, x, 1, 1, {.output = true});
}

// GELU, tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))):
// fwd 9 per element (x^3: 2, scale and add: 2, scale: 1, tanh: 1, 1 + : 1,
// times x and 0.5: 2); bwd 18 (recompute the tanh term and apply its
// derivative, about twice the forward). Keeps its input.
Tensor GraphBuilder::Gelu(const std::string& name, const Tensor& x) {
  return Elementwise(name, OpKind::kGelu, x, 9, 18, {.inputs = {0}});
}

// tanh: fwd 1, bwd 3 (dy * (1 - y * y)) per element; keeps its output.
Tensor GraphBuilder::Tanh(const std::string& name, const Tensor& x) {
  return Elementwise(name, OpKind::kTanh, x, 1, 3, {.output = true});
}

// Dropout (training): fwd 2 per element (compare a random draw to make the
// mask, multiply by mask / (1 - p)), bwd 1 (multiply by the mask). Keeps the
// mask, counted as one element per element (frameworks store it in 1 byte).
Tensor GraphBuilder::Dropout(const std::string& name, const Tensor& x) {
  return Elementwise(name, OpKind::kDropout, x, 2, 1,
                     {.extra_elements = Elements(x.shape)});
}

// Sigmoid 1 / (1 + exp(-x)): fwd 3 per element (exp, add, reciprocal), bwd
// 3 (dy * y * (1 - y)). Keeps its output.
Tensor GraphBuilder::Sigmoid(const std::string& name, const Tensor& x) {
  return Elementwise(name, OpKind::kSigmoid, x, 3, 3, {.output = true});
}

// SiLU x * sigmoid(x): fwd 4 per element (sigmoid 3, times x 1), bwd 8
// (recompute the sigmoid: 3; dy * s * (1 + x (1 - s)): 5). Keeps its input.
Tensor GraphBuilder::Silu(const std::string& name, const Tensor& x) {
  return Elementwise(name, OpKind::kSilu, x, 4, 8, {.inputs = {0}});
}

// a * b with b broadcast over a, n = elements of a:
//   fwd n; bwd_input 2 n (dy * b and dy * a) plus n when b is broadcast (its
//   gradient is summed over the repeated dimensions).
// Keeps both inputs.
Tensor GraphBuilder::Mul(const std::string& name, const Tensor& a, const Tensor& b) {
  bool fits = !a.shape.empty() && a.shape.size() == b.shape.size();
  for (std::size_t i = 0; fits && i < a.shape.size(); ++i)
    fits = b.shape[i] == a.shape[i] || b.shape[i] == 1;
  Require(fits, name,
          "multiplies a by b of the same rank whose dimensions equal a's or are 1, got " +
              ShapeToString(a.shape) + " and " + ShapeToString(b.shape));
  const double n = Elements(a.shape);
  const bool broadcast = a.shape != b.shape;
  Op op = MakeOp(name, OpKind::kMul, a.shape);
  op.fwd_flops = n;
  op.bwd_input_flops = (broadcast ? 3 : 2) * n;
  op.read_elements_per_sample = n + Elements(b.shape);
  op.written_elements_per_sample = n;
  return Emit(std::move(op), {a, b}, {.inputs = {0, 1}});
}

// Rotary embedding, x (A, S, D): y = x cos(theta) + rotate_half(x) sin(theta)
// with the angles a fixed table (a buffer, not a parameter): fwd 3 per
// element (2 multiplies, 1 add), bwd 3 (the transposed rotation). Linear, so
// it keeps nothing.
Tensor GraphBuilder::Rotary(const std::string& name, const Tensor& x) {
  Require(x.shape.size() == 3 && x.shape[2] % 2 == 0, name,
          "rotates (A, S, D) heads with an even D, got " + ShapeToString(x.shape));
  return Elementwise(name, OpKind::kRotary, x, 3, 3, {});
}

// Batch norm (training), statistics over batch and H x W per channel C:
//   fwd 7 per element (mean: 1, variance: 2, normalise: 2, scale-shift: 2)
//   bwd_weight 5 per element (recompute x_hat: 2, sum dy: 1, sum dy x_hat: 2)
//   bwd_input 4 per element (dy - mean(dy) - x_hat mean(dy x_hat): 3,
//   times gamma rstd: 1)
//   params 2 * C (gamma, beta; running statistics are buffers, not params).
// Keeps its input; the per-channel statistics belong to the batch, not to
// one sample, and are not counted.
Tensor GraphBuilder::BatchNorm(const std::string& name, const Tensor& x) {
  Tensor y = Elementwise(name, OpKind::kBatchNorm, x, 7, 4, {.inputs = {0}});
  Op& op = graph_.mutable_op(y.op);
  op.bwd_weight_flops = 5 * Elements(x.shape);
  op.params = 2 * x.shape[0];
  return y;
}

// Layer norm over the last dimension H, the same per-element counts as batch
// norm; params 2 * H (H without the bias). Keeps its input plus mean and rstd of each row
// (2 per row of H).
Tensor GraphBuilder::LayerNorm(const std::string& name, const Tensor& x,
                               const LayerNormSpec& spec) {
  Require(!x.shape.empty(), name, "expects a non-scalar input");
  const double rows = Elements(x.shape) / static_cast<double>(x.shape.back());
  Tensor y = Elementwise(name, OpKind::kLayerNorm, x, 7, 4,
                         {.inputs = {0}, .extra_elements = 2 * rows});
  Op& op = graph_.mutable_op(y.op);
  op.bwd_weight_flops = 5 * Elements(x.shape);
  op.params = (spec.bias ? 2 : 1) * x.shape.back();
  return y;
}

// RMS norm over the last dimension H: y = x * rsqrt(mean(x^2) + eps) * g.
//   fwd 4 per element (square and sum: 2, times rstd: 1, times g: 1)
//   bwd_input 6 per element (x_hat: 1, g dy: 1, sum g dy x_hat: 2, minus
//   x_hat times that mean: 1, times rstd: 1)
//   bwd_weight 3 per element (x_hat: 1, sum dy x_hat: 2)
//   params H (the scale g). Keeps its input and the rstd of each row.
Tensor GraphBuilder::RmsNorm(const std::string& name, const Tensor& x) {
  Require(!x.shape.empty(), name, "expects a non-scalar input");
  const double rows = Elements(x.shape) / static_cast<double>(x.shape.back());
  Tensor y = Elementwise(name, OpKind::kRmsNorm, x, 4, 6, {.inputs = {0}, .extra_elements = rows});
  Op& op = graph_.mutable_op(y.op);
  op.bwd_weight_flops = 3 * Elements(x.shape);
  op.params = x.shape.back();
  return y;
}

// Local response normalisation over a window of n = 2 r + 1 channels:
//   y = x / (bias + alpha * sum_window x^2)^beta
//   fwd 2 n + 4 per element (n square-and-adds, bias + alpha * sum: 2,
//   pow: 1, times x: 1); bwd 2 * fwd (TensorFlow's LRNGrad recomputes the
//   window sums and applies the chain rule across the window).
// Keeps its input and its output (both are LRNGrad's inputs).
Tensor GraphBuilder::LocalResponseNorm(const std::string& name, const Tensor& x,
                                       int depth_radius) {
  Require(depth_radius >= 0, name, "depth_radius must be >= 0");
  const double fwd = 2.0 * (2 * depth_radius + 1) + 4;
  Tensor y = Elementwise(name, OpKind::kLocalResponseNorm, x, fwd, 2 * fwd,
                         {.inputs = {0}, .output = true});
  graph_.mutable_op(y.op).attrs.lrn_radius = depth_radius;
  return y;
}

// Softmax over the last dimension: fwd 5 per element (max, subtract, exp,
// sum, divide), bwd 4 (sum dy y: 2, subtract: 1, times y: 1). Keeps its
// output.
Tensor GraphBuilder::Softmax(const std::string& name, const Tensor& x, const SoftmaxSpec& spec) {
  Tensor y = Elementwise(name, OpKind::kSoftmax, x, 5, 4, {.output = true});
  graph_.mutable_op(y.op).attrs.causal = spec.causal;
  graph_.mutable_op(y.op).attrs.scale = spec.scale;
  return y;
}

// Softmax cross entropy, logits (..., classes) with R rows, output a scalar
// loss per sample (shape (1)):
//   fwd = 5 per logit (softmax) + 2 per row (log of the target's probability,
//   add to the mean)
//   bwd_input = 2 per logit (p - onehot, times 1 / R)
// Keeps the probabilities (new storage, one per logit).
Tensor GraphBuilder::SoftmaxCrossEntropy(const std::string& name, const Tensor& logits,
                                         std::int64_t classes) {
  Require(!logits.shape.empty() && logits.shape.back() == classes, name,
          "expects logits with " + std::to_string(classes) +
              " classes in the last dimension, got shape " + ShapeToString(logits.shape));
  const double n = Elements(logits.shape);
  const double rows = n / static_cast<double>(classes);
  Op op = MakeOp(name, OpKind::kSoftmaxCrossEntropy, {1});
  op.attrs.vocab = classes;
  op.fwd_flops = 5 * n + 2 * rows;
  op.bwd_input_flops = 2 * n;
  op.read_elements_per_sample = n;
  op.written_elements_per_sample = 1;
  return Emit(std::move(op), {logits}, {.extra_elements = n});
}

// Embedding lookup, ids of any shape with I ids, table vocab x hidden:
//   fwd 0 (a gather), bwd_input 0 (ids have no gradient),
//   bwd_weight = I * hidden (scatter-add of the output gradient into rows)
//   params = vocab * hidden; reads I ids and I rows, writes I * hidden.
// Keeps the ids.
Tensor GraphBuilder::Embedding(const std::string& name, const Tensor& ids, std::int64_t vocab,
                               std::int64_t hidden, EmbeddingIds rows) {
  Require(vocab > 0 && hidden > 0, name, "vocab and hidden must be positive");
  Shape out = ids.shape;
  out.push_back(hidden);
  Op op = MakeOp(name, OpKind::kEmbedding, out);
  op.attrs.vocab = vocab;
  op.attrs.ids = rows;
  op.bwd_weight_flops = Elements(out);
  op.params = CheckedProduct({vocab, hidden}, name, "parameters");
  op.read_elements_per_sample = Elements(ids.shape) + Elements(out);
  op.written_elements_per_sample = Elements(out);
  return Emit(std::move(op), {ids}, {.inputs = {0}});
}

// a + b: fwd 1 per element; bwd 0 (the gradient passes unchanged to both
// inputs). Keeps nothing.
Tensor GraphBuilder::Add(const std::string& name, const Tensor& a, const Tensor& b) {
  Require(a.shape == b.shape, name,
          "adds tensors of the same shape, got " + ShapeToString(a.shape) + " and " +
              ShapeToString(b.shape));
  const double n = Elements(a.shape);
  Op op = MakeOp(name, OpKind::kAdd, a.shape);
  op.fwd_flops = n;
  op.read_elements_per_sample = 2 * n;
  op.written_elements_per_sample = n;
  return Emit(std::move(op), {a, b}, {});
}

// Concatenation: a copy, no FLOPs; its gradient is a split (views).
Tensor GraphBuilder::Concat(const std::string& name, const std::vector<Tensor>& parts,
                            int axis) {
  Require(parts.size() >= 2, name, "concatenates two or more inputs");
  const std::size_t rank = parts[0].shape.size();
  Require(axis >= 0 && static_cast<std::size_t>(axis) < rank, name,
          "axis " + std::to_string(axis) + " is outside shape " +
              ShapeToString(parts[0].shape));
  Shape out = parts[0].shape;
  out[axis] = 0;
  double read = 0;
  for (const Tensor& p : parts) {
    Shape a = p.shape, b = parts[0].shape;
    bool same_rank = a.size() == rank;
    if (same_rank) a[axis] = b[axis] = 0;
    Require(same_rank && a == b, name,
            "inputs must agree on every dimension but " + std::to_string(axis) + ", got " +
                ShapeToString(parts[0].shape) + " and " + ShapeToString(p.shape));
    if (__builtin_add_overflow(out[axis], p.shape[axis], &out[axis])) out[axis] = kMaxModelCount + 1;
    read += Elements(p.shape);
  }
  Op op = MakeOp(name, OpKind::kConcat, out);
  op.attrs.axis = axis;
  op.read_elements_per_sample = read;
  op.written_elements_per_sample = Elements(out);
  return Emit(std::move(op), parts, {});
}

// Fused attention, q (A, S, D), k (G, S, D), v (G, S, Dv); P = A S^2 query-
// key pairs, causal or not: model FLOPs count the whole score matrix, as
// Megatron-LM (Narayanan et al. 2021) and PaLM (Chowdhery et al. 2022,
// appendix B) count them and as the unfused ops do, so MFU does not depend
// on the kernel (the fused kernel's time, sim/cost/op_kernels.h, skips masked
// blocks):
//   fwd = 2 P (D + Dv) (Q K^T and P V) + 5 P (the online softmax)
//   bwd_input = 2 fwd's products: 4 P (D + Dv) (dQ, dK, dV, dP; the
//   kernel's recomputation of Q K^T is not a model FLOP) + 4 P (softmax)
// Keeps q, k, v, its output and one log-sum-exp per query row; reads
// q, k, v and writes the output: no S x S term anywhere.
Tensor GraphBuilder::Attention(const std::string& name, const Tensor& q, const Tensor& k,
                               const Tensor& v, const AttentionSpec& spec) {
  Require(q.shape.size() == 3 && k.shape.size() == 3 && v.shape.size() == 3, name,
          "expects (heads, S, D) queries, keys and values, got " + ShapeToString(q.shape) +
              ", " + ShapeToString(k.shape) + " and " + ShapeToString(v.shape));
  const std::int64_t a = q.shape[0], s = q.shape[1], d = q.shape[2];
  const std::int64_t g = k.shape[0], dv = v.shape[2];
  Require(k.shape[1] == s && v.shape[1] == s && k.shape[2] == d && v.shape[0] == g &&
              a % g == 0,
          name,
          "keys and values must have the queries' sequence, keys their head size, and the "
          "query heads must be a multiple of the key/value heads; got " +
              ShapeToString(q.shape) + ", " + ShapeToString(k.shape) + " and " +
              ShapeToString(v.shape));
  Op op = MakeOp(name, OpKind::kAttention, {a, s, dv});
  const double sd = static_cast<double>(s);
  const double pairs = static_cast<double>(a) * sd * sd;
  const double dims = static_cast<double>(d + dv);
  op.fwd_flops = 2 * pairs * dims + 5 * pairs;
  op.bwd_input_flops = 4 * pairs * dims + 4 * pairs;
  op.attrs.causal = spec.causal;
  op.attrs.attention_kernel = spec.kernel;
  op.attrs.scale = spec.scale;
  const double rows = static_cast<double>(a) * sd;
  op.read_elements_per_sample = Elements(q.shape) + Elements(k.shape) + Elements(v.shape);
  op.written_elements_per_sample = Elements(op.output_shape) + rows;
  return Emit(std::move(op), {q, k, v}, {.inputs = {0, 1, 2}, .output = true, .extra_elements = rows});
}

// A recurrent layer, x (S, I), hidden size Hd, G gates (RNN 1, GRU 3,
// LSTM 4), PyTorch's two bias vectors:
//   params = G Hd (I + Hd) + 2 G Hd
//   fwd = S (2 G Hd (I + Hd) + 2 G Hd + c Hd), c the cell's pointwise work
//   per unit: LSTM 15 (3 sigmoids: 9, 2 tanh: 2, c' = f c + i g: 3,
//   h = o tanh(c'): 1), GRU 11 (2 sigmoids: 6, tanh: 1, r (U h): 1,
//   (1 - z) n + z h: 3), RNN 1 (tanh)
//   bwd_input = S (2 G Hd (I + Hd) + 2 c Hd) (dx through W, dh through U)
//   bwd_weight = S (2 G Hd (I + Hd) + 2 G Hd)
// Keeps its input, the gates (G Hd per step), the hidden states and, for
// an LSTM, the cell states (Hd per step each), as cuDNN's training reserve.
Tensor GraphBuilder::Recurrent(const std::string& name, const Tensor& x,
                               const RecurrentSpec& spec) {
  Require(x.shape.size() == 2, name, "expects a (S, features) sequence, got " +
                                         ShapeToString(x.shape));
  Require(spec.hidden > 0, name, "hidden must be positive");
  const std::int64_t steps = x.shape[0], in = x.shape[1], hd = spec.hidden;
  const std::int64_t gates = RnnGates(spec.cell);
  Op op = MakeOp(name, OpKind::kRecurrent, {steps, hd});
  op.attrs.cell = spec.cell;
  const double pointwise =
      spec.cell == RnnCell::kLstm ? 15 : spec.cell == RnnCell::kGru ? 11 : 1;
  const double macs = static_cast<double>(gates * hd) * static_cast<double>(in + hd);
  const double ghd = static_cast<double>(gates * hd);
  const double sd = static_cast<double>(steps), hdd = static_cast<double>(hd);
  op.fwd_flops = sd * (2 * macs + 2 * ghd + pointwise * hdd);
  op.bwd_input_flops = sd * (2 * macs + 2 * pointwise * hdd);
  op.bwd_weight_flops = sd * (2 * macs + 2 * ghd);
  op.params = CheckedProduct({gates * hd, in + hd + 2}, name, "parameters");
  op.read_elements_per_sample = Elements(x.shape);
  op.written_elements_per_sample = sd * hdd;
  const double states = spec.cell == RnnCell::kLstm ? 2 : 1;
  return Emit(std::move(op), {x}, {.inputs = {0}, .extra_elements = sd * hdd * (gates + states)});
}

// Repeated heads: a copy, fwd 0 FLOPs, bwd_input 1 per output element (each
// head's gradient is the sum of its copies'). Keeps nothing.
Tensor GraphBuilder::RepeatHeads(const std::string& name, const Tensor& x, std::int64_t repeats) {
  Require(x.shape.size() == 3 && repeats > 0, name,
          "repeats (G, S, D) heads a positive number of times, got " + ShapeToString(x.shape));
  const Shape out = {CheckedProduct({x.shape[0], repeats}, name, "heads"), x.shape[1], x.shape[2]};
  OpAttrs attrs;
  attrs.view = ViewKind::kRepeatHeads;
  Tensor y = View(name, OpKind::kReshape, x, out, false, attrs);
  Op& op = graph_.mutable_op(y.op);
  op.bwd_input_flops = Elements(out);
  op.read_elements_per_sample = Elements(x.shape);
  op.written_elements_per_sample = Elements(out);
  return y;
}

Tensor GraphBuilder::Dispatch(const std::string& name, const Tensor& x, const Tensor& probs,
                              const RoutingSpec& spec) {
  Require(x.shape.size() == 2 && probs.shape.size() == 2 && probs.shape[0] == x.shape[0] &&
              probs.shape[1] == spec.experts && spec.top_k > 0 && spec.top_k <= spec.experts &&
              spec.rows > 0,
          name,
          "routes (S, H) tokens by (S, E) probabilities to 1 <= top_k <= E experts, got " +
              ShapeToString(x.shape) + " and " + ShapeToString(probs.shape));
  Op op = MakeOp(name, OpKind::kReshape, {spec.rows, x.shape[1]});
  op.attrs.view = ViewKind::kDispatch;
  op.attrs.experts = spec.experts;
  op.attrs.top_k = spec.top_k;
  op.attrs.expert_load_skew = spec.expert_load_skew;
  const double out = Elements(op.output_shape);
  op.bwd_input_flops = out;
  op.read_elements_per_sample = Elements(x.shape) + Elements(probs.shape);
  op.written_elements_per_sample = out;
  return Emit(std::move(op), {x, probs}, {});
}

Tensor GraphBuilder::Combine(const std::string& name, const Tensor& y, const Tensor& probs,
                             const RoutingSpec& spec) {
  Require(y.shape.size() == 2 && probs.shape.size() == 2 && y.shape[0] == spec.rows &&
              probs.shape[1] == spec.experts,
          name,
          "combines (R, H) expert rows with (S, E) probabilities, got " + ShapeToString(y.shape) +
              " and " + ShapeToString(probs.shape));
  Op op = MakeOp(name, OpKind::kReshape, {probs.shape[0], y.shape[1]});
  op.attrs.view = ViewKind::kCombine;
  op.attrs.experts = spec.experts;
  op.attrs.top_k = spec.top_k;
  op.attrs.expert_load_skew = spec.expert_load_skew;
  const double rows = Elements(y.shape);
  op.fwd_flops = 2 * rows;
  op.bwd_input_flops = 3 * rows;
  op.read_elements_per_sample = rows + Elements(probs.shape);
  op.written_elements_per_sample = Elements(op.output_shape);
  return Emit(std::move(op), {y, probs}, {.inputs = {0, 1}});
}

// Views: no FLOPs, no traffic, nothing kept.
Tensor GraphBuilder::View(const std::string& name, OpKind kind, const Tensor& x, Shape shape,
                          bool shares_storage, const OpAttrs& attrs) {
  Op op = MakeOp(name, kind, std::move(shape));
  op.attrs = attrs;
  Tensor y = Emit(std::move(op), {x}, {});
  if (shares_storage) storage_of_[y.op] = storage_of_[x.op];
  return y;
}

Tensor GraphBuilder::Reshape(const std::string& name, const Tensor& x, Shape shape) {
  Require(!shape.empty(), name, "cannot view " + ShapeToString(x.shape) + " as a scalar");
  CheckShape(name, shape);
  Require(NumElements(shape) == NumElements(x.shape), name,
          "cannot view " + ShapeToString(x.shape) + " (" + std::to_string(NumElements(x.shape)) +
              " elements) as " + ShapeToString(shape) + " (" +
              std::to_string(NumElements(shape)) + " elements)");
  return View(name, OpKind::kReshape, x, std::move(shape), true, {});
}

// A transpose PyTorch does as a view (x.view(S, A, D).transpose(0, 1)), so it
// shares storage here too: no FLOPs, nothing kept.
Tensor GraphBuilder::SplitHeads(const std::string& name, const Tensor& x, std::int64_t heads) {
  Require(x.shape.size() == 2 && heads > 0 && x.shape[1] % heads == 0, name,
          "splits (S, A*D) into " + std::to_string(heads) + " heads, got " +
              ShapeToString(x.shape));
  OpAttrs attrs;
  attrs.view = ViewKind::kSplitHeads;
  return View(name, OpKind::kReshape, x, {heads, x.shape[0], x.shape[1] / heads}, true, attrs);
}

Tensor GraphBuilder::MergeHeads(const std::string& name, const Tensor& x) {
  Require(x.shape.size() == 3, name, "merges (A, S, D) heads, got " + ShapeToString(x.shape));
  OpAttrs attrs;
  attrs.view = ViewKind::kMergeHeads;
  return View(name, OpKind::kReshape, x, {x.shape[1], x.shape[0] * x.shape[2]}, true, attrs);
}

Tensor GraphBuilder::Flatten(const std::string& name, const Tensor& x) {
  return Reshape(name, x, {NumElements(x.shape)});
}

Tensor GraphBuilder::Slice(const std::string& name, const Tensor& x, int axis,
                           std::int64_t begin, std::int64_t size) {
  Require(axis >= 0 && static_cast<std::size_t>(axis) < x.shape.size(), name,
          "axis " + std::to_string(axis) + " is outside shape " + ShapeToString(x.shape));
  Require(begin >= 0 && size > 0 && begin + size <= x.shape[axis], name,
          "slice [" + std::to_string(begin) + ", " + std::to_string(begin + size) +
              ") is outside dimension " + std::to_string(axis) + " of " +
              ShapeToString(x.shape));
  Shape out = x.shape;
  out[axis] = size;
  // A part of x's storage; kept separately from the other parts.
  OpAttrs attrs;
  attrs.view = ViewKind::kSlice;
  attrs.axis = axis;
  attrs.begin = begin;
  return View(name, OpKind::kReshape, x, std::move(out), false, attrs);
}

ModelGraph GraphBuilder::Finish(std::string description) {
  if (graph_.num_ops() == 0 ||
      graph_.op(graph_.num_ops() - 1).kind != OpKind::kSoftmaxCrossEntropy) {
    throw UserError("model '" + graph_.name() + "' must end with a loss layer (softmax_xent)",
                    "backward starts at the loss; add a softmax_xent layer last");
  }
  graph_.set_description(std::move(description));
  graph_.Validate();
  ModelGraph out = std::move(graph_);
  graph_ = ModelGraph(out.name());
  storage_of_.clear();
  kept_.clear();
  return out;
}

}  // namespace dtsim::models
