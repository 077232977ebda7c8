// Malformed and oversized ONNX graphs: each is refused with a UserError that
// names the file and the node (never a protobuf CHECK, a value cut to int or
// an allocation the size of the model's numbers), and nodes no output reads
// cost nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"
#include "models/onnx_import.h"
#include "models/onnx_model.pb.h"
#include "models/onnx_test_models.h"

namespace dtsim::models {
namespace {

namespace onnx = dtsim::onnx_format;
using Writer = onnx_test::OnnxWriter<onnx::ModelProto>;

// "file: message" of the UserError that importing `m` throws ("" if none).
std::string ImportError(const onnx::ModelProto& m) {
  try {
    ParseOnnxModel(m.SerializeAsString(), "bad.onnx");
  } catch (const UserError& e) {
    return e.where().ToString() + ": " + e.message();
  }
  return "";
}

#define EXPECT_REFUSED(m, text) \
  EXPECT_NE(ImportError(m).find(text), std::string::npos) << ImportError(m)

constexpr std::int64_t kTwoTo32Plus3 = (std::int64_t{1} << 32) + 3;  // 3 when cut to int

TEST(OnnxImportBounds, NodesWithoutOutputOrSecondInputNameTheNode) {
  {
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {4});
    w.Add("Relu", "r", {"x"}, "y")->clear_output();
    w.Output("y");
    EXPECT_REFUSED(m, "bad.onnx: node 0 'r' (Relu): the node has no output");
  }
  {
    // The output list of a Constant, read before anything else.
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {4});
    w.Add("Constant", "c", {}, "k")->clear_output();
    w.Add("Relu", "r", {"x"}, "y");
    w.Output("y");
    EXPECT_REFUSED(m, "bad.onnx: node 0 'c' (Constant): the node has no output");
  }
  {
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {4});
    w.Add("MatMul", "mm", {"x"}, "y");
    w.Output("y");
    EXPECT_REFUSED(m, "bad.onnx: node 0 'mm' (MatMul): a matrix product has two inputs");
  }
}

TEST(OnnxImportBounds, Int64ValuesAreRefusedNotCut) {
  {
    // A 2^32 + 3 high kernel: 3 when cut to int.
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("image", {3, 8, 8});
    w.Add("Conv", "c", {"image", w.Weight("k", {1, 3, kTwoTo32Plus3, 1})}, "y");
    w.Output("y");
    EXPECT_REFUSED(m, "node 0 'c' (Conv): kernel height 4294967299 is outside [1, 2147483647]");
  }
  {
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("image", {3, 8, 8});
    auto* p = w.Add("MaxPool", "p", {"image"}, "y");
    w.SetInts(p, "kernel_shape", {kTwoTo32Plus3, 3});
    w.Output("y");
    EXPECT_REFUSED(m, "node 0 'p' (MaxPool): kernel height 4294967299 is outside");
  }
  {
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("image", {3, 8, 8});
    auto* p = w.Add("AveragePool", "p", {"image"}, "y");
    w.SetInts(p, "kernel_shape", {3, 3});
    w.SetInts(p, "strides", {1, kTwoTo32Plus3});
    w.Output("y");
    EXPECT_REFUSED(m, "node 0 'p' (AveragePool): stride 4294967299 is outside");
  }
  {
    // groups x channels per group overflows int64: 2^62 x 4.
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("image", {3, 8, 8});
    auto* c = w.Add("Conv", "c", {"image", w.Weight("k", {1, std::int64_t{1} << 40, 1, 1})}, "y");
    w.SetInt(c, "group", std::int64_t{1} << 31);
    w.Output("y");
    EXPECT_REFUSED(m, "node 0 'c' (Conv): group 2147483648 is outside [1, 2147483647]");
  }
  {
    // A weight of 2^40 x 2^40 elements: more than 2^53, refused before any
    // product is taken.
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {4});
    w.Add("Gemm", "fc", {"x", w.Weight("w", {std::int64_t{1} << 40, std::int64_t{1} << 40})}, "y");
    w.Output("y");
    EXPECT_REFUSED(m, "node 0 'fc' (Gemm): the weight 'w' (1099511627776x1099511627776) needs");
  }
  {
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {4});
    w.Add("Gemm", "fc", {"x", w.Weight("w", {4, -2})}, "y");
    w.Output("y");
    EXPECT_REFUSED(m, "the weight 'w' (4x-2) needs 1 to 9 positive dimensions");
  }
}

