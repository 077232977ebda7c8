#include "models/graph_builder.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace dtsim::models {
namespace {

// Output size of a window, PyTorch Conv2d/MaxPool2d documentation:
//   out = floor((in + 2 * pad - kernel) / stride) + 1
std::int64_t ClosedForm(std::int64_t in, int kernel, int stride, int pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

TEST(GraphBuilder, ConvOutputShapesFollowTheClosedForm) {
  struct Case {
    std::int64_t in;
    int kernel, stride, pad;
  };
  // ResNet stem, Inception stem, AlexNet conv1, 'same' 3x3, 1x1 stride 2.
  const Case cases[] = {{224, 7, 2, 3}, {299, 3, 2, 0}, {224, 11, 4, 2}, {56, 3, 1, 1},
                        {56, 1, 2, 0},  {35, 3, 2, 0},  {17, 7, 1, 3},   {8, 3, 1, 1}};
  for (const Case& c : cases) {
    GraphBuilder b("t");
    const Tensor x = b.Input("x", {3, c.in, c.in});
    const Tensor y = b.Conv2d("conv", x, ConvSpec::Square(8, c.kernel, c.stride, c.pad));
    const std::int64_t out = ClosedForm(c.in, c.kernel, c.stride, c.pad);
    EXPECT_EQ(y.shape, (Shape{8, out, out})) << c.in << " k" << c.kernel << " s" << c.stride;
  }
  // Known values: 224 -> 112 (ResNet conv1), 299 -> 149 (Inception 1a),
  // 224 -> 55 (AlexNet conv1).
  EXPECT_EQ(ClosedForm(224, 7, 2, 3), 112);
  EXPECT_EQ(ClosedForm(299, 3, 2, 0), 149);
  EXPECT_EQ(ClosedForm(224, 11, 4, 2), 55);
}

TEST(GraphBuilder, RectangularKernelsKeepSizeWithSamePadding) {
  GraphBuilder b("t");
  const Tensor x = b.Input("x", {768, 17, 17});
  EXPECT_EQ(b.Conv2d("c17", x, ConvSpec::Rect(128, 1, 7, 0, 3)).shape, (Shape{128, 17, 17}));
  EXPECT_EQ(b.Conv2d("c71", x, ConvSpec::Rect(128, 7, 1, 3, 0)).shape, (Shape{128, 17, 17}));
}

TEST(GraphBuilder, CeilModePoolingMatchesTensorFlowSame) {
  // TF 'SAME' output = ceil(in / stride): 24 -> 12 and 12 -> 6 for 3x3/2.
  // floor mode would give (24 - 3) / 2 + 1 = 11.
  GraphBuilder b("t");
  const Tensor x = b.Input("x", {64, 24, 24});
  const PoolSpec s = PoolSpec::Square(3, 2);
  EXPECT_EQ(b.MaxPool("floor", x, s).shape, (Shape{64, 11, 11}));
  const Tensor p = b.MaxPool("ceil", x, s.WithCeilMode());
  EXPECT_EQ(p.shape, (Shape{64, 12, 12}));
  EXPECT_EQ(b.MaxPool("ceil2", p, s.WithCeilMode()).shape, (Shape{64, 6, 6}));
  // PyTorch's rule: the last window may not start in the padding. 5 with
  // k2 s2 p1: ceil((5 + 2 - 2) / 2) + 1 = 4, (4 - 1) * 2 = 6 >= 5 + 1 -> 3.
  const Tensor y = b.Input("y", {1, 5, 5});
  EXPECT_EQ(b.MaxPool("edge", y, PoolSpec::Square(2, 2, 1).WithCeilMode()).shape,
            (Shape{1, 3, 3}));
}

TEST(GraphBuilder, ConvCounts) {
  // 3x32x32 -> 16 filters 3x3, pad 1: output 16x32x32.
  //   MACs = 16 * 32 * 32 * 3 * 3 * 3 = 442,368; bias adds 16 * 32 * 32 = 16,384
  //   params = 16 * 27 + 16 = 448
  GraphBuilder b("t");
  const Tensor x = b.Input("x", {3, 32, 32});
  const Tensor y = b.Conv2d("conv", x, ConvSpec::Square(16, 3, 1, 1));
  const Op& op = b.graph().op(y.op);
  EXPECT_EQ(op.params, 448);
  EXPECT_DOUBLE_EQ(op.fwd_flops, 2 * 442368.0 + 16384);
  EXPECT_DOUBLE_EQ(op.bwd_input_flops, 2 * 442368.0);
  EXPECT_DOUBLE_EQ(op.bwd_weight_flops, 2 * 442368.0 + 16384);
  EXPECT_DOUBLE_EQ(op.read_elements_per_sample, 3 * 32 * 32);
  EXPECT_DOUBLE_EQ(op.written_elements_per_sample, 16 * 32 * 32);
  EXPECT_DOUBLE_EQ(op.saved_elements_per_sample, 3 * 32 * 32);  // its input
  EXPECT_EQ(op.input_shapes, (std::vector<Shape>{{3, 32, 32}}));
}

TEST(GraphBuilder, GroupedConvDividesTheWeights) {
  // Depthwise 3x3 on 32 channels: params = 32 * (32 / 32) * 9 = 288, no bias;
  // MACs = 32 * 8 * 8 * 1 * 9 = 18,432.
  GraphBuilder b("t");
  const Tensor x = b.Input("x", {32, 8, 8});
  ConvSpec s = ConvSpec::Square(32, 3, 1, 1).NoBias();
  s.groups = 32;
  const Op& op = b.graph().op(b.Conv2d("dw", x, s).op);
  EXPECT_EQ(op.params, 288);
  EXPECT_DOUBLE_EQ(op.fwd_flops, 2 * 18432.0);
}

TEST(GraphBuilder, DenseOnSequencesCountsEveryRow) {
  // (S=128, H=64) -> 256 with bias: MACs = 128 * 64 * 256; params 64 * 256 + 256.
  GraphBuilder b("t");
  const Tensor x = b.Input("x", {128, 64});
  const Tensor y = b.Dense("fc", x, {.out_features = 256});
  const Op& op = b.graph().op(y.op);
  EXPECT_EQ(y.shape, (Shape{128, 256}));
  EXPECT_EQ(op.params, 64 * 256 + 256);
  EXPECT_DOUBLE_EQ(op.fwd_flops, 2.0 * 128 * 64 * 256 + 128 * 256);
  // A tied head keeps its bias only, and still computes its weight gradient.
  const Op& tied = b.graph().op(
      b.Dense("head", x, {.out_features = 1000, .bias = true, .tied_weight = true}).op);
  EXPECT_EQ(tied.params, 1000);
  EXPECT_DOUBLE_EQ(tied.bwd_weight_flops, 2.0 * 128 * 64 * 1000 + 128 * 1000);
}

TEST(GraphBuilder, MatMulBackwardIsTwiceForwardWithoutWeights) {
  // Attention scores: (A=4, S=16, D=8) x (4, 16, 8)^T -> (4, 16, 16);
  // fwd = 2 * 4 * 16 * 8 * 16.
  GraphBuilder b("t");
  const Tensor q = b.Input("q", {4, 16, 8});
  const Tensor k = b.Input("k", {4, 16, 8});
  const Tensor s = b.MatMul("scores", q, k, {.transpose_b = true});
  const Op& op = b.graph().op(s.op);
  EXPECT_EQ(s.shape, (Shape{4, 16, 16}));
  EXPECT_DOUBLE_EQ(op.fwd_flops, 2.0 * 4 * 16 * 8 * 16);
  EXPECT_DOUBLE_EQ(op.bwd_input_flops, 2 * op.fwd_flops);
  EXPECT_EQ(op.params, 0);
  EXPECT_DOUBLE_EQ(op.bwd_weight_flops, 0);
  EXPECT_DOUBLE_EQ(op.saved_elements_per_sample, 2 * 4 * 16 * 8);  // both operands
  EXPECT_THROW(b.MatMul("bad", q, k), UserError);  // (16, 8) x (16, 8)
}

TEST(GraphBuilder, NormalisationParamsAreGammaAndBeta) {
  GraphBuilder b("t");
  const Tensor img = b.Input("img", {64, 8, 8});
  const Tensor seq = b.Input("seq", {10, 32});
  const Op& bn = b.graph().op(b.BatchNorm("bn", img).op);
  const Op& ln = b.graph().op(b.LayerNorm("ln", seq).op);
  EXPECT_EQ(bn.params, 2 * 64);  // running mean/var are buffers
  EXPECT_EQ(ln.params, 2 * 32);
  EXPECT_DOUBLE_EQ(bn.fwd_flops, 7.0 * 64 * 8 * 8);
  // LN keeps its input and mean + rstd of each of the 10 rows.
  EXPECT_DOUBLE_EQ(ln.saved_elements_per_sample, 10 * 32 + 2 * 10);
}

TEST(GraphBuilder, EmbeddingAndLoss) {
  GraphBuilder b("t");
  const Tensor ids = b.Input("ids", {16});
  const Tensor e = b.Embedding("emb", ids, 1000, 32);
  EXPECT_EQ(e.shape, (Shape{16, 32}));
  EXPECT_EQ(b.graph().op(e.op).params, 1000 * 32);
  EXPECT_DOUBLE_EQ(b.graph().op(e.op).fwd_flops, 0);
  const Tensor logits = b.Dense("head", e, {.out_features = 1000});
  EXPECT_THROW(b.SoftmaxCrossEntropy("bad", logits, 10), UserError);
  const Tensor loss = b.SoftmaxCrossEntropy("loss", logits, 1000);
  EXPECT_EQ(loss.shape, (Shape{1}));
  EXPECT_DOUBLE_EQ(b.graph().op(loss.op).fwd_flops, 5.0 * 16 * 1000 + 2 * 16);
}

TEST(GraphBuilder, SharedTensorsAreSavedOnce) {
  // conv1 keeps x; relu keeps its output r; conv2 reads r, already kept;
  // the flatten view of r is r again, so the dense keeps nothing new.
  GraphBuilder b("t");
  const Tensor x = b.Input("x", {4, 8, 8});
  const Tensor r = b.Relu("relu", b.Conv2d("conv1", x, ConvSpec::Square(4, 3, 1, 1)));
  const Tensor c2 = b.Conv2d("conv2", r, ConvSpec::Square(4, 3, 1, 1));
  const Tensor fc = b.Dense("fc", b.Flatten("flat", r), {.out_features = 2});
  const ModelGraph& g = b.graph();
  EXPECT_DOUBLE_EQ(g.op(g.Find("conv1")).saved_elements_per_sample, 256);
  EXPECT_DOUBLE_EQ(g.op(r.op).saved_elements_per_sample, 256);
  EXPECT_DOUBLE_EQ(g.op(c2.op).saved_elements_per_sample, 0);
  EXPECT_DOUBLE_EQ(g.op(fc.op).saved_elements_per_sample, 0);
  // Disjoint slices are separate storage.
  const Tensor s = b.Input("s", {4, 6});
  const Tensor left = b.Slice("left", s, 1, 0, 3);
  const Tensor right = b.Slice("right", s, 1, 3, 3);
  const Tensor m = b.MatMul("mm", left, right, {.transpose_b = true});
  EXPECT_DOUBLE_EQ(g.op(m.op).saved_elements_per_sample, 24);
}

TEST(GraphBuilder, ShapeErrorsAreUserErrors) {
  GraphBuilder b("t");
  const Tensor x = b.Input("x", {3, 8, 8});
  ConvSpec grouped = ConvSpec::Square(8, 3);
  grouped.groups = 2;  // 3 input channels are not divisible by 2
  EXPECT_THROW(b.Conv2d("g", x, grouped), UserError);
  EXPECT_THROW(b.Conv2d("big", x, ConvSpec::Square(8, 11)), UserError);
  EXPECT_THROW(b.Add("add", x, b.Input("y", {3, 8, 7})), UserError);
  EXPECT_THROW(b.Concat("cat", {x, b.Input("z", {3, 4, 8})}), UserError);
  EXPECT_THROW(b.Reshape("view", x, {100}), UserError);
  EXPECT_THROW(b.Relu("x", x), UserError);  // duplicate name
  EXPECT_THROW(b.Dense("vec", b.Input("v", {0}), {.out_features = 3}), UserError);
  try {
    b.Conv2d("named", x, ConvSpec::Square(8, 11));
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("layer 'named'"), std::string::npos) << e.what();
    EXPECT_TRUE(e.where().file.empty());  // the model-file parser adds it
  }
}

TEST(GraphBuilder, ConcatJoinsChannels) {
  GraphBuilder b("t");
  const Tensor a = b.Input("a", {64, 35, 35});
  const Tensor c = b.Input("c", {32, 35, 35});
  EXPECT_EQ(b.Concat("cat", {a, c, a}).shape, (Shape{160, 35, 35}));
}

TEST(GraphBuilder, FinishRequiresALossAndKeepsTopologicalOrder) {
  GraphBuilder b("t");
  const Tensor x = b.Input("x", {10});
  const Tensor h = b.Relu("relu", b.Dense("fc", x, {.out_features = 10}));
  const Tensor y = b.Add("skip", h, x);
  EXPECT_THROW(GraphBuilder("empty").Finish(""), UserError);
  b.SoftmaxCrossEntropy("loss", y, 10);
  const ModelGraph g = b.Finish("test");
  EXPECT_EQ(g.description(), "test");
  ASSERT_EQ(g.num_ops(), 5u);
  for (OpId v = 0; v < g.num_ops(); ++v)
    for (OpId in : g.inputs(v)) EXPECT_LT(in, v);
  EXPECT_EQ(g.inputs(g.Find("skip")), (std::vector<OpId>{g.Find("relu"), g.Find("x")}));
}

TEST(GraphBuilder, RecurrentParamsArePyTorchs) {
  // sum(p.numel()) of torch.nn.LSTM(10, 20), GRU(10, 20) and RNN(10, 20)
  // (Debian's python3-torch 1.13.1): 4 * 20 * (10 + 20) + 8 * 20 = 2560,
  // 3 * 20 * 30 + 6 * 20 = 1920, 20 * 30 + 2 * 20 = 640.
  const struct {
    RnnCell cell;
    std::int64_t params;
  } cases[] = {{RnnCell::kLstm, 2560}, {RnnCell::kGru, 1920}, {RnnCell::kTanh, 640}};
  for (const auto& c : cases) {
    GraphBuilder b("t");
    const Tensor x = b.Input("x", {7, 10});
    const Tensor y = b.Recurrent("rnn", x, {.cell = c.cell, .hidden = 20});
    EXPECT_EQ(y.shape, (Shape{7, 20}));
    const Op& op = b.graph().op(y.op);
    EXPECT_EQ(op.params, c.params) << RnnCellName(c.cell);
    // Every step multiplies G * 20 x (10 + 20) weights: 2 FLOPs a MAC.
    const double macs = RnnGates(c.cell) * 20.0 * 30.0;
    EXPECT_GE(op.fwd_flops, 7 * 2 * macs);
    EXPECT_LT(op.fwd_flops, 7 * 2 * macs * 1.2);
  }
}

TEST(GraphBuilder, FusedAttentionKeepsNoScoreMatrix) {
  // A = 8 query heads, G = 2 key/value heads, S = 64, D = 16.
  GraphBuilder b("t");
  const Tensor q = b.Input("q", {8, 64, 16});
  const Tensor k = b.Input("k", {2, 64, 16});
  const Tensor v = b.Input("v", {2, 64, 16});
  const Tensor o = b.Attention("attn", q, k, v, {.causal = false, .scale = 0.25});
  EXPECT_EQ(o.shape, (Shape{8, 64, 16}));
  const Op& op = b.graph().op(o.op);
  // Q K^T and P V: 2 * A * S^2 * D multiply-adds, 2 FLOPs each, + 5 per score.
  EXPECT_DOUBLE_EQ(op.fwd_flops, 4.0 * 8 * 64 * 64 * 16 + 5.0 * 8 * 64 * 64);
  // Kept: q, k, v, the output and a log-sum-exp per query row; nothing of
  // size S x S (8 * 64 * 64 = 32768 would be the scores alone).
  EXPECT_DOUBLE_EQ(op.saved_elements_per_sample,
                   8 * 64 * 16 + 2 * (2 * 64 * 16) + 8 * 64 * 16 + 8 * 64);
  // Causal: the same model FLOPs (Megatron-LM's and PaLM's count of the
  // whole score matrix); only the kernel's time skips masked blocks.
  const double full = op.fwd_flops;  // `op` is invalid once another op is added
  const Tensor oc = b.Attention("causal", q, k, v, {.causal = true, .scale = 0.25});
  EXPECT_DOUBLE_EQ(b.graph().op(oc.op).fwd_flops, full);
  EXPECT_THROW(b.Attention("bad", k, q, v, {}), UserError);  // 2 query heads, 8 kv heads
}

TEST(GraphBuilder, GatesNormsAndRotary) {
  GraphBuilder b("t");
  const Tensor x = b.Input("x", {16, 32});
  const Tensor n = b.RmsNorm("rms", x);
  EXPECT_EQ(b.graph().op(n.op).params, 32);  // the scale only, no bias
  const Tensor g = b.Silu("silu", n);
  const Tensor y = b.Mul("mul", g, n);
  EXPECT_EQ(y.shape, x.shape);
  EXPECT_DOUBLE_EQ(b.graph().op(y.op).fwd_flops, 16 * 32);
  // Squeeze-excitation: (C, H, W) times (C, 1, 1).
  const Tensor img = b.Input("img", {8, 4, 4});
  const Tensor scale = b.Sigmoid("sig", b.Input("s", {8, 1, 1}));
  EXPECT_EQ(b.Mul("se", img, scale).shape, (Shape{8, 4, 4}));
  EXPECT_THROW(b.Mul("bad", img, b.Input("s2", {4, 1, 1})), UserError);
  const Tensor heads = b.Input("h", {4, 16, 8});
  EXPECT_EQ(b.graph().op(b.Rotary("rope", heads).op).params, 0);
  EXPECT_THROW(b.Rotary("odd", b.Input("o", {4, 16, 7})), UserError);
  const Tensor rep = b.RepeatHeads("rep", heads, 3);
  EXPECT_EQ(rep.shape, (Shape{12, 16, 8}));
}

}  // namespace
}  // namespace dtsim::models
