// Files written by PyTorch's own exporter (models/testdata/onnx, made by
// scripts/onnx_fixtures.py with Debian's torch 1.13.1): every one imports,
// and the training-mode exports give PyTorch's parameter count and, within
// 1%, the forward FLOPs torch.profiler counts for their GEMM-like ops. The
// expected values come from manifest.json beside the files, which the
// script wrote from PyTorch (no PyTorch is needed here).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "models/onnx_import.h"
#include "models/onnx_model.pb.h"

namespace dtsim::models {
namespace {

const std::filesystem::path kDir = DTSIM_ONNX_TESTDATA_DIR;

nlohmann::json Manifest() {
  std::ifstream in(kDir / "manifest.json");
  return nlohmann::json::parse(in);
}

std::string ReadBytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The forward FLOPs of the ops torch.profiler counts (aten::conv2d, addmm,
// mm, bmm: the matrix products, 2 per multiply-add): dtsim's conv2d,
// dense and matmul ops, and the gate products of recurrent layers,
// 2 S G Hd (I + Hd) (graph_builder.cc's Recurrent without its bias and
// pointwise terms, which the profiler does not see inside aten::lstm).
double GemmFlops(const ModelGraph& g) {
  double total = 0;
  for (OpId id = 0; id < g.num_ops(); ++id) {
    const Op& op = g.op(id);
    if (op.kind == OpKind::kConv2d || op.kind == OpKind::kDense || op.kind == OpKind::kMatMul) {
      total += op.fwd_flops;
    } else if (op.kind == OpKind::kRecurrent) {
      const double steps = static_cast<double>(op.input_shapes[0][0]);
      const double in = static_cast<double>(op.input_shapes[0][1]);
      const double hidden = static_cast<double>(op.output_shape[1]);
      total += 2 * steps * RnnGates(op.attrs.cell) * hidden * (in + hidden);
    }
  }
  return total;
}

TEST(OnnxRealExports, EveryFixtureImports) {
  const nlohmann::json files = Manifest()["files"];
  ASSERT_GE(files.size(), 24u);  // 10 models x 2 opsets in training, 2 x 2 in eval
  for (const auto& [file, info] : files.items()) {
    SCOPED_TRACE(file);
    const ModelGraph g = LoadOnnxModel((kDir / file).string());
    EXPECT_EQ(g.op(g.num_ops() - 1).kind, OpKind::kSoftmaxCrossEntropy);
  }
}

TEST(OnnxRealExports, TrainingExportsHavePyTorchsParamsAndFlops) {
  const nlohmann::json files = Manifest()["files"];
  for (const auto& [file, info] : files.items()) {
    if (info["mode"] != "train") continue;
    SCOPED_TRACE(file);
    const ModelGraph g = LoadOnnxModel((kDir / file).string());
    EXPECT_EQ(g.Totals().params, info["params"].get<std::int64_t>());
    const double profiled = info["forward_flops"].get<double>();
    EXPECT_NEAR(GemmFlops(g) / profiled, 1.0, 0.01) << GemmFlops(g) << " vs " << profiled;
    EXPECT_TRUE(g.warnings().empty());
  }
}

// Eval-mode exports fold BatchNorm into the convolutions: the importer
// warns, naming the export command that keeps the training graph.
TEST(OnnxRealExports, FoldedBatchNormIsDetected) {
  const nlohmann::json files = Manifest()["files"];
  for (const auto& [file, info] : files.items()) {
    SCOPED_TRACE(file);
    const std::string w = OnnxFoldedBatchNormWarning(ReadBytes(kDir / file), file);
    EXPECT_EQ(w.empty(), info["mode"] == "train");
    if (info["mode"] == "eval") {
      EXPECT_NE(w.find("TrainingMode.TRAINING, do_constant_folding=False"), std::string::npos);
      const ModelGraph g = LoadOnnxModel((kDir / file).string());
      ASSERT_EQ(g.warnings().size(), 1u);
      EXPECT_EQ(g.warnings()[0], OnnxFoldedBatchNormWarning(ReadBytes(kDir / file),
                                                            (kDir / file).string()));
      // Folding removes the batch norms' 2 parameters per channel: fewer
      // parameters than PyTorch's model has.
      EXPECT_LT(g.Totals().params, info["params"].get<std::int64_t>());
    }
  }
}

// Recognised patterns become one op each: a GPT-2 block has one causal
// softmax with attention's 1/sqrt(64) folded in, one layer norm per
// LayerNorm (decomposed at opset 13) and one GELU per MLP (decomposed at
// every opset below 20); no elementwise piece is left over.
TEST(OnnxRealExports, PatternsBecomeOneOpEach) {
  for (const char* file : {"gpt2_small_train_op13.onnx", "gpt2_small_train_op17.onnx"}) {
    SCOPED_TRACE(file);
    const ModelGraph g = LoadOnnxModel((kDir / file).string());
    int softmax = 0, layer_norm = 0, gelu = 0, mul = 0, tied = 0, positions = 0;
    for (OpId id = 0; id < g.num_ops(); ++id) {
      const Op& op = g.op(id);
      if (op.kind == OpKind::kSoftmax) {
        ++softmax;
        EXPECT_TRUE(op.attrs.causal);
        EXPECT_DOUBLE_EQ(op.attrs.scale, 0.125);  // 1 / sqrt(768 / 12)
      }
      layer_norm += op.kind == OpKind::kLayerNorm;
      gelu += op.kind == OpKind::kGelu;
      mul += op.kind == OpKind::kMul;
      tied += op.kind == OpKind::kDense && op.attrs.tied_to >= 0;
      positions += op.kind == OpKind::kEmbedding && op.attrs.ids == EmbeddingIds::kPositions;
    }
    EXPECT_EQ(softmax, 12);
    EXPECT_EQ(layer_norm, 2 * 12 + 1);  // two per block and ln_f
    EXPECT_EQ(gelu, 12);
    EXPECT_EQ(mul, 0);
    EXPECT_EQ(tied, 1);       // lm_head shares wte
    EXPECT_EQ(positions, 1);  // wpe
  }
}

// A causal mask the file leaves out cannot be told from another mask: the
// importer refuses it at the node, naming index, name and operator, rather
// than guess.
TEST(OnnxRealExports, RefusalsNameTheNodeAndOperator) {
  onnx_format::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(ReadBytes(kDir / "gpt2_small_train_op13.onnx")));
  for (onnx_format::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() == "h.0.attn.bias") t.clear_raw_data();  // the first block's mask
  }
  int where = -1;
  for (int i = 0; i < m.graph().node_size() && where < 0; ++i) {
    if (m.graph().node(i).op_type() == "Where") where = i;
  }
  ASSERT_GE(where, 0);
  try {
    ParseOnnxModel(m.SerializeAsString(), "gpt2.onnx");
    ADD_FAILURE() << "a mask without values was imported";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().file, "gpt2.onnx");
    const std::string want = "node " + std::to_string(where) + " '" +
                             m.graph().node(where).name() +
                             "' (Where): the mask's values are not in the file";
    EXPECT_NE(e.message().find(want), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace dtsim::models
