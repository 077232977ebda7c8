#include "models/zoo.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/error.h"

namespace dtsim::models {
namespace {

constexpr double kGiga = 1e9;

struct Published {
  const char* name;
  std::int64_t params;  // exact
  const char* source;
};

// Parameter counts as published:
//  - torchvision model summaries (torchvision.models docs, "num_params"), with
//    Inception-v3 minus its AuxLogits head (27,161,264 - 3,326,696);
//  - HF transformers (sum of p.numel()): GPT2LMHeadModel with tied head,
//    BertForPreTraining;
//  - the TensorFlow CIFAR-10 tutorial arithmetic:
//      conv1 5*5*3*64 + 64 = 4,864; conv2 5*5*64*64 + 64 = 102,464;
//      local3 2304*384 + 384 = 885,120; local4 384*192 + 192 = 73,920;
//      softmax_linear 192*10 + 10 = 1,930  ->  1,068,298;
//  - MNIST MLP: 784*500 + 500 + 500*10 + 10 = 397,510;
//  - BERT: BertModel (bert-base 109,482,240; bert-large 335,141,888) plus the
//    MLM transform H^2 + H + LN 2H + decoder bias 30,522 and NSP 2H + 2.
const Published kPublished[] = {
    {"mnist-mlp", 397510, "arithmetic"},
    {"cifar10-cnn", 1068298, "TF tutorial arithmetic"},
    {"alexnet", 61100840, "torchvision"},
    {"vgg16", 138357544, "torchvision"},
    {"resnet50", 25557032, "torchvision"},
    {"resnet101", 44549160, "torchvision"},
    {"resnet152", 60192808, "torchvision"},
    {"inception-v3", 23834568, "torchvision without aux head"},
    {"bert-base", 109482240 + (768 * 768 + 768) + 2 * 768 + 30522 + (2 * 768 + 2),
     "HF BertForPreTraining"},
    {"bert-large", 335141888 + (1024 * 1024 + 1024) + 2 * 1024 + 30522 + (2 * 1024 + 2),
     "HF BertForPreTraining"},
    {"gpt2", 124439808, "HF gpt2"},
    {"gpt2-medium", 354823168, "HF gpt2-medium"},
    {"gpt2-large", 774030080, "HF gpt2-large"},
    {"gpt2-xl", 1557611200, "HF gpt2-xl"},
    {"fashion-mnist-cnn", 206922, "layer arithmetic in zoo_small.cc"},
};

TEST(Zoo, ParamCountsAreExact) {
  for (const Published& p : kPublished) {
    EXPECT_EQ(BuildZooModel(p.name).Totals().params, p.params) << p.name << " (" << p.source << ")";
  }
  // BERT sums above: bert-base 110,106,428 and bert-large 336,226,108.
  EXPECT_EQ(kPublished[8].params, 110106428);
  EXPECT_EQ(kPublished[9].params, 336226108);
}

// Forward FLOPs per image = 2 x published multiply-accumulates (torchvision
// docs "GFLOPS", which count MACs; ResNet paper: 3.8 G for ResNet-50 v1,
// 4.09 G for the v1.5 layout). Ours add batch norm, ReLU and pooling
// (about 1%), so the tolerance is 2.5%.
TEST(Zoo, CnnForwardFlopsMatchPublishedMacs) {
  const struct {
    const char* name;
    double gmacs;
  } cases[] = {{"alexnet", 0.714},    {"vgg16", 15.47},     {"resnet50", 4.09},
               {"resnet101", 7.80},   {"resnet152", 11.51}, {"inception-v3", 5.71}};
  for (const auto& c : cases) {
    const double gflops = BuildZooModel(c.name).Totals().fwd_flops / kGiga;
    EXPECT_NEAR(gflops / (2 * c.gmacs), 1.0, 0.025) << c.name << ": " << gflops << " GFLOP";
  }
}

TEST(Zoo, TransformerForwardFlopsAreAboutTwiceParamsPerToken) {
  // Kaplan et al. 2020: forward ~ 2 N per token plus attention 2 L S H
  // per token (N without embeddings); with the LM head and S = 1024 GPT-2's
  // count sits within a few % of 2 (N_nonembed + V H) S + 4 L S^2 H.
  const double l = 12, h = 768, s = 1024, v = 50257;
  const double n_nonembed = 12 * l * h * h + 13 * l * h;
  const double expected = 2 * (n_nonembed + v * h) * s + 4 * l * s * s * h;
  const double got = BuildZooModel("gpt2").Totals().fwd_flops;
  EXPECT_NEAR(got / expected, 1.0, 0.02);
}

TEST(Zoo, GptThreePresetsFollowTheClosedForm) {
  // 12 L H^2 + 13 L H + (V + P) H + 2H with P = S = 2048, V = 50257:
  // GPT-3 175B has 174,604,259,328 (the paper rounds to 175.0B).
  EXPECT_EQ(BuildZooModel("gpt3-175b").Totals().params, 174604259328);
}

// Llama-family totals: sum of p.numel() over the Hugging Face model built
// from each released config.json (LlamaForCausalLM / MistralForCausalLM,
// untied head), as the model cards and papers state them. The closed form
// with D = H / A = 128, G kv heads, intermediate size F, vocab V:
//   per layer  q, o 2 H^2; k, v 2 H G D; gate, up, down 3 H F; 2 RMSNorms 2H
//   outside    token table V H, LM head V H, final RMSNorm H
// Llama 3.1 405B (L 126, H 16384, G 8, F 53248, V 128256), from that form:
//   126 (2 * 16384^2 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 2 * 16384)
//     + 2 * 128256 * 16384 + 16384 = 405,853,388,800
// (Meta names it "405B").
TEST(Zoo, LlamaFamilyParamCountsAreExact) {
  const Published llamas[] = {
      {"llama2-7b", 6738415616, "meta-llama/Llama-2-7b-hf"},
      {"llama2-13b", 13015864320, "meta-llama/Llama-2-13b-hf"},
      {"llama2-70b", 68976648192, "meta-llama/Llama-2-70b-hf"},
      {"llama3-8b", 8030261248, "meta-llama/Meta-Llama-3-8B"},
      {"llama3-70b", 70553706496, "meta-llama/Meta-Llama-3-70B"},
      {"llama3.1-405b", 405853388800, "closed form above"},
      {"mistral-7b", 7241732096, "mistralai/Mistral-7B-v0.1"},
  };
  for (const Published& p : llamas)
    EXPECT_EQ(BuildZooModel(p.name).Totals().params, p.params) << p.name << " (" << p.source << ")";
  const std::int64_t l = 126, h = 16384, g = 8, d = 128, f = 53248, v = 128256;
  EXPECT_EQ(l * (2 * h * h + 2 * h * g * d + 3 * h * f + 2 * h) + 2 * v * h + h, 405853388800);
}

TEST(Zoo, FeatureMapShapes) {
  const ModelGraph cifar = BuildZooModel("cifar10-cnn");
  EXPECT_EQ(cifar.op(cifar.Find("pool1")).output_shape, (Shape{64, 12, 12}));
  EXPECT_EQ(cifar.op(cifar.Find("pool2")).output_shape, (Shape{64, 6, 6}));
  const ModelGraph resnet = BuildZooModel("resnet50");
  EXPECT_EQ(resnet.op(resnet.Find("maxpool")).output_shape, (Shape{64, 56, 56}));
  EXPECT_EQ(resnet.op(resnet.Find("layer4.2.relu3")).output_shape, (Shape{2048, 7, 7}));
  const ModelGraph inception = BuildZooModel("inception-v3");
  EXPECT_EQ(inception.op(inception.Find("maxpool2")).output_shape, (Shape{192, 35, 35}));
  EXPECT_EQ(inception.op(inception.Find("Mixed_6a.concat")).output_shape, (Shape{768, 17, 17}));
  EXPECT_EQ(inception.op(inception.Find("Mixed_7c.concat")).output_shape, (Shape{2048, 8, 8}));
  const ModelGraph alexnet = BuildZooModel("alexnet");
  EXPECT_EQ(alexnet.op(alexnet.Find("pool5")).output_shape, (Shape{256, 6, 6}));
}

TEST(Zoo, EveryModelEndsWithALossInTopologicalOrder) {
  std::set<std::string> names;
  for (const ZooEntry& e : ZooEntries()) {
    EXPECT_TRUE(names.insert(e.name).second) << "duplicate " << e.name;
    // The description names its source in parentheses.
    EXPECT_NE(e.description.find(" ("), std::string::npos) << e.name << ": " << e.description;
    if (e.name == "gpt3-175b" || e.name == "gpt3-13b") continue;  // large, covered above
    const ModelGraph g = BuildZooModel(e.name);
    EXPECT_EQ(g.name(), e.name);
    EXPECT_EQ(g.description(), e.description);
    ASSERT_GT(g.num_ops(), 2u);
    EXPECT_EQ(g.op(g.num_ops() - 1).kind, OpKind::kSoftmaxCrossEntropy) << e.name;
    EXPECT_EQ(g.op(0).kind, OpKind::kInput) << e.name;
    EXPECT_NO_THROW(g.Validate());
    for (OpId v = 0; v < g.num_ops(); ++v) {
      for (OpId in : g.inputs(v)) EXPECT_LT(in, v) << e.name << " " << g.op(v).name;
      EXPECT_GE(g.op(v).fwd_flops, 0);
    }
  }
  EXPECT_GE(names.size(), 18u);
}

TEST(Zoo, LookupIsCaseInsensitiveAndUnknownNamesListTheZoo) {
  EXPECT_EQ(BuildZooModel("ResNet50").name(), "resnet50");
  try {
    BuildZooModel("resnet51");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("resnet51"), std::string::npos);
    EXPECT_NE(e.hint().find("resnet50"), std::string::npos);
    EXPECT_NE(e.hint().find("gpt2-xl"), std::string::npos);
  }
}

TEST(Zoo, CifarCnnRecordsItsWindows) {
  // cifar10.py: conv1 5x5 stride 1 'SAME' (pad 2), pool1 3x3 stride 2,
  // norm1 depth_radius 4.
  const ModelGraph g = BuildZooModel("cifar10-cnn");
  const OpAttrs& conv = g.op(g.Find("conv1")).attrs;
  EXPECT_EQ(conv.kernel_h, 5);
  EXPECT_EQ(conv.pad_w, 2);
  EXPECT_TRUE(conv.bias);
  const OpAttrs& pool = g.op(g.Find("pool1")).attrs;
  EXPECT_EQ(pool.kernel_h, 3);
  EXPECT_EQ(pool.stride_w, 2);
  EXPECT_TRUE(pool.ceil_mode);
  EXPECT_EQ(g.op(g.Find("norm1")).attrs.lrn_radius, 4);
  EXPECT_EQ(g.op(g.Find("loss")).attrs.vocab, 10);
}

TEST(Zoo, ModelTableIsAlignedWithTotals) {
  const ModelGraph g = BuildZooModel("cifar10-cnn");
  const std::string table = FormatModelTable(g);
  EXPECT_NE(table.find("1,068,298"), std::string::npos) << table;
  EXPECT_NE(table.find("fwd+bwd GFLOP/sample"), std::string::npos) << table;
  // Header and one row per op, all ending at the same column (the last
  // column is right-aligned).
  std::size_t pos = table.find("\n\nlayer") + 2;
  std::size_t width = 0;
  for (std::size_t row = 0; row <= g.num_ops(); ++row) {
    const std::size_t end = table.find('\n', pos);
    if (row == 0) width = end - pos;
    EXPECT_EQ(end - pos, width) << "row " << row << " of\n" << table;
    pos = end + 1;
  }
}

}  // namespace
}  // namespace dtsim::models
