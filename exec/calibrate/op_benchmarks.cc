// MeasureOpKind (device_benchmarks.h): one forward and backward of each op
// kind at a representative shape, with the FLOPs GraphBuilder gives the op.
//
// Shapes (full; `quick` divides the batch N by 4):
//   dense         N=256, 1024 -> 1024 (a BERT-base-sized projection)
//   conv2d        N=8, 64x56x56 -> 64, 3x3 pad 1 (ResNet-50 conv2_x)
//   matmul        N=8, 8 heads of (128 x 64) x (128 x 64)^T (attention scores)
//   max/avgpool   N=16, 64x56x56, 3x3 stride 2 pad 1 (ResNet-50's stem pool)
//   elementwise   N=16, 64x64x64 = 4 Mi elements (relu, gelu, tanh, add, dropout)
//   batchnorm     N=16, 64x56x56
//   layernorm     N=16, 256 x 1024 (BERT-large-like rows)
//   lrn           N=8, 64x28x28, depth radius 2
//   softmax       N=8, 8 heads x 128 x 128 scores
//   softmax_xent  N=256, 1000 classes
//   embedding     N=16, 256 ids, table 8192 x 512
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "exec/calibrate/device_benchmarks.h"
#include "exec/calibrate/device_buffers.h"
#include "models/graph_builder.h"

