// ModelRuntime::Forward and ::Backward: each op kind mapped onto Backend
// calls. Shapes follow models/op.h (per sample, batch excluded); B is the
// micro-batch.
#include <cmath>
#include <string>

#include "common/error.h"
#include "exec/runtime/model_runtime.h"
#include "exec/runtime/runtime_util.h"

namespace dtsim::exec {

using models::Op;
using models::OpId;
using models::OpKind;
using models::Shape;
using models::ViewKind;

namespace {

using runtime_util::Elements;
constexpr auto Prod = runtime_util::Product;

// The window fields Conv2dArgs and Pool2dArgs share, from the op.
template <typename Args>
Args WindowArgs(const Op& op, std::int64_t b) {
  const Shape& in = op.input_shapes[0];
  Args a;
  a.n = b;
  a.c = in[0];
  a.h = in[1];
  a.w = in[2];
  a.r = op.attrs.kernel_h;
  a.s = op.attrs.kernel_w;
  a.stride_h = op.attrs.stride_h;
  a.stride_w = op.attrs.stride_w;
  a.pad_h = op.attrs.pad_h;
  a.pad_w = op.attrs.pad_w;
  a.oh = op.output_shape[1];
  a.ow = op.output_shape[2];
  return a;
}

Conv2dArgs ConvArgs(const Op& op, std::int64_t b) {
  Conv2dArgs a = WindowArgs<Conv2dArgs>(op, b);
  a.k = op.output_shape[0];
  a.groups = op.attrs.groups;
  return a;
}

Pool2dArgs PoolArgs(const Op& op, std::int64_t b) { return WindowArgs<Pool2dArgs>(op, b); }

LrnArgs MakeLrnArgs(const Op& op, std::int64_t b) {
  const Shape& in = op.input_shapes[0];
  LrnArgs a;
  a.n = b;
  a.c = in[0];
  a.h = in.size() > 1 ? in[1] : 1;
  a.w = in.size() > 2 ? in[2] : 1;
  a.radius = op.attrs.lrn_radius;
  return a;
}

// A fused attention op's shapes for `b` samples.
AttentionArgs AttentionShape(const Op& op, std::int64_t b) {
  AttentionArgs a;
  a.n = b;
  a.heads = op.input_shapes[0][0];
  a.kv_heads = op.input_shapes[1][0];
  a.s = op.input_shapes[0][1];
  a.d = op.input_shapes[0][2];
  a.dv = op.input_shapes[2][2];
  a.causal = op.attrs.causal;
  a.scale = static_cast<float>(op.attrs.scale);
  return a;
}

// Matrices of a batched matmul a (..., M, K) x b (..., K, N) or b (..., N, K).
struct MatMulDims {
  std::int64_t batch, m, k, n;
};
MatMulDims MatMulShape(const Op& op, std::int64_t b) {
  const Shape& a = op.input_shapes[0];
  const std::size_t r = a.size();
  MatMulDims d{};
  d.m = a[r - 2];
  d.k = a[r - 1];
  d.n = op.output_shape[r - 1];
  d.batch = b * Prod(a, 0, r - 2);
  return d;
}

// y = the view (or copy) `op` makes of x, for `b` samples.
void ViewForward(Backend& be, const Op& op, std::int64_t b, const float* x, float* y) {
  const Shape& in = op.input_shapes[0];
  const std::int64_t n_out = b * Elements(op.output_shape);
  switch (op.attrs.view) {
    case ViewKind::kView: be.Copy(y, x, n_out); return;
    case ViewKind::kSlice: {
      const std::size_t axis = static_cast<std::size_t>(op.attrs.axis);
      const std::int64_t rows = b * Prod(in, 0, axis);
      const std::int64_t src_cols = Prod(in, axis, in.size());
      const std::int64_t cols = Prod(op.output_shape, axis, op.output_shape.size());
      const std::int64_t offset = op.attrs.begin * Prod(in, axis + 1, in.size());
      be.Copy2D(rows, cols, x + offset, src_cols, y, cols, false);
      return;
    }
    case ViewKind::kSplitHeads: {
      const std::int64_t heads = op.output_shape[0], seq = op.output_shape[1],
                         d = op.output_shape[2];
      be.SplitHeads(b, seq, heads, d, x, y, false);
      return;
    }
    case ViewKind::kMergeHeads: {
      const std::int64_t heads = in[0], seq = in[1], d = in[2];
      be.MergeHeads(b, seq, heads, d, x, y, false);
      return;
    }
    case ViewKind::kRepeatHeads: {
      // Head g * r + j of y is head g of x (Hugging Face's repeat_kv):
      // per sample and repeat j, G rows of S x D.
      const std::int64_t g = in[0], sd = in[1] * in[2], r = op.output_shape[0] / g;
      for (std::int64_t i = 0; i < b; ++i)
        for (std::int64_t j = 0; j < r; ++j)
          be.Copy2D(g, sd, x + i * g * sd, sd, y + i * g * r * sd + j * sd, r * sd, false);
      return;
    }
    case ViewKind::kDispatch:
    case ViewKind::kCombine:
      DTSIM_CHECK(false, "no kernel for " + op.name + " (UnsupportedOps refuses it)");
      return;
  }
}

// dx += the gradient of `op`'s view from dy, for `b` samples.
void ViewBackward(Backend& be, const Op& op, std::int64_t b, const float* dy, float* dx) {
  const Shape& in = op.input_shapes[0];
  const std::int64_t n_out = b * Elements(op.output_shape);
  switch (op.attrs.view) {
    case ViewKind::kView: be.Axpy(n_out, 1.0f, dy, dx); return;
    case ViewKind::kSlice: {
      const std::size_t axis = static_cast<std::size_t>(op.attrs.axis);
      const std::int64_t rows = b * Prod(in, 0, axis);
      const std::int64_t dst_cols = Prod(in, axis, in.size());
      const std::int64_t cols = Prod(op.output_shape, axis, op.output_shape.size());
      const std::int64_t offset = op.attrs.begin * Prod(in, axis + 1, in.size());
      be.Copy2D(rows, cols, dy, cols, dx + offset, dst_cols, true);
      return;
    }
    case ViewKind::kSplitHeads: {
      const std::int64_t heads = op.output_shape[0], seq = op.output_shape[1],
                         d = op.output_shape[2];
      be.MergeHeads(b, seq, heads, d, dy, dx, true);
      return;
    }
    case ViewKind::kMergeHeads: {
      const std::int64_t heads = in[0], seq = in[1], d = in[2];
      be.SplitHeads(b, seq, heads, d, dy, dx, true);
      return;
    }
    case ViewKind::kRepeatHeads: {
      // Each x head sums the gradients of its r copies.
      const std::int64_t g = in[0], sd = in[1] * in[2], r = op.output_shape[0] / g;
      for (std::int64_t i = 0; i < b; ++i)
        for (std::int64_t j = 0; j < r; ++j)
          be.Copy2D(g, sd, dy + i * g * r * sd + j * sd, r * sd, dx + i * g * sd, sd, true);
      return;
    }
    case ViewKind::kDispatch:
    case ViewKind::kCombine:
      DTSIM_CHECK(false, "no kernel for " + op.name + " (UnsupportedOps refuses it)");
      return;
  }
}

}  // namespace

void ModelRuntime::Forward(OpId v, int slot) {
  DTSIM_CHECK(Holds(v), "Forward of an op outside the stage");
  const Op& op = graph_.op(v);
  OpState& s = *ops_[v];
  const std::int64_t b = options_.micro_batch;
  const std::int64_t n_out = b * s.out;
  float* y = s.act[static_cast<std::size_t>(slot)];
  if (s.grad[static_cast<std::size_t>(slot)])
    backend_.Fill(s.grad[static_cast<std::size_t>(slot)], n_out, 0.0f);
  s.backward_done[static_cast<std::size_t>(slot)] = false;
  float* w = params_ + s.params.offset;
  const Shape& in = op.input_shapes.empty() ? op.output_shape : op.input_shapes[0];
  const std::int64_t n_in = b * Elements(in);
  switch (op.kind) {
    case OpKind::kInput: return;  // filled by SetInput
    case OpKind::kSigmoid: backend_.SigmoidForward(n_out, InputAct(v, 0, slot), y); return;
    case OpKind::kSilu: backend_.SiluForward(n_out, InputAct(v, 0, slot), y); return;
    case OpKind::kMul: {
      // Sample by sample: a per-column b differs between samples.
      const runtime_util::MulLayout m = *runtime_util::MulLayoutOf(op);
      const std::int64_t a_n = m.rows * m.cols, b_n = Elements(op.input_shapes[1]);
      const float* a = InputAct(v, 0, slot);
      const float* bb = InputAct(v, 1, slot);
      for (std::int64_t i = 0; i < b; ++i)
        backend_.MulForward(m.broadcast, m.rows, m.cols, a + i * a_n, bb + i * b_n, y + i * a_n);
      return;
    }
    case OpKind::kRmsNorm: {
      const std::int64_t cols = in.back();
      backend_.RmsNormForward(n_in / cols, cols, options_.norm_eps, InputAct(v, 0, slot), w, y,
                              s.aux1[static_cast<std::size_t>(slot)]);
      return;
    }
    case OpKind::kRotary:
      backend_.RotaryForward(b * in[0], in[1], in[2], InputAct(v, 0, slot), y);
      return;
    case OpKind::kAttention:
      backend_.AttentionForward(AttentionShape(op, b), InputAct(v, 0, slot), InputAct(v, 1, slot),
                                InputAct(v, 2, slot), y, s.aux1[static_cast<std::size_t>(slot)]);
      return;
    case OpKind::kRecurrent: RecurrentForward(v, slot); return;
    case OpKind::kConv2d: {
      const Conv2dArgs a = ConvArgs(op, b);
      const std::int64_t weights = a.k * (a.c / a.groups) * a.r * a.s;
      backend_.Conv2dForward(a, InputAct(v, 0, slot), w, op.attrs.bias ? w + weights : nullptr,
                             y);
      return;
    }
    case OpKind::kDense: {
      const std::int64_t in_f = in.back(), out_f = op.output_shape.back();
      const std::int64_t rows = n_in / in_f;
      const float* weight =
          op.attrs.tied_to >= 0
              ? params_ + ops_[static_cast<OpId>(op.attrs.tied_to)]->params.offset
              : w;
      // y (rows x out) = x (rows x in) W^T, W stored (out x in).
      backend_.Gemm(false, true, rows, out_f, in_f, 1.0f, InputAct(v, 0, slot), weight, 0.0f, y);
      if (op.attrs.bias) {
        const float* bias = op.attrs.tied_to >= 0 ? w : w + in_f * out_f;
        backend_.AddBias(y, bias, rows, out_f);
      }
      return;
    }
    case OpKind::kMatMul: {
      const MatMulDims d = MatMulShape(op, b);
      backend_.GemmBatched(d.batch, false, op.attrs.transpose_b, d.m, d.n, d.k, 1.0f,
                           InputAct(v, 0, slot), d.m * d.k, InputAct(v, 1, slot), d.k * d.n,
                           0.0f, y, d.m * d.n);
      return;
    }
    case OpKind::kMaxPool: backend_.MaxPoolForward(PoolArgs(op, b), InputAct(v, 0, slot), y); return;
    case OpKind::kAvgPool: backend_.AvgPoolForward(PoolArgs(op, b), InputAct(v, 0, slot), y); return;
    case OpKind::kRelu: backend_.ReluForward(n_out, InputAct(v, 0, slot), y); return;
    case OpKind::kGelu: backend_.GeluForward(n_out, InputAct(v, 0, slot), y); return;
    case OpKind::kTanh: backend_.TanhForward(n_out, InputAct(v, 0, slot), y); return;
    case OpKind::kBatchNorm: {
      const std::int64_t c = in[0];
      backend_.BatchNormForward(b, c, Elements(in) / c, options_.norm_eps, InputAct(v, 0, slot),
                                w, w + c, y, s.aux1[static_cast<std::size_t>(slot)],
                                s.aux2[static_cast<std::size_t>(slot)]);
      return;
    }
    case OpKind::kLayerNorm: {
      const std::int64_t cols = in.back();
      backend_.LayerNormForward(n_in / cols, cols, options_.norm_eps, InputAct(v, 0, slot), w,
                                w + cols, y, s.aux1[static_cast<std::size_t>(slot)],
                                s.aux2[static_cast<std::size_t>(slot)]);
      return;
    }
    case OpKind::kLocalResponseNorm:
      backend_.LrnForward(MakeLrnArgs(op, b), InputAct(v, 0, slot), y);
      return;
    case OpKind::kSoftmax: {
      const std::int64_t cols = in.back();
      const float* x = InputAct(v, 0, slot);
      if (op.attrs.scale != 1.0) {
        float* scaled = s.aux1[static_cast<std::size_t>(slot)];
        backend_.Copy(scaled, x, n_in);
        backend_.Scale(n_in, static_cast<float>(op.attrs.scale), scaled);
        x = scaled;
      }
      backend_.SoftmaxForward(n_in / cols, cols, op.attrs.causal, x, y);
      return;
    }
    case OpKind::kSoftmaxCrossEntropy: {
      const std::int64_t classes = in.back();
      const std::int64_t rows = n_in / classes;
      float* loss = s.aux2[static_cast<std::size_t>(slot)];
      backend_.SoftmaxCrossEntropyForward(rows, classes, InputAct(v, 0, slot),
                                          labels_[static_cast<std::size_t>(slot)],
                                          s.aux1[static_cast<std::size_t>(slot)], loss);
      // The op's output, one loss per sample, is not read by anything; Loss()
      // averages the per-row losses.
      return;
    }
    case OpKind::kEmbedding: {
      const std::int64_t hidden = op.output_shape.back();
      const float* ids = op.attrs.ids == models::EmbeddingIds::kTokens
                             ? InputAct(v, 0, slot)
                             : s.aux1[static_cast<std::size_t>(slot)];
      backend_.EmbeddingForward(n_in, hidden, ids, w, y);
      return;
    }
    case OpKind::kAdd: backend_.Add(n_out, InputAct(v, 0, slot), InputAct(v, 1, slot), y); return;
    case OpKind::kConcat: {
      const std::size_t axis = static_cast<std::size_t>(op.attrs.axis);
      const std::int64_t rows = b * Prod(op.output_shape, 0, axis);
      const std::int64_t dst_cols = Prod(op.output_shape, axis, op.output_shape.size());
      std::int64_t col = 0;
      for (std::size_t i = 0; i < op.input_shapes.size(); ++i) {
        const std::int64_t cols = Prod(op.input_shapes[i], axis, op.input_shapes[i].size());
        backend_.Copy2D(rows, cols, InputAct(v, i, slot), cols, y + col, dst_cols, false);
        col += cols;
      }
      return;
    }
    case OpKind::kDropout: {
      // A distinct stream per (step, op, slot); the index is the element.
      const std::uint64_t seed = options_.seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(step_ + 1)) ^
                                 (static_cast<std::uint64_t>(v) << 20) ^ static_cast<std::uint64_t>(slot);
      backend_.DropoutForward(n_out, options_.dropout, seed, 0, InputAct(v, 0, slot),
                              s.aux1[static_cast<std::size_t>(slot)], y);
      return;
    }
    case OpKind::kReshape:
      ViewForward(backend_, op, b, InputAct(v, 0, slot), y);
      return;
  }
}