TEST(OnnxImportBounds, GraphBuilderErrorsNameTheFile) {
  {
    // An input of 2^30 x 2^30 elements per sample (more than 2^53): the
    // graph builder's refusal, located in the file.
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {std::int64_t{1} << 30, std::int64_t{1} << 30});
    w.Output("x");
    EXPECT_REFUSED(m, "bad.onnx: layer 'x': its output");
  }
  {
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {4});
    w.Input("x", {4});
    w.Output("x");
    EXPECT_REFUSED(m, "bad.onnx: the input name 'x' is used twice");
  }
  {
    // Nodes named as an input and as the loss dtsim adds: renamed, not
    // refused.
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {4});
    w.Add("Relu", "x", {"x"}, "h");
    w.Add("Relu", "loss", {"h"}, "y");
    w.Output("y");
    const ModelGraph g = ParseOnnxModel(m.SerializeAsString(), "names.onnx");
    ASSERT_EQ(g.num_ops(), 4u);  // input, two ReLUs, the loss
    EXPECT_EQ(g.op(1).name, "x_0");
    EXPECT_EQ(g.op(2).name, "loss");
    EXPECT_EQ(g.op(3).name, "loss_1");
  }
}

TEST(OnnxImportBounds, RanksAreBounded) {
  {
    // 100,000 dimensions of 1: refused when read, before any op sees them.
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", std::vector<std::int64_t>(100'000, 1));
    w.Output("x");
    EXPECT_REFUSED(m, "bad.onnx: input 'x' has 100001 dimensions, more than the batch and 8");
  }
  {
    onnx::ModelProto m;
    Writer w(&m);
    w.Input("x", {4});
    std::vector<std::int64_t> shape(100, 1);
    shape[0] = -1;
    shape[1] = 4;
    w.Add("Reshape", "r", {"x", w.Int64s("shape", shape)}, "y");
    w.Output("y");
    EXPECT_REFUSED(m, "node 0 'r' (Reshape): the shape has 100 dimensions");
  }
}

TEST(OnnxImportBounds, NodesNoOutputReadsAreSkipped) {
  // 20,000 AveragePools of the input that nothing reads, then one ReLU to
  // the output: the graph is the input, the ReLU and the loss.
  onnx::ModelProto m;
  Writer w(&m);
  w.Input("image", {3, 8, 8});
  for (int i = 0; i < 20'000; ++i) {
    // Appended, not `"p" + std::to_string(i)`: GCC 12 warns falsely
    // (-Wrestrict) on the latter.
    std::string name = "p", out = "unused";
    name += std::to_string(i);
    out += std::to_string(i);
    auto* p = w.Add("AveragePool", name, {"image"}, out);
    w.SetInts(p, "kernel_shape", {2, 2});
  }
  w.Add("Relu", "r", {"image"}, "y");
  w.Output("y");
  const ModelGraph g = ParseOnnxModel(m.SerializeAsString(), "unused.onnx");
  EXPECT_EQ(g.num_ops(), 3u);
}

TEST(OnnxImportBounds, OnlyRegularFilesAreRead) {
  for (const char* path : {"/dev/zero", "/nonexistent/model.onnx"}) {
    try {
      LoadOnnxModel(path);
      ADD_FAILURE() << path << " was read";
    } catch (const UserError& e) {
      EXPECT_EQ(e.where().file, path);
      EXPECT_NE(e.message().find("cannot read ONNX file"), std::string::npos) << e.message();
    }
  }
  // A FIFO would block a reader that opens it; it is refused unopened.
  const std::filesystem::path fifo =
      std::filesystem::path(::testing::TempDir()) / ("onnx_fifo_" + std::to_string(::getpid()) + ".onnx");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(LoadOnnxModel(fifo.string()), UserError);
  std::filesystem::remove(fifo);
}

}  // namespace
}  // namespace dtsim::models