namespace dtsim::exec {
namespace {

using models::OpKind;

// What one run of a kind does: the FLOPs (per batch) and the calls.
struct OpRun {
  std::string shape;
  double flops = 0;
  std::function<void()> run;
};

// FLOPs of forward + backward of `op` over `n` samples.
double FwdBwdFlops(const models::Op& op, std::int64_t n) {
  return static_cast<double>(n) * (op.fwd_flops + op.bwd_input_flops + op.bwd_weight_flops);
}

// "n<n> <rest>": the batch and the per-sample shape.
std::string Shape(std::int64_t n, const char* rest) {
  std::string s = "n";
  s += std::to_string(n);
  s += ' ';
  s += rest;
  return s;
}

// A dense layer's three passes, each a call sequence of its own.
struct DensePasses {
  std::string shape;
  double flops = 0;  // all three passes
  std::function<void()> forward, data_grad, weight_grad;
};

DensePasses DenseLayer(Backend& be, DeviceBuffers& buf, std::int64_t n) {
  const std::int64_t in = 1024, out = 1024;
  models::GraphBuilder g("calibrate");
  const models::Tensor y = g.Dense("op", g.Input("x", {in}), {.out_features = out});
  // x (n, in), W (out, in) as PyTorch's Linear stores it, y = x W^T + b.
  const float* x = buf.Random(n * in, 1);
  const float* w = buf.Random(out * in, 2);
  const float* b = buf.Random(out, 3);
  float* ys = buf.Filled(n * out, 0);
  const float* dy = buf.Random(n * out, 4);
  float* dx = buf.Filled(n * in, 0);
  float* dw = buf.Filled(out * in, 0);
  float* db = buf.Filled(out, 0);
  DensePasses d;
  d.shape = Shape(n, "1024->1024");
  d.flops = FwdBwdFlops(g.graph().op(y.op), n);
  d.forward = [=, &be] {
    be.Gemm(false, true, n, out, in, 1, x, w, 0, ys);
    be.AddBias(ys, b, n, out);
  };
  d.data_grad = [=, &be] { be.Gemm(false, false, n, in, out, 1, dy, w, 1, dx); };  // dx += dy W
  d.weight_grad = [=, &be] {
    be.Gemm(true, false, out, in, n, 1, dy, x, 1, dw);  // dW += dy^T x
    be.BiasGrad(dy, n, out, db);
  };
  return d;
}

OpRun Dense(Backend& be, DeviceBuffers& buf, std::int64_t n) {
  const DensePasses d = DenseLayer(be, buf, n);
  return {d.shape, d.flops, [d] {
            d.forward();
            d.data_grad();
            d.weight_grad();
          }};
}

// 3x3, stride 1, same padding, `channels` in and out, on side x side.
OpRun Conv(Backend& be, DeviceBuffers& buf, std::int64_t n, std::int64_t channels = 64,
           std::int64_t side = 56) {
  Conv2dArgs a;
  a.n = n, a.c = channels, a.h = a.w = side, a.k = channels, a.r = a.s = 3;
  a.pad_h = a.pad_w = 1;
  a.oh = a.ow = side;
  models::GraphBuilder g("calibrate");
  const models::Tensor y =
      g.Conv2d("op", g.Input("x", {a.c, a.h, a.w}), models::ConvSpec::Square(a.k, 3, 1, 1));
  const std::int64_t xc = n * a.c * a.h * a.w, wc = a.k * a.c * 9, yc = n * a.k * a.oh * a.ow;
  const float* x = buf.Random(xc, 1);
  const float* w = buf.Random(wc, 2);
  const float* b = buf.Random(a.k, 3);
  float* ys = buf.Filled(yc, 0);
  const float* dy = buf.Random(yc, 4);
  float* dx = buf.Filled(xc, 0);
  float* dw = buf.Filled(wc, 0);
  float* db = buf.Filled(a.k, 0);
  const std::string shape = std::to_string(channels) + "x" + std::to_string(side) + "x" +
                            std::to_string(side) + " -> " + std::to_string(channels) + ", 3x3";
  return {Shape(n, shape.c_str()), FwdBwdFlops(g.graph().op(y.op), n), [=, &be] {
            be.Conv2dForward(a, x, w, b, ys);
            be.Conv2dBackward(a, x, w, dy, dx, dw, db);
          }};
}

OpRun MatMul(Backend& be, DeviceBuffers& buf, std::int64_t n) {
  const std::int64_t heads = 8, s = 128, d = 64, batch = n * heads;
  models::GraphBuilder g("calibrate");
  const models::Tensor y = g.MatMul("op", g.Input("q", {heads, s, d}), g.Input("k", {heads, s, d}),
                                    {.transpose_b = true});
  // scores (s x s) = q (s x d) k^T per head and sample.
  const float* q = buf.Random(batch * s * d, 1);
  const float* k = buf.Random(batch * s * d, 2);
  float* c = buf.Filled(batch * s * s, 0);
  const float* dc = buf.Random(batch * s * s, 3);
  float* dq = buf.Filled(batch * s * d, 0);
  float* dk = buf.Filled(batch * s * d, 0);
  return {Shape(n, "8 x (128x64)(128x64)^T"), FwdBwdFlops(g.graph().op(y.op), n),
          [=, &be] {
            be.GemmBatched(batch, false, true, s, s, d, 1, q, s * d, k, s * d, 0, c, s * s);
            // dq += dc k; dk += dc^T q.
            be.GemmBatched(batch, false, false, s, d, s, 1, dc, s * s, k, s * d, 1, dq, s * d);
            be.GemmBatched(batch, true, false, s, d, s, 1, dc, s * s, q, s * d, 1, dk, s * d);
          }};
}

OpRun Pool(Backend& be, DeviceBuffers& buf, std::int64_t n, bool max) {
  models::GraphBuilder g("calibrate");
  const models::Tensor x = g.Input("x", {64, 56, 56});
  const models::PoolSpec spec = models::PoolSpec::Square(3, 2, 1);
  const models::Tensor y = max ? g.MaxPool("op", x, spec) : g.AvgPool("op", x, spec);
  Pool2dArgs a;
  a.n = n, a.c = 64, a.h = a.w = 56, a.r = a.s = 3, a.stride_h = a.stride_w = 2;
  a.pad_h = a.pad_w = 1;
  a.oh = y.shape[1], a.ow = y.shape[2];
  const std::int64_t xc = n * 64 * 56 * 56, yc = n * 64 * a.oh * a.ow;
  const float* xs = buf.Random(xc, 1);
  float* ys = buf.Filled(yc, 0);
  const float* dy = buf.Random(yc, 2);
  float* dx = buf.Filled(xc, 0);
  return {Shape(n, "64x56x56, 3x3/2"), FwdBwdFlops(g.graph().op(y.op), n), [=, &be] {
            if (max) {
              be.MaxPoolForward(a, xs, ys);
              be.MaxPoolBackward(a, xs, dy, dx);
            } else {
              be.AvgPoolForward(a, xs, ys);
              be.AvgPoolBackward(a, dy, dx);
            }
          }};
}

// relu, gelu, tanh, dropout, add on N x 64x64x64 elements.
OpRun Elementwise(Backend& be, DeviceBuffers& buf, std::int64_t n, OpKind kind) {
  models::GraphBuilder g("calibrate");
  const models::Tensor x = g.Input("x", {64, 64, 64});
  models::Tensor y;
  switch (kind) {
    case OpKind::kRelu: y = g.Relu("op", x); break;
    case OpKind::kGelu: y = g.Gelu("op", x); break;
    case OpKind::kTanh: y = g.Tanh("op", x); break;
    case OpKind::kDropout: y = g.Dropout("op", x); break;
    case OpKind::kAdd: y = g.Add("op", x, g.Input("x2", {64, 64, 64})); break;
    case OpKind::kSigmoid: y = g.Sigmoid("op", x); break;
    case OpKind::kSilu: y = g.Silu("op", x); break;
    case OpKind::kMul: y = g.Mul("op", x, g.Input("x2", {64, 64, 64})); break;
    case OpKind::kRotary: y = g.Rotary("op", x); break;
    default: DTSIM_CHECK(false, "not an elementwise kind");
  }
  const std::int64_t count = n * 64 * 64 * 64;
  const float* xs = buf.Random(count, 1);
  const float* x2 = buf.Random(count, 2);
  float* ys = buf.Filled(count, 0);
  float* mask = buf.Filled(count, 0);
  const float* dy = buf.Random(count, 3);
  float* dx = buf.Filled(count, 0);
  return {Shape(n, "64x64x64"), FwdBwdFlops(g.graph().op(y.op), n), [=, &be] {
            switch (kind) {
              case OpKind::kRelu:
                be.ReluForward(count, xs, ys);
                be.ReluBackward(count, ys, dy, dx);
                break;
              case OpKind::kGelu:
                be.GeluForward(count, xs, ys);
                be.GeluBackward(count, xs, dy, dx);
                break;
              case OpKind::kTanh:
                be.TanhForward(count, xs, ys);
                be.TanhBackward(count, ys, dy, dx);
                break;
              case OpKind::kDropout:
                be.DropoutForward(count, 0.1f, 1, 0, xs, mask, ys);
                be.DropoutBackward(count, mask, dy, dx);
                break;
              case OpKind::kSigmoid:
                be.SigmoidForward(count, xs, ys);
                be.SigmoidBackward(count, ys, dy, dx);
                break;
              case OpKind::kSilu:
                be.SiluForward(count, xs, ys);
                be.SiluBackward(count, xs, dy, dx);
                break;
              case OpKind::kMul:  // dx2 into the mask's buffer
                be.MulForward(MulBroadcast::kNone, 1, count, xs, x2, ys);
                be.MulBackward(MulBroadcast::kNone, 1, count, xs, x2, dy, dx, mask);
                break;
              case OpKind::kRotary:  // 64 x n rows of 64 positions, head size 64
                be.RotaryForward(n * 64, 64, 64, xs, ys);
                be.RotaryBackward(n * 64, 64, 64, dy, dx);
                break;
              default:  // kAdd: its backward has no FLOPs (the gradient passes through)
                be.Add(count, xs, x2, ys);
                break;
            }
          }};
}

OpRun BatchNorm(Backend& be, DeviceBuffers& buf, std::int64_t n) {
  const std::int64_t c = 64, spatial = 56 * 56;
  models::GraphBuilder g("calibrate");
  const models::Tensor y = g.BatchNorm("op", g.Input("x", {c, 56, 56}));
  const std::int64_t count = n * c * spatial;
  const float* x = buf.Random(count, 1);
  const float* gamma = buf.Random(c, 2);
  const float* beta = buf.Random(c, 3);
  float* ys = buf.Filled(count, 0);
  float* mean = buf.Filled(c, 0);
  float* rstd = buf.Filled(c, 0);
  const float* dy = buf.Random(count, 4);
  float* dx = buf.Filled(count, 0);
  float* dgamma = buf.Filled(c, 0);
  float* dbeta = buf.Filled(c, 0);
  return {Shape(n, "64x56x56"), FwdBwdFlops(g.graph().op(y.op), n), [=, &be] {
            be.BatchNormForward(n, c, spatial, 1e-5f, x, gamma, beta, ys, mean, rstd);
            be.BatchNormBackward(n, c, spatial, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
          }};
}

OpRun LayerNorm(Backend& be, DeviceBuffers& buf, std::int64_t n) {
  const std::int64_t s = 256, h = 1024, rows = n * s;
  models::GraphBuilder g("calibrate");
  const models::Tensor y = g.LayerNorm("op", g.Input("x", {s, h}));
  const float* x = buf.Random(rows * h, 1);
  const float* gamma = buf.Random(h, 2);
  const float* beta = buf.Random(h, 3);
  float* ys = buf.Filled(rows * h, 0);
  float* mean = buf.Filled(rows, 0);
  float* rstd = buf.Filled(rows, 0);
  const float* dy = buf.Random(rows * h, 4);
  float* dx = buf.Filled(rows * h, 0);
  float* dgamma = buf.Filled(h, 0);
  float* dbeta = buf.Filled(h, 0);
  return {Shape(n, "256x1024"), FwdBwdFlops(g.graph().op(y.op), n), [=, &be] {
            be.LayerNormForward(rows, h, 1e-5f, x, gamma, beta, ys, mean, rstd);
            be.LayerNormBackward(rows, h, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
          }};
}

OpRun RmsNorm(Backend& be, DeviceBuffers& buf, std::int64_t n) {
  const std::int64_t s = 256, h = 1024, rows = n * s;
  models::GraphBuilder g("calibrate");
  const models::Tensor y = g.RmsNorm("op", g.Input("x", {s, h}));
  const float* x = buf.Random(rows * h, 1);
  const float* gamma = buf.Random(h, 2);
  float* ys = buf.Filled(rows * h, 0);
  float* rstd = buf.Filled(rows, 0);
  const float* dy = buf.Random(rows * h, 4);
  float* dx = buf.Filled(rows * h, 0);
  float* dgamma = buf.Filled(h, 0);
  return {Shape(n, "256x1024"), FwdBwdFlops(g.graph().op(y.op), n), [=, &be] {
            be.RmsNormForward(rows, h, 1e-5f, x, gamma, ys, rstd);
            be.RmsNormBackward(rows, h, x, gamma, rstd, dy, dx, dgamma);
          }};
}

OpRun Attention(Backend& be, DeviceBuffers& buf, std::int64_t n) {
  AttentionArgs a;
  a.n = n, a.heads = 8, a.kv_heads = 8, a.s = 128, a.d = a.dv = 64, a.causal = true;
  a.scale = 0.125f;
  models::GraphBuilder g("calibrate");
  const models::Tensor q = g.Input("q", {a.heads, a.s, a.d});
  const models::Tensor y =
      g.Attention("op", q, g.Input("k", {a.heads, a.s, a.d}), g.Input("v", {a.heads, a.s, a.d}),
                  {.causal = true, .scale = 0.125});
  const std::int64_t count = n * a.heads * a.s * a.d, rows = n * a.heads * a.s;
  const float* qs = buf.Random(count, 1);
  const float* ks = buf.Random(count, 2);
  const float* vs = buf.Random(count, 3);
  float* o = buf.Filled(count, 0);
  float* lse = buf.Filled(rows, 0);
  const float* dout = buf.Random(count, 4);
  float* dq = buf.Filled(count, 0);
  float* dk = buf.Filled(count, 0);
  float* dv = buf.Filled(count, 0);
  return {Shape(n, "8 heads x 128 x 64, causal"), FwdBwdFlops(g.graph().op(y.op), n), [=, &be] {
            be.AttentionForward(a, qs, ks, vs, o, lse);
            be.AttentionBackward(a, qs, ks, vs, o, lse, dout, dq, dk, dv);
          }};
}

OpRun Lrn(Backend& be, DeviceBuffers& buf, std::int64_t n) {
  LrnArgs a;
  a.n = n, a.c = 64, a.h = a.w = 28, a.radius = 2;
  models::GraphBuilder g("calibrate");
  const models::Tensor y = g.LocalResponseNorm("op", g.Input("x", {a.c, a.h, a.w}), a.radius);
  const std::int64_t count = n * a.c * a.h * a.w;
  const float* x = buf.Random(count, 1);
  float* ys = buf.Filled(count, 0);
  const float* dy = buf.Random(count, 2);
  float* dx = buf.Filled(count, 0);
  return {Shape(n, "64x28x28, radius 2"), FwdBwdFlops(g.graph().op(y.op), n), [=, &be] {
            be.LrnForward(a, x, ys);
            be.LrnBackward(a, x, ys, dy, dx);
          }};
}

OpRun Softmax(Backend& be, DeviceBuffers& buf, std::int64_t n) {
  const std::int64_t heads = 8, s = 128, rows = n * heads * s;
  models::GraphBuilder g("calibrate");
  const models::Tensor y = g.Softmax("op", g.Input("x", {heads, s, s}));
  const float* x = buf.Random(rows * s, 1);
  float* ys = buf.Filled(rows * s, 0);
  const float* dy = buf.Random(rows * s, 2);
  float* dx = buf.Filled(rows * s, 0);
  return {Shape(n, "8x128x128"), FwdBwdFlops(g.graph().op(y.op), n), [=, &be] {
            be.SoftmaxForward(rows, s, false, x, ys);
            be.SoftmaxBackward(rows, s, ys, dy, dx);
          }};
}

OpRun SoftmaxXent(Backend& be, DeviceBuffers& buf, std::int64_t n) {
  const std::int64_t classes = 1000;
  models::GraphBuilder g("calibrate");
  const models::Tensor y =
      g.SoftmaxCrossEntropy("op", g.Input("logits", {classes}), classes);
  std::vector<float> labels(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    labels[i] = static_cast<float>((i * 7919) % classes);  // integer class ids
  }
  const float* logits = buf.Random(n * classes, 1);
  const float* label_buf = buf.From(labels);
  float* probs = buf.Filled(n * classes, 0);
  float* loss = buf.Filled(n, 0);
  float* dlogits = buf.Filled(n * classes, 0);
  const float scale = 1.0f / static_cast<float>(n);
  return {Shape(n, "1000 classes"), FwdBwdFlops(g.graph().op(y.op), n), [=, &be] {
            be.SoftmaxCrossEntropyForward(n, classes, logits, label_buf, probs, loss);
            be.SoftmaxCrossEntropyBackward(n, classes, probs, label_buf, scale, dlogits);
          }};
}

OpRun Embedding(Backend& be, DeviceBuffers& buf, std::int64_t n) {
  const std::int64_t s = 256, vocab = 8192, hidden = 512, count = n * s;
  models::GraphBuilder g("calibrate");
  const models::Tensor y = g.Embedding("op", g.Input("ids", {s}), vocab, hidden);
  std::vector<float> ids(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<float>((i * 104729) % vocab);  // integer row ids
  }
  const float* id_buf = buf.From(ids);
  const float* table = buf.Random(vocab * hidden, 1);
  float* ys = buf.Filled(count * hidden, 0);
  const float* dy = buf.Random(count * hidden, 2);
  float* dtable = buf.Filled(vocab * hidden, 0);
  return {Shape(n, "256 ids, 8192x512"), FwdBwdFlops(g.graph().op(y.op), n), [=, &be] {
            be.EmbeddingForward(count, hidden, id_buf, table, ys);
            be.EmbeddingBackward(count, hidden, id_buf, dy, dtable);
          }};
}

OpRun MakeRun(Backend& be, DeviceBuffers& buf, OpKind kind, bool quick) {
  // Full batches; quick runs a quarter of each.
  const auto batch = [quick](std::int64_t full) { return quick ? full / 4 : full; };
  switch (kind) {
    case OpKind::kDense: return Dense(be, buf, batch(256));
    case OpKind::kConv2d: return Conv(be, buf, batch(8));
    case OpKind::kMatMul: return MatMul(be, buf, batch(8));
    case OpKind::kMaxPool: return Pool(be, buf, batch(16), true);
    case OpKind::kAvgPool: return Pool(be, buf, batch(16), false);
    case OpKind::kRelu:
    case OpKind::kGelu:
    case OpKind::kTanh:
    case OpKind::kDropout:
    case OpKind::kAdd:
    case OpKind::kSigmoid:
    case OpKind::kSilu:
    case OpKind::kMul:
    case OpKind::kRotary: return Elementwise(be, buf, batch(16), kind);
    case OpKind::kRmsNorm: return RmsNorm(be, buf, batch(16));
    case OpKind::kAttention: return Attention(be, buf, batch(4));
    case OpKind::kBatchNorm: return BatchNorm(be, buf, batch(16));
    case OpKind::kLayerNorm: return LayerNorm(be, buf, batch(16));
    case OpKind::kLocalResponseNorm: return Lrn(be, buf, batch(8));
    case OpKind::kSoftmax: return Softmax(be, buf, batch(8));
    case OpKind::kSoftmaxCrossEntropy: return SoftmaxXent(be, buf, batch(256));
    case OpKind::kEmbedding: return Embedding(be, buf, batch(16));
    default: break;
  }
  DTSIM_CHECK(false, std::string("no calibration for op kind ") + models::OpKindName(kind));
  return {};
}

}  // namespace

const std::vector<OpKind>& CalibratedOpKinds() {
  static const std::vector<OpKind> kinds = [] {
    std::vector<OpKind> k;
    for (OpKind kind : models::AllOpKinds()) {
      // Views and copies need no calibration; recurrent layers are priced
      // by their GEMMs and cells (sim/cost/rnn_kernels.h), not by a
      // per-kind efficiency.
      if (kind != OpKind::kInput && kind != OpKind::kConcat && kind != OpKind::kReshape &&
          kind != OpKind::kRecurrent) {
        k.push_back(kind);
      }
    }
    return k;
  }();
  return kinds;
}

namespace {

config::ProfileMeasurement TimeRun(Backend& backend, const OpRun& op,
                                   const TimingOptions& timing) {
  const Timing t = TimeMedian(
      [&] {
        op.run();
        backend.Synchronize();
      },
      timing);
  config::ProfileMeasurement m;
  m.shape = op.shape;
  m.flops = op.flops;
  m.seconds = t.median_s;
  m.repeats = t.repeats;
  return m;
}

}  // namespace

config::ProfileMeasurement MeasureDenseRows(Backend& backend, std::int64_t rows,
                                            const TimingOptions& timing) {
  DeviceBuffers buffers(backend);
  const DensePasses d = DenseLayer(backend, buffers, rows);
  // Each pass with cold caches, as in training: between two passes over a
  // layer's weights a step runs the other layers, and between steps the
  // optimizer's pass over every parameter. 128 MiB written and read back
  // evicts a last-level cache of up to about 100 MiB.
  std::vector<float> evict(std::size_t{32} << 20, 0.0f);
  TimingOptions cold = timing;
  cold.before_each = [&evict] {
    for (float& v : evict) v += 1.0f;
  };
  config::ProfileMeasurement m;
  m.shape = d.shape;
  m.flops = d.flops;
  for (const std::function<void()>* pass : {&d.forward, &d.data_grad, &d.weight_grad}) {
    const Timing t = TimeMedian(
        [&] {
          (*pass)();
          backend.Synchronize();
        },
        cold);
    m.seconds += t.median_s;
    m.repeats = t.repeats;
  }
  m.group = "dense_rows";
  m.name = "rows " + std::to_string(rows);
  return m;
}

config::ProfileMeasurement MeasureConvSize(Backend& backend, std::int64_t channels,
                                           std::int64_t side, bool quick,
                                           const TimingOptions& timing) {
  DeviceBuffers buffers(backend);
  config::ProfileMeasurement m =
      TimeRun(backend, Conv(backend, buffers, quick ? 2 : 8, channels, side), timing);
  // Forward FLOPs per sample: 2 x C x K x 9 x side^2 (C = K = channels).
  const std::int64_t fwd = 2 * channels * channels * 9 * side * side;
  m.group = "conv_size";
  m.name = "flops " + std::to_string(fwd);
  return m;
}

config::ProfileMeasurement MeasureOpKind(Backend& backend, OpKind kind, bool quick,
                                         const TimingOptions& timing) {
  DeviceBuffers buffers(backend);
  config::ProfileMeasurement m = TimeRun(backend, MakeRun(backend, buffers, kind, quick), timing);
  m.group = "op";
  m.name = models::OpKindName(kind);
  return m;
}

}  // namespace dtsim::exec
