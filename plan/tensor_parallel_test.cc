#include "plan/tensor_parallel.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "models/zoo.h"

namespace dtsim::plan {
namespace {

using models::ModelGraph;

std::set<std::string> SplitNames(const ModelGraph& g, const std::string& prefix) {
  std::set<std::string> names;
  for (models::OpId id = 0; id < g.num_ops(); ++id) {
    const std::string& name = g.op(id).name;
    if (name.rfind(prefix, 0) == 0 && IsTensorParallelSplit(g.op(id))) {
      names.insert(name.substr(prefix.size()));
    }
  }
  return names;
}

TEST(TensorParallel, SplitsAttentionAndMlpOfEveryGptBlock) {
  const ModelGraph g = models::BuildZooModel("gpt2");
  const std::set<std::string> want = {
      "attn.qkv",     "attn.q_slice",     "attn.k_slice", "attn.v_slice", "attn.q",
      "attn.k",       "attn.v",           "attn.scores",  "attn.softmax", "attn.probs_dropout",
      "attn.context", "attn.merge_heads", "attn.proj",    "mlp.fc1",      "mlp.gelu",
      "mlp.fc2"};
  EXPECT_EQ(SplitNames(g, "layer0."), want);
  EXPECT_EQ(SplitNames(g, "layer11."), want);
  // Replicated: both layer norms, the dropouts after proj/fc2, the residuals.
  for (const char* name : {"layer3.attn.ln", "layer3.attn.dropout", "layer3.attn.residual",
                           "layer3.mlp.ln", "layer3.mlp.dropout", "layer3.mlp.residual"}) {
    EXPECT_FALSE(IsTensorParallelSplit(g.op(g.Find(name)))) << name;
  }
}

TEST(TensorParallel, VocabularyParallelEmbeddingHeadAndLoss) {
  const ModelGraph g = models::BuildZooModel("gpt2");
  EXPECT_EQ(SplitNames(g, "embed."), std::set<std::string>{"tokens"});
  EXPECT_TRUE(IsTensorParallelSplit(g.op(g.Find("lm_head"))));
  EXPECT_TRUE(IsTensorParallelSplit(g.op(g.Find("loss"))));
  EXPECT_FALSE(IsTensorParallelSplit(g.op(g.Find("final_ln"))));
  EXPECT_FALSE(IsTensorParallelSplit(g.op(g.Find("tokens"))));

  const ModelGraph bert = models::BuildZooModel("bert-base");
  EXPECT_TRUE(IsTensorParallelSplit(bert.op(bert.Find("mlm.decoder"))));
  EXPECT_TRUE(IsTensorParallelSplit(bert.op(bert.Find("mlm.loss"))));
  for (const char* name : {"embed.positions", "embed.token_types", "embed.ln", "pooler.dense",
                           "nsp.classifier", "nsp.loss", "mlm.transform", "layer0.attn.ln"}) {
    EXPECT_FALSE(IsTensorParallelSplit(bert.op(bert.Find(name)))) << name;
  }
}

TEST(TensorParallel, NameAloneIsNotEnoughTheKindMustMatch) {
  models::Op op;
  op.name = "layer0.mlp.fc1";
  op.kind = models::OpKind::kConv2d;
  EXPECT_FALSE(IsTensorParallelSplit(op));
  EXPECT_EQ(TensorParallelCollective(op), TpCollective::kNone);
  op.kind = models::OpKind::kDense;
  EXPECT_TRUE(IsTensorParallelSplit(op));
  op.name = "mlp.fc1.extra";  // sublayer is "fc1", not "mlp"
  EXPECT_FALSE(IsTensorParallelSplit(op));
}

TEST(TensorParallel, CnnOpsAreReplicated) {
  const ModelGraph g = models::BuildZooModel("resnet50");
  for (models::OpId id = 0; id < g.num_ops(); ++id) {
    EXPECT_FALSE(IsTensorParallelSplit(g.op(id))) << g.op(id).name;
  }
}

TEST(TensorParallel, TwoAllReducesForwardAndTwoBackwardPerBlock) {
  // Megatron-LM Fig. 4: f/g operators. Per block, forward all-reduces after
  // attn.proj and mlp.fc2 (row parallel), backward after the input gradient
  // of attn.qkv and mlp.fc1 (column parallel); each of S x H = 1024 x 768
  // = 786,432 elements per sample for GPT-2.
  const ModelGraph g = models::BuildZooModel("gpt2");
  int forward = 0, backward = 0;
  for (models::OpId id = 0; id < g.num_ops(); ++id) {
    const models::Op& op = g.op(id);
    if (op.name.rfind("layer5.", 0) != 0) continue;
    const TpCollective c = TensorParallelCollective(op);
    if (c == TpCollective::kNone) continue;
    (c == TpCollective::kAfterForward ? forward : backward) += 1;
    EXPECT_DOUBLE_EQ(TensorParallelCollectiveElementsPerSample(op), 786432.0) << op.name;
  }
  EXPECT_EQ(forward, 2);
  EXPECT_EQ(backward, 2);
  EXPECT_EQ(TensorParallelCollective(g.op(g.Find("layer5.attn.proj"))),
            TpCollective::kAfterForward);
  EXPECT_EQ(TensorParallelCollective(g.op(g.Find("layer5.mlp.fc1"))),
            TpCollective::kAfterBackwardInput);
  // Vocabulary-parallel embedding (forward) and LM head (backward).
  EXPECT_EQ(TensorParallelCollective(g.op(g.Find("embed.tokens"))), TpCollective::kAfterForward);
  EXPECT_EQ(TensorParallelCollective(g.op(g.Find("lm_head"))), TpCollective::kAfterBackwardInput);
  EXPECT_DOUBLE_EQ(TensorParallelCollectiveElementsPerSample(g.op(g.Find("lm_head"))), 786432.0);
  EXPECT_EQ(TensorParallelCollective(g.op(g.Find("loss"))), TpCollective::kNone);
  EXPECT_DOUBLE_EQ(TensorParallelCollectiveElementsPerSample(g.op(g.Find("loss"))), 0.0);
}

TEST(TensorParallel, ReplicatedTensorsOfSplitOps) {
  const ModelGraph g = models::BuildZooModel("gpt2");
  const auto op = [&](const char* name) -> const models::Op& { return g.op(g.Find(name)); };
  // Column parallel: output split, saved input (X for dW) replicated.
  for (const char* name : {"layer0.attn.qkv", "layer0.mlp.fc1", "lm_head"}) {
    EXPECT_TRUE(TensorParallelSplitsOutput(op(name))) << name;
    EXPECT_FALSE(TensorParallelSplitsSavedActivations(op(name))) << name;
  }
  // Row parallel: saved input split, output all-reduced (replicated).
  for (const char* name : {"layer0.attn.proj", "layer0.mlp.fc2"}) {
    EXPECT_FALSE(TensorParallelSplitsOutput(op(name))) << name;
    EXPECT_TRUE(TensorParallelSplitsSavedActivations(op(name))) << name;
  }
  // Token embedding: ids kept whole, output all-reduced.
  EXPECT_FALSE(TensorParallelSplitsOutput(op("embed.tokens")));
  EXPECT_FALSE(TensorParallelSplitsSavedActivations(op("embed.tokens")));
  // Between them: both split.
  for (const char* name : {"layer0.attn.softmax", "layer0.mlp.gelu", "loss"}) {
    EXPECT_TRUE(TensorParallelSplitsOutput(op(name))) << name;
    EXPECT_TRUE(TensorParallelSplitsSavedActivations(op(name))) << name;
  }
  // Replicated ops: neither.
  EXPECT_FALSE(TensorParallelSplitsOutput(op("layer0.attn.ln")));
  EXPECT_FALSE(TensorParallelSplitsSavedActivations(op("layer0.attn.ln")));
}

}  // namespace
}  // namespace dtsim::plan
