#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/error.h"
#include "models/zoo.h"

namespace dtsim::models {
namespace {

// Parses `text` and returns the UserError it must raise.
UserError ErrorOf(const std::string& text) {
  try {
    ParseModelYaml(text, "m.yaml");
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return UserError("none");
}

// Checks the error's line and that its message (or hint) says `says`.
void ExpectError(const std::string& text, int line, const std::string& says) {
  const UserError e = ErrorOf(text);
  EXPECT_EQ(e.where().file, "m.yaml") << e.what();
  EXPECT_EQ(e.where().line, line) << e.what();
  EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
}

const char kHeader[] = "name: t\ninput: [3, 8, 8]\nlayers:\n";  // layers start on line 4

TEST(ModelFile, ExampleLoadsWithDerivedNumbers) {
  const ModelGraph g = LoadModelFile("models/examples/small_cnn.yaml");
  EXPECT_EQ(g.name(), "small-cnn");
  // conv1 864 + bn1 64 + conv2 9,216 + bn2 64 + conv3 18,496 + fc 650, as
  // derived in the example's header.
  EXPECT_EQ(g.Totals().params, 29354);
  EXPECT_EQ(g.op(g.Find("pool")).output_shape, (Shape{32, 16, 16}));
  EXPECT_EQ(g.op(g.Find("conv3")).output_shape, (Shape{64, 8, 8}));
  // conv3: MACs = 64 * 8 * 8 * 32 * 9 = 1,179,648, plus 64 * 8 * 8 bias adds.
  EXPECT_DOUBLE_EQ(g.op(g.Find("conv3")).fwd_flops, 2 * 1179648.0 + 4096);
  EXPECT_EQ(g.inputs(g.Find("residual")), (std::vector<OpId>{g.Find("bn2"), g.Find("relu1")}));
  EXPECT_EQ(g.op(g.num_ops() - 1).kind, OpKind::kSoftmaxCrossEntropy);
}

TEST(ModelFile, LayersDefaultToThePreviousLayerAndGetNames) {
  const ModelGraph g = ParseModelYaml(std::string(kHeader) +
                                          "  - {type: flatten}\n"
                                          "  - {type: dense, out_features: 10}\n"
                                          "  - {type: softmax_xent}\n",
                                      "dir/tiny.yaml");
  ASSERT_EQ(g.num_ops(), 4u);
  EXPECT_EQ(g.op(1).name, "flatten_1");
  EXPECT_EQ(g.op(2).name, "dense_2");
  EXPECT_EQ(g.inputs(2), (std::vector<OpId>{1}));
  EXPECT_EQ(g.op(2).params, 192 * 10 + 10);
  EXPECT_EQ(ParseModelYaml("input: [4]\nlayers:\n  - {type: softmax_xent}\n", "dir/tiny.yaml")
                .name(),
            "tiny");  // no 'name': the file's stem
}

TEST(ModelFile, TransformerShorthandEqualsBuildTransformer) {
  const ModelGraph g = ParseModelYaml(
      "name: small-gpt\n"
      "transformer: {layers: 2, hidden: 64, heads: 4, sequence: 32, vocab: 1000}\n",
      "g.yaml");
  TransformerConfig c;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.sequence = 32;
  c.vocab = 1000;
  const ModelGraph expected = BuildTransformer(c);
  EXPECT_EQ(g.name(), "small-gpt");
  EXPECT_EQ(g.num_ops(), expected.num_ops());
  EXPECT_EQ(g.Totals().params, expected.Totals().params);
  EXPECT_DOUBLE_EQ(g.Totals().fwd_flops, expected.Totals().fwd_flops);
}

TEST(ModelFile, LlamaStyleBlockAndLstmLayers) {
  // One Llama-style block: 4 query heads and 2 key/value heads of D = 8,
  // bias-free projections, RMSNorm, rotary positions, fused causal
  // attention, a SwiGLU MLP of width 64; then an LSTM of 16.
  const char kText[] = R"(name: tiny-llama
input: [16]
layers:
  - {type: embedding, name: tok, vocab: 100, hidden: 32}
  - {type: rmsnorm, name: norm1}
  - {type: dense, name: q, out_features: 32, bias: false}
  - {type: dense, name: k, out_features: 16, bias: false, inputs: [norm1]}
  - {type: dense, name: v, out_features: 16, bias: false, inputs: [norm1]}
  - {type: split_heads, name: qh, heads: 4, inputs: [q]}
  - {type: split_heads, name: kh, heads: 2, inputs: [k]}
  - {type: split_heads, name: vh, heads: 2, inputs: [v]}
  - {type: rotary, name: qr, inputs: [qh]}
  - {type: rotary, name: kr, inputs: [kh]}
  - {type: attention, name: attn, causal: true, inputs: [qr, kr, vh]}
  - {type: merge_heads, name: merged}
  - {type: dense, name: o, out_features: 32, bias: false}
  - {type: add, name: res1, inputs: [tok, o]}
  - {type: rmsnorm, name: norm2}
  - {type: dense, name: gate, out_features: 64, bias: false}
  - {type: silu, name: act}
  - {type: dense, name: up, out_features: 64, bias: false, inputs: [norm2]}
  - {type: mul, name: gated, inputs: [act, up]}
  - {type: dense, name: down, out_features: 32, bias: false}
  - {type: add, name: res2, inputs: [res1, down]}
  - {type: lstm, name: lstm, hidden: 16}
  - {type: dense, name: head, out_features: 100}
  - {type: softmax_xent}
)";
  const ModelGraph g = ParseModelYaml(kText, "m.yaml");
  // Hand count: table 100 x 32 = 3,200; norms 32 + 32; q 32 x 32 = 1,024;
  // k and v 32 x 16 = 512 each; o 1,024; gate and up 32 x 64 = 2,048 each;
  // down 2,048; LSTM 4 x 16 x (32 + 16) + 8 x 16 = 3,200 (PyTorch's
  // nn.LSTM(32, 16) count); head 16 x 100 + 100 = 1,700.
  EXPECT_EQ(g.Totals().params,
            3200 + 32 + 1024 + 512 + 512 + 1024 + 32 + 2048 * 3 + 3200 + 1700);
  EXPECT_EQ(g.op(g.Find("attn")).kind, OpKind::kAttention);
  EXPECT_EQ(g.op(g.Find("attn")).output_shape, (Shape{4, 16, 8}));
  // Default scale 1 / sqrt(8).
  EXPECT_DOUBLE_EQ(g.op(g.Find("attn")).attrs.scale, 1 / std::sqrt(8.0));
  EXPECT_EQ(g.op(g.Find("lstm")).output_shape, (Shape{16, 16}));
  // A recurrent layer needs its hidden size; attention a positive scale.
  ExpectError(std::string(kHeader) + "  - {type: flatten}\n  - {type: lstm}\n", 5, "hidden");
  ExpectError(std::string(kHeader) +
                  "  - {type: attention, scale: -1, inputs: [input, input, input]}\n",
              4, "positive number");
}

TEST(ModelFile, ErrorsNameTheirLineAndWhatWasExpected) {
  const std::string h = kHeader;
  // Unknown key (line 4), with the allowed keys in the hint.
  ExpectError(h + "  - {name: c, type: conv2d, out_channels: 8, kernel: 3, strides: 2}\n", 4,
              "unknown key 'strides'");
  ExpectError(h + "  - {name: c, type: conv2d, out_channels: 8, kernel: 3, strides: 2}\n", 4,
              "allowed keys: name, type, inputs, out_channels");
  // Missing key.
  ExpectError(h + "  - {type: relu}\n  - {name: c, type: conv2d, kernel: 3}\n", 5,
              "layers[1]: missing required key 'out_channels'");
  // Wrong type, reported at the value: 'many' starts at column 43 (1-based).
  const std::string bad_value = "  - {name: c, type: conv2d, out_channels: many, kernel: 3}\n";
  ASSERT_EQ(bad_value.find("many") + 1, 43u);
  const UserError wrong = ErrorOf(h + bad_value);
  EXPECT_EQ(wrong.where().line, 4);
  EXPECT_EQ(wrong.where().column, 43);
  EXPECT_NE(wrong.message().find("layers[0].out_channels: expected an integer, got 'many'"),
            std::string::npos)
      << wrong.what();
  ExpectError(h + "  - {name: c, type: conv2d, out_channels: 8, kernel: [3, 3, 3]}\n", 4,
              "expected an integer or a list of two integers");
  ExpectError(h + "  - {name: c, type: conv2d, out_channels: 8, kernel: 3, bias: maybe}\n", 4,
              "layers[0].bias: expected true or false");
  // Unknown layer type.
  ExpectError(h + "  - {type: relu}\n\n  - {name: x, type: convolution}\n", 6,
              "unknown layer type 'convolution'");
  // Unknown input name.
  ExpectError(h + "  - {name: a, type: relu}\n  - {name: b, type: add, inputs: [a, shortcut]}\n",
              5, "reads 'shortcut', which is not an earlier layer");
  // Shape mismatch found by GraphBuilder, located at the layer.
  ExpectError(h + "  - {name: p, type: maxpool, kernel: 2}\n"
                  "  - {name: sum, type: add, inputs: [p, input]}\n",
              5, "adds tensors of the same shape, got 3x4x4 and 3x8x8");
  ExpectError(h + "  - {name: c, type: conv2d, out_channels: 8, kernel: 9}\n", 4,
              "window of 9 does not fit an input of 8");
  // Duplicate layer name.
  ExpectError(h + "  - {name: a, type: relu}\n  - {name: a, type: relu}\n", 5,
              "the name is already used");
  // Add without inputs.
  ExpectError(h + "  - {name: a, type: add}\n", 4, "needs 'inputs'");
  // Last layer not a loss.
  ExpectError(h + "  - {name: a, type: relu}\n  - {name: f, type: flatten}\n", 5,
              "the last layer must be the loss");
  // Top-level problems.
  ExpectError("name: t\ninput: [3, 8, 8]\nlayer:\n  - {type: relu}\n", 3, "unknown key 'layer'");
  ExpectError("name: t\ninput: [3, 8, 8]\n", 1, "missing required key 'layers'");
  ExpectError("name: t\ninput: [3, -8, 8]\nlayers:\n  - {type: softmax_xent}\n", 2,
              "input[1]: expected an integer >= 1, got -8");
  ExpectError("name: t\nlayers:\n  - {type: relu}\n", 3, "it is the first layer");
  ExpectError("name: t\ninput: [3, 8, 8\nlayers: []\n", 3, "malformed YAML");
  ExpectError("name: t\ninput: [8]\ninput: [9]\nlayers: []\n", 3, "duplicate key 'input'");
  ExpectError("- just\n- a list\n", 1, "expected a mapping");
  // Transformer shorthand problems.
  ExpectError("transformer: {layers: 2, hidden: 64, heads: 3, sequence: 8, vocab: 10}\n", 1,
              "must be divisible by heads");
  ExpectError("transformer:\n  layers: 2\n  hidden: 64\n  heads: 0\n", 4,
              "transformer.heads: expected an integer >= 1, got 0");
  ExpectError("transformer: {layers: 2, hidden: 64, heads: 4, sequence: 8, vocab: 10}\n"
              "layers: []\n",
              2, "layers: cannot be combined with 'transformer'");
}

// Issue 10 item 7: sizes beyond what int64 parameter counts and double
// FLOPs hold exactly printed -2.4e18 parameters (a 4e9-wide dense layer on a
// 4e9-wide input) or "1 param" (a wrapped embedding). Every count is bounded
// by kMaxModelCount = 2^53 and refused at the layer.
TEST(ModelFile, SizesBeyondTheArithmeticAreRefusedAtTheLayer) {
  // 4e9 x 4e9 = 1.6e19 weights: more than int64 (9.2e18), let alone 2^53.
  ExpectError(R"(name: t
input: [4000000000]
layers:
  - {name: fc, type: dense, out_features: 4000000000}
  - {type: softmax_xent}
)",
              4, "layer 'fc': its parameters exceed 2^53");
  // A table of 2^32 x 2^32 = 2^64 entries wrapped to 0 in int64.
  ExpectError(R"(name: t
input: [8]
layers:
  - {name: emb, type: embedding, vocab: 4294967296, hidden: 4294967296}
  - {type: softmax_xent}
)",
              4, "layer 'emb': its parameters exceed 2^53");
  // 2^30 ids of 2^30 values each: 2^60 elements.
  ExpectError(R"(name: t
input: [1073741824]
layers:
  - {name: emb, type: embedding, vocab: 10, hidden: 1073741824}
  - {type: softmax_xent}
)",
              4, "layer 'emb': its output 1073741824x1073741824 has more than 2^53");
  ExpectError(R"(name: t
input: [8]
layers:
  - {name: emb, type: embedding, vocab: 4294967296, hidden: 4194304}
  - {type: softmax_xent}
)",
              4, "layer 'emb': its parameters exceed 2^53");
  // One dimension beyond 2^53 is refused at the number itself.
  ExpectError("name: t\ninput: [3, 9007199254740993]\nlayers:\n  - {type: softmax_xent}\n", 2,
              "input[1]: expected an integer <= 9007199254740992");
  // The product of fine dimensions (2^30 x 2^30 = 2^60 elements).
  ExpectError("name: t\ninput: [1073741824, 1073741824]\nlayers:\n  - {type: softmax_xent}\n",
              2, "has more than 2^53 (9.0e15) elements per sample");
  // Together: 3 layers of 2^51 + 2^51 parameters each exceed 2^53.
  ExpectError(R"(name: t
input: [2097152]
layers:
  - {name: a, type: dense, out_features: 1073741824, bias: false}
  - {name: b, type: dense, out_features: 2097152, bias: false}
  - {name: c, type: dense, out_features: 1073741824, bias: false}
  - {name: d, type: dense, out_features: 2097152, bias: false}
  - {name: e, type: dense, out_features: 1073741824, bias: false}
  - {type: softmax_xent}
)",
              8, "layer 'e': the model's parameters exceed 2^53");
}

TEST(ModelFile, TransformerDepthIsBounded) {
  ExpectError("transformer: {layers: 2000000000}\n", 1, "layers must be at most 10000");
}

TEST(ModelFile, MissingFileIsAUserError) {
  try {
    LoadModelFile("models/examples/no_such_file.yaml");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("cannot read model file"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("no such file"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace dtsim::models