void ModelRuntime::Backward(OpId v, int slot) {
  DTSIM_CHECK(Holds(v), "Backward of an op outside the stage");
  const Op& op = graph_.op(v);
  OpState& s = *ops_[v];
  const auto k = static_cast<std::size_t>(slot);
  if (op.kind == OpKind::kInput || s.backward_done[k]) return;
  s.backward_done[k] = true;
  const std::int64_t b = options_.micro_batch;
  const std::int64_t n_out = b * s.out;
  const float* dy = s.grad[k];
  float* w = params_ + s.params.offset;
  float* dw = grads_ + s.params.offset;
  const Shape& in = op.input_shapes[0];
  const std::int64_t n_in = b * Elements(in);
  switch (op.kind) {
    case OpKind::kInput: return;
    case OpKind::kSigmoid: backend_.SigmoidBackward(n_out, s.act[k], dy, InputGrad(v, 0, slot)); return;
    case OpKind::kSilu:
      backend_.SiluBackward(n_out, InputAct(v, 0, slot), dy, InputGrad(v, 0, slot));
      return;
    case OpKind::kMul: {
      const runtime_util::MulLayout m = *runtime_util::MulLayoutOf(op);
      const std::int64_t a_n = m.rows * m.cols, b_n = Elements(op.input_shapes[1]);
      const float* a = InputAct(v, 0, slot);
      const float* bb = InputAct(v, 1, slot);
      float* da = InputGrad(v, 0, slot);
      float* db = InputGrad(v, 1, slot);
      for (std::int64_t i = 0; i < b; ++i)
        backend_.MulBackward(m.broadcast, m.rows, m.cols, a + i * a_n, bb + i * b_n, dy + i * a_n,
                             da ? da + i * a_n : nullptr, db ? db + i * b_n : nullptr);
      return;
    }
    case OpKind::kRmsNorm: {
      const std::int64_t cols = in.back();
      backend_.RmsNormBackward(n_in / cols, cols, InputAct(v, 0, slot), w, s.aux1[k], dy,
                               InputGrad(v, 0, slot), dw);
      return;
    }
    case OpKind::kRotary:
      backend_.RotaryBackward(b * in[0], in[1], in[2], dy, InputGrad(v, 0, slot));
      return;
    case OpKind::kAttention:
      backend_.AttentionBackward(AttentionShape(op, b), InputAct(v, 0, slot), InputAct(v, 1, slot),
                                 InputAct(v, 2, slot), s.act[k], s.aux1[k], dy,
                                 InputGrad(v, 0, slot), InputGrad(v, 1, slot),
                                 InputGrad(v, 2, slot));
      return;
    case OpKind::kRecurrent: RecurrentBackward(v, slot); return;
    case OpKind::kConv2d: {
      const Conv2dArgs a = ConvArgs(op, b);
      const std::int64_t weights = a.k * (a.c / a.groups) * a.r * a.s;
      backend_.Conv2dBackward(a, InputAct(v, 0, slot), w, dy, InputGrad(v, 0, slot), dw,
                              op.attrs.bias ? dw + weights : nullptr);
      return;
    }
    case OpKind::kDense: {
      const std::int64_t in_f = in.back(), out_f = op.output_shape.back();
      const std::int64_t rows = n_in / in_f;
      const bool tied = op.attrs.tied_to >= 0;
      const std::int64_t tied_offset =
          tied ? ops_[static_cast<OpId>(op.attrs.tied_to)]->params.offset : 0;
      const float* weight = tied ? params_ + tied_offset : w;
      float* dweight = tied ? grads_ + tied_offset : dw;
      if (float* dx = InputGrad(v, 0, slot))  // dx (rows x in) += dy W
        backend_.Gemm(false, false, rows, in_f, out_f, 1.0f, dy, weight, 1.0f, dx);
      // dW (out x in) += dy^T x
      backend_.Gemm(true, false, out_f, in_f, rows, 1.0f, dy, InputAct(v, 0, slot), 1.0f, dweight);
      if (op.attrs.bias) backend_.BiasGrad(dy, rows, out_f, tied ? dw : dw + in_f * out_f);
      return;
    }
    case OpKind::kMatMul: {
      const MatMulDims d = MatMulShape(op, b);
      const float* a = InputAct(v, 0, slot);
      const float* bm = InputAct(v, 1, slot);
      if (float* da = InputGrad(v, 0, slot)) {
        // C = A B: dA = dC B^T; C = A B^T: dA = dC B.
        backend_.GemmBatched(d.batch, false, !op.attrs.transpose_b, d.m, d.k, d.n, 1.0f, dy,
                             d.m * d.n, bm, d.k * d.n, 1.0f, da, d.m * d.k);
      }
      if (float* db = InputGrad(v, 1, slot)) {
        if (op.attrs.transpose_b)  // dB (N x K) = dC^T A
          backend_.GemmBatched(d.batch, true, false, d.n, d.k, d.m, 1.0f, dy, d.m * d.n, a,
                               d.m * d.k, 1.0f, db, d.n * d.k);
        else  // dB (K x N) = A^T dC
          backend_.GemmBatched(d.batch, true, false, d.k, d.n, d.m, 1.0f, a, d.m * d.k, dy,
                               d.m * d.n, 1.0f, db, d.k * d.n);
      }
      return;
    }
    case OpKind::kMaxPool:
      if (float* dx = InputGrad(v, 0, slot))
        backend_.MaxPoolBackward(PoolArgs(op, b), InputAct(v, 0, slot), dy, dx);
      return;
    case OpKind::kAvgPool:
      if (float* dx = InputGrad(v, 0, slot)) backend_.AvgPoolBackward(PoolArgs(op, b), dy, dx);
      return;
    case OpKind::kRelu:
      if (float* dx = InputGrad(v, 0, slot)) backend_.ReluBackward(n_out, s.act[k], dy, dx);
      return;
    case OpKind::kGelu:
      if (float* dx = InputGrad(v, 0, slot))
        backend_.GeluBackward(n_out, InputAct(v, 0, slot), dy, dx);
      return;
    case OpKind::kTanh:
      if (float* dx = InputGrad(v, 0, slot)) backend_.TanhBackward(n_out, s.act[k], dy, dx);
      return;
    case OpKind::kBatchNorm: {
      const std::int64_t c = in[0];
      backend_.BatchNormBackward(b, c, Elements(in) / c, InputAct(v, 0, slot), w, s.aux1[k],
                                 s.aux2[k], dy, InputGrad(v, 0, slot), dw, dw + c);
      return;
    }
    case OpKind::kLayerNorm: {
      const std::int64_t cols = in.back();
      backend_.LayerNormBackward(n_in / cols, cols, InputAct(v, 0, slot), w, s.aux1[k],
                                 s.aux2[k], dy, InputGrad(v, 0, slot), dw, dw + cols);
      return;
    }
    case OpKind::kLocalResponseNorm:
      if (float* dx = InputGrad(v, 0, slot))
        backend_.LrnBackward(MakeLrnArgs(op, b), InputAct(v, 0, slot), s.act[k], dy, dx);
      return;
    case OpKind::kSoftmax: {
      float* dx = InputGrad(v, 0, slot);
      if (!dx) return;
      const std::int64_t cols = in.back();
      if (op.attrs.scale == 1.0) {
        backend_.SoftmaxBackward(n_in / cols, cols, s.act[k], dy, dx);
        return;
      }
      // d(softmax(a x))/dx = a * softmax'(a x): into scratch, then scaled.
      float* scratch = s.aux1[k];
      backend_.Fill(scratch, n_in, 0.0f);
      backend_.SoftmaxBackward(n_in / cols, cols, s.act[k], dy, scratch);
      backend_.Axpy(n_in, static_cast<float>(op.attrs.scale), scratch, dx);
      return;
    }
    case OpKind::kSoftmaxCrossEntropy: {
      float* dx = InputGrad(v, 0, slot);
      if (!dx) return;
      const std::int64_t classes = in.back();
      const std::int64_t rows = n_in / classes;
      // The mean over the step's samples (and a sequence's tokens).
      const double denominator =
          static_cast<double>(options_.samples_per_step) * static_cast<double>(rows / b);
      backend_.SoftmaxCrossEntropyBackward(rows, classes, s.aux1[k], labels_[k],
                                           static_cast<float>(1.0 / denominator), dx);
      return;
    }
    case OpKind::kEmbedding: {
      const std::int64_t hidden = op.output_shape.back();
      const float* ids = op.attrs.ids == models::EmbeddingIds::kTokens ? InputAct(v, 0, slot)
                                                                       : s.aux1[k];
      backend_.EmbeddingBackward(n_in, hidden, ids, dy, dw);
      return;
    }
    case OpKind::kAdd:
      if (float* da = InputGrad(v, 0, slot)) backend_.Axpy(n_out, 1.0f, dy, da);
      if (float* db = InputGrad(v, 1, slot)) backend_.Axpy(n_out, 1.0f, dy, db);
      return;
    case OpKind::kConcat: {
      const std::size_t axis = static_cast<std::size_t>(op.attrs.axis);
      const std::int64_t rows = b * Prod(op.output_shape, 0, axis);
      const std::int64_t src_cols = Prod(op.output_shape, axis, op.output_shape.size());
      std::int64_t col = 0;
      for (std::size_t i = 0; i < op.input_shapes.size(); ++i) {
        const std::int64_t cols = Prod(op.input_shapes[i], axis, op.input_shapes[i].size());
        if (float* dx = InputGrad(v, i, slot))
          backend_.Copy2D(rows, cols, dy + col, src_cols, dx, cols, true);
        col += cols;
      }
      return;
    }
    case OpKind::kDropout:
      if (float* dx = InputGrad(v, 0, slot)) backend_.DropoutBackward(n_out, s.aux1[k], dy, dx);
      return;
    case OpKind::kReshape:
      if (float* dx = InputGrad(v, 0, slot)) ViewBackward(backend_, op, b, dy, dx);
      return;
  }
}

}  // namespace dtsim::exec
