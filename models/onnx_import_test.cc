#include "models/onnx_import.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/error.h"
#include "models/onnx_model.pb.h"
#include "models/onnx_test_models.h"
#include "models/zoo.h"

namespace dtsim::models {
namespace {

namespace onnx = dtsim::onnx_format;
using Writer = onnx_test::OnnxWriter<onnx::ModelProto>;

ModelGraph Import(const onnx::ModelProto& m, const std::string& name = "test.onnx") {
  return ParseOnnxModel(m.SerializeAsString(), name);
}

// The message of the UserError that importing `m` throws ("" if none).
std::string ImportError(const onnx::ModelProto& m) {
  try {
    Import(m, "bad.onnx");
  } catch (const UserError& e) {
    return e.where().ToString() + ": " + e.message();
  }
  return "";
}

void ExpectResNet50(const ModelGraph& g) {
  // torchvision's ResNet-50 summary: 25,557,032 parameters.
  const GraphTotals t = g.Totals();
  EXPECT_EQ(t.params, 25557032);
  // torchvision's docs: 4.09 GMACs (2 FLOPs each) per 224 x 224 image; the
  // graph adds batch norm, ReLU and pooling, about 1% (as models/zoo_test.cc).
  EXPECT_NEAR(t.fwd_flops / (2 * 4.09e9), 1.0, 0.025);
  // The zoo's ResNet-50 is built by the same GraphBuilder from the same
  // layers: every total is the same.
  const GraphTotals zoo = BuildZooModel("resnet50").Totals();
  EXPECT_DOUBLE_EQ(t.fwd_flops, zoo.fwd_flops);
  EXPECT_DOUBLE_EQ(t.bwd_flops, zoo.bwd_flops);
  EXPECT_DOUBLE_EQ(t.saved_elements, zoo.saved_elements);
  EXPECT_EQ(t.num_ops, zoo.num_ops);
  EXPECT_EQ(g.op(g.num_ops() - 1).kind, OpKind::kSoftmaxCrossEntropy);
}

// Issue 15 item 1: a ResNet-50 ONNX export gives the zoo's 25,557,032
// parameters and 4.09 GMACs.
TEST(OnnxImport, ResNet50MatchesTheZoo) {
  onnx::ModelProto m;
  onnx_test::WriteResNet50(&m);
  const ModelGraph g = Import(m, "dir/resnet50-export.onnx");
  EXPECT_EQ(g.name(), "resnet50-export");
  ExpectResNet50(g);
}

// The same model written by ONNX's own classes (Debian's libonnx-dev, built
// from onnx.proto): dtsim's field numbers agree with ONNX's.
TEST(OnnxImport, ReadsWhatOnnxsOwnClassesWrite) {
#ifndef DTSIM_ONNX_FIXTURE_WRITER
  GTEST_SKIP() << "libonnx-dev was not found at configure time (scripts/setup.sh installs it)";
#else
  const std::filesystem::path file =
      std::filesystem::path(::testing::TempDir()) / "onnx_fixture_resnet50.onnx";
  const std::string command = std::string(DTSIM_ONNX_FIXTURE_WRITER) + " " + file.string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const ModelGraph g = LoadOnnxModel(file.string());
  ExpectResNet50(g);
  std::filesystem::remove(file);
#endif
}

// A token model: embedding, layer norm, and nn.Linear exported as MatMul +
// Add (fused into one dense layer with a bias); a Reshape by a constant
// shape; the final Softmax becomes the loss.
TEST(OnnxImport, EmbeddingLinearAndReshape) {
  onnx::ModelProto m;
  Writer w(&m);
  w.Input("ids", {8}, /*elem_type=*/7);
  w.Add("Gather", "embed", {w.Weight("table", {100, 16}), "ids"}, "h");
  auto* ln = w.Add("LayerNormalization", "ln",
                   {"h", w.Weight("ln.weight", {16}), w.Weight("ln.bias", {16})}, "n");
  w.SetInt(ln, "axis", -1);
  w.Add("MatMul", "proj", {"n", w.Weight("proj.weight", {16, 32})}, "p");
  w.Add("Add", "proj_bias", {"p", w.Weight("proj.bias", {32})}, "pb");
  w.Add("Reshape", "flat", {"pb", w.Int64s("shape", {-1, 0, 4, 8})}, "r");
  auto* c = w.Add("Constant", "back_shape", {}, "back");
  auto* value = c->add_attribute();
  value->set_name("value");
  value->mutable_t()->set_data_type(7);
  value->mutable_t()->add_dims(3);
  for (std::int64_t d : {0, 8, 32}) value->mutable_t()->add_int64_data(d);
  w.Add("Reshape", "unflat", {"r", "back"}, "u");
  auto* sm = w.Add("Softmax", "probs", {"u"}, "probs");
  w.SetInt(sm, "axis", -1);
  w.Output("probs");
  const ModelGraph g = Import(m);
  // Parameters: table 100 x 16, layer norm 2 x 16, dense 16 x 32 + 32.
  EXPECT_EQ(g.Totals().params, 100 * 16 + 2 * 16 + 16 * 32 + 32);
  const Op& proj = g.op(g.Find("proj"));
  EXPECT_EQ(proj.kind, OpKind::kDense);
  EXPECT_TRUE(proj.attrs.bias);
  EXPECT_EQ(proj.output_shape, (Shape{8, 32}));
  EXPECT_EQ(g.Find("proj_bias"), g.num_ops());  // fused, not an op
  // Reshapes are views made where a value is read in its new shape: the
  // pair that restores (8, 32) adds no op.
  EXPECT_EQ(g.Find("flat"), g.num_ops());
  EXPECT_EQ(g.Find("unflat"), g.num_ops());
  const Op& loss = g.op(g.num_ops() - 1);
  EXPECT_EQ(loss.kind, OpKind::kSoftmaxCrossEntropy);
  EXPECT_EQ(loss.attrs.vocab, 32);
  // Dense forward FLOPs per sample: 2 x 8 tokens x 16 x 32 (plus the bias,
  // 8 x 32, if the builder counts it): at least the matrix product.
  EXPECT_GE(proj.fwd_flops, 2.0 * 8 * 16 * 32);
}

// Trust: what the importer cannot represent is refused at the node, never
// imported wrong.
TEST(OnnxImport, RefusesWithTheNode) {
  {
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {4});
    w.Add("Einsum", "mix", {"x"}, "y");
    w.Output("y");
    const std::string e = ImportError(m);
    EXPECT_NE(e.find("bad.onnx: node 0 'mix' (Einsum): operator 'Einsum' is not supported"),
              std::string::npos)
        << e;
  }
  {
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("image", {3, 8, 8});
    auto* c = w.Add("Conv", "c", {"image", w.Weight("k", {4, 3, 3, 3})}, "y");
    w.SetInts(c, "pads", {0, 0, 1, 1});
    w.Output("y");
    EXPECT_NE(ImportError(m).find("node 0 'c' (Conv): asymmetric padding (0, 0, 1, 1)"),
              std::string::npos)
        << ImportError(m);
  }
  {
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("image", {3, 8, 8});
    auto* c = w.Add("Conv", "c", {"image", w.Weight("k", {4, 3, 3, 3})}, "y");
    w.SetInts(c, "dilations", {2, 2});
    w.Output("y");
    EXPECT_NE(ImportError(m).find("dilated convolutions are not supported"), std::string::npos);
  }
  {
    // A sequence length left symbolic: sizes must be fixed.
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("ids", {1}, 7);
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
        ->mutable_dim(1)->set_dim_param("sequence");
    w.Output("ids");
    EXPECT_NE(ImportError(m).find("dimension 1 of input 'ids' is the symbol 'sequence'"),
              std::string::npos)
        << ImportError(m);
  }
  {
    // A node reading a value produced later.
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {4});
    w.Add("Relu", "a", {"later"}, "y");
    w.Add("Relu", "b", {"x"}, "later");
    w.Output("y");
    EXPECT_NE(ImportError(m).find("reads 'later', which no earlier node produces"),
              std::string::npos);
  }
  {
    // Add broadcasting a weight that is not a MatMul's bias.
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {4});
    w.Add("Add", "shift", {"x", w.Weight("s", {4})}, "y");
    w.Output("y");
    EXPECT_NE(ImportError(m).find("adding a constant"), std::string::npos);
  }
  EXPECT_NE(ImportError(onnx::ModelProto()).find("bad.onnx: the ONNX model has no graph"),
            std::string::npos);
  try {
    ParseOnnxModel("\xff\xff\xff not protobuf", "junk.onnx");
    ADD_FAILURE() << "junk was parsed";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().file, "junk.onnx");
    EXPECT_NE(e.message().find("not an ONNX model"), std::string::npos);
  }
  EXPECT_THROW(LoadOnnxModel("/nonexistent/model.onnx"), UserError);
}

// LoadModelFile reads .onnx files too (scenarios' `model: {file: ...}`).
TEST(OnnxImport, LoadModelFileDispatchesOnTheExtension) {
  onnx::ModelProto m;
  onnx_test::WriteResNet50(&m);
  const std::filesystem::path file = std::filesystem::path(::testing::TempDir()) / "r50.onnx";
  {
    std::ofstream out(file, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&out));
  }
  EXPECT_TRUE(IsOnnxPath(file.string()));
  EXPECT_FALSE(IsOnnxPath("model.yaml"));
  EXPECT_EQ(LoadModelFile(file.string()).Totals().params, 25557032);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace dtsim::models
