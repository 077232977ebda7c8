// Inception-v3 (Szegedy et al. 2016) as torchvision builds it
// (torchvision/models/inception.py, Inception3 with aux_logits=False), at
// 299 x 299. Every conv is a BasicConv2d: conv without bias, batch norm, ReLU.
//
//   3x299x299 -1a 3x3/2-> 32x149x149 -2a 3x3-> 32x147x147 -2b 3x3 p1-> 64x147x147
//   -maxpool 3/2-> 73 -3b 1x1-> 80 -4a 3x3-> 192x71x71 -maxpool 3/2-> 192x35x35
//   -5b,5c,5d (A)-> 288x35x35 -6a (B)-> 768x17x17 -6b..6e (C)-> 768x17x17
//   -7a (D)-> 1280x8x8 -7b,7c (E)-> 2048x8x8 -avgpool, dropout, fc-> 1000
//
// 23,834,568 params (torchvision's 27,161,264 minus the 3,326,696 of
// AuxLogits).
#include <string>
#include <vector>

#include "models/graph_builder.h"
#include "models/zoo_builders.h"

namespace dtsim::models {
namespace {

// torchvision BasicConv2d: ops name.conv, name.bn, name.relu.
Tensor BasicConv(GraphBuilder& b, const std::string& name, const Tensor& x,
                 const ConvSpec& spec) {
  const Tensor c = b.Conv2d(name + ".conv", x, spec.NoBias());
  return b.Relu(name + ".relu", b.BatchNorm(name + ".bn", c));
}

// 1x1 BasicConv2d.
Tensor Conv1x1(GraphBuilder& b, const std::string& name, const Tensor& x, std::int64_t out) {
  return BasicConv(b, name, x, ConvSpec::Square(out, 1));
}

// 1 x n and n x 1 convs, stride 1, 'same' padding.
ConvSpec Conv1xN(std::int64_t out, int n) { return ConvSpec::Rect(out, 1, n, 0, n / 2); }
ConvSpec ConvNx1(std::int64_t out, int n) { return ConvSpec::Rect(out, n, 1, n / 2, 0); }

// 3x3/1 p1 average pool, then a 1x1 BasicConv2d: every A, C and E block's
// pooling branch.
Tensor AvgPoolBranch(GraphBuilder& b, const std::string& p, const Tensor& x, std::int64_t out) {
  const Tensor pooled = b.AvgPool(p + "branch_pool.avgpool", x, PoolSpec::Square(3, 1, 1));
  return Conv1x1(b, p + "branch_pool", pooled, out);
}

// InceptionA: 64 + 64 + 96 + pool_features channels, 35x35.
Tensor InceptionA(GraphBuilder& b, const std::string& p, const Tensor& x,
                  std::int64_t pool_features) {
  const Tensor b1 = Conv1x1(b, p + "branch1x1", x, 64);
  Tensor b5 = Conv1x1(b, p + "branch5x5_1", x, 48);
  b5 = BasicConv(b, p + "branch5x5_2", b5, ConvSpec::Square(64, 5, 1, 2));
  Tensor b3 = Conv1x1(b, p + "branch3x3dbl_1", x, 64);
  b3 = BasicConv(b, p + "branch3x3dbl_2", b3, ConvSpec::Square(96, 3, 1, 1));
  b3 = BasicConv(b, p + "branch3x3dbl_3", b3, ConvSpec::Square(96, 3, 1, 1));
  const Tensor bp = AvgPoolBranch(b, p, x, pool_features);
  return b.Concat(p + "concat", {b1, b5, b3, bp});
}

// InceptionB (grid reduction 35 -> 17): 384 + 96 + in channels.
Tensor InceptionB(GraphBuilder& b, const std::string& p, const Tensor& x) {
  const Tensor b3 = BasicConv(b, p + "branch3x3", x, ConvSpec::Square(384, 3, 2));
  Tensor bd = Conv1x1(b, p + "branch3x3dbl_1", x, 64);
  bd = BasicConv(b, p + "branch3x3dbl_2", bd, ConvSpec::Square(96, 3, 1, 1));
  bd = BasicConv(b, p + "branch3x3dbl_3", bd, ConvSpec::Square(96, 3, 2));
  const Tensor bp = b.MaxPool(p + "branch_pool", x, PoolSpec::Square(3, 2));
  return b.Concat(p + "concat", {b3, bd, bp});
}

// InceptionC (factorised 7x7, 17x17): 4 x 192 channels.
Tensor InceptionC(GraphBuilder& b, const std::string& p, const Tensor& x, std::int64_t c7) {
  const Tensor b1 = Conv1x1(b, p + "branch1x1", x, 192);
  Tensor b7 = Conv1x1(b, p + "branch7x7_1", x, c7);
  b7 = BasicConv(b, p + "branch7x7_2", b7, Conv1xN(c7, 7));
  b7 = BasicConv(b, p + "branch7x7_3", b7, ConvNx1(192, 7));
  Tensor bd = Conv1x1(b, p + "branch7x7dbl_1", x, c7);
  bd = BasicConv(b, p + "branch7x7dbl_2", bd, ConvNx1(c7, 7));
  bd = BasicConv(b, p + "branch7x7dbl_3", bd, Conv1xN(c7, 7));
  bd = BasicConv(b, p + "branch7x7dbl_4", bd, ConvNx1(c7, 7));
  bd = BasicConv(b, p + "branch7x7dbl_5", bd, Conv1xN(192, 7));
  const Tensor bp = AvgPoolBranch(b, p, x, 192);
  return b.Concat(p + "concat", {b1, b7, bd, bp});
}

// InceptionD (grid reduction 17 -> 8): 320 + 192 + in channels.
Tensor InceptionD(GraphBuilder& b, const std::string& p, const Tensor& x) {
  Tensor b3 = Conv1x1(b, p + "branch3x3_1", x, 192);
  b3 = BasicConv(b, p + "branch3x3_2", b3, ConvSpec::Square(320, 3, 2));
  Tensor b7 = Conv1x1(b, p + "branch7x7x3_1", x, 192);
  b7 = BasicConv(b, p + "branch7x7x3_2", b7, Conv1xN(192, 7));
  b7 = BasicConv(b, p + "branch7x7x3_3", b7, ConvNx1(192, 7));
  b7 = BasicConv(b, p + "branch7x7x3_4", b7, ConvSpec::Square(192, 3, 2));
  const Tensor bp = b.MaxPool(p + "branch_pool", x, PoolSpec::Square(3, 2));
  return b.Concat(p + "concat", {b3, b7, bp});
}

// 1x3 and 3x1 convs side by side on the same input, concatenated (E's
// expanded filter banks): 2 x 384 channels.
Tensor SplitPair(GraphBuilder& b, const std::string& a_name, const std::string& b_name,
                 const std::string& concat_name, const Tensor& x) {
  const Tensor left = BasicConv(b, a_name, x, Conv1xN(384, 3));
  const Tensor right = BasicConv(b, b_name, x, ConvNx1(384, 3));
  return b.Concat(concat_name, {left, right});
}

// InceptionE (expanded filter banks, 8x8): 320 + 768 + 768 + 192 = 2048.
Tensor InceptionE(GraphBuilder& b, const std::string& p, const Tensor& x) {
  const Tensor b1 = Conv1x1(b, p + "branch1x1", x, 320);
  Tensor b3 = Conv1x1(b, p + "branch3x3_1", x, 384);
  b3 = SplitPair(b, p + "branch3x3_2a", p + "branch3x3_2b", p + "branch3x3.concat", b3);
  Tensor bd = Conv1x1(b, p + "branch3x3dbl_1", x, 448);
  bd = BasicConv(b, p + "branch3x3dbl_2", bd, ConvSpec::Square(384, 3, 1, 1));
  bd = SplitPair(b, p + "branch3x3dbl_3a", p + "branch3x3dbl_3b", p + "branch3x3dbl.concat", bd);
  const Tensor bp = AvgPoolBranch(b, p, x, 192);
  return b.Concat(p + "concat", {b1, b3, bd, bp});
}

ModelGraph BuildInceptionV3(const ZooEntry& entry) {
  GraphBuilder b(entry.name);
  Tensor x = b.Input("image", {3, 299, 299});
  x = BasicConv(b, "Conv2d_1a_3x3", x, ConvSpec::Square(32, 3, 2));
  x = BasicConv(b, "Conv2d_2a_3x3", x, ConvSpec::Square(32, 3));
  x = BasicConv(b, "Conv2d_2b_3x3", x, ConvSpec::Square(64, 3, 1, 1));
  x = b.MaxPool("maxpool1", x, PoolSpec::Square(3, 2));
  x = Conv1x1(b, "Conv2d_3b_1x1", x, 80);
  x = BasicConv(b, "Conv2d_4a_3x3", x, ConvSpec::Square(192, 3));
  x = b.MaxPool("maxpool2", x, PoolSpec::Square(3, 2));
  x = InceptionA(b, "Mixed_5b.", x, 32);
  x = InceptionA(b, "Mixed_5c.", x, 64);
  x = InceptionA(b, "Mixed_5d.", x, 64);
  x = InceptionB(b, "Mixed_6a.", x);
  x = InceptionC(b, "Mixed_6b.", x, 128);
  x = InceptionC(b, "Mixed_6c.", x, 160);
  x = InceptionC(b, "Mixed_6d.", x, 160);
  x = InceptionC(b, "Mixed_6e.", x, 192);
  x = InceptionD(b, "Mixed_7a.", x);
  x = InceptionE(b, "Mixed_7b.", x);
  x = InceptionE(b, "Mixed_7c.", x);
  x = b.Flatten("flatten", b.GlobalAvgPool("avgpool", x));
  x = b.Dropout("dropout", x);
  b.SoftmaxCrossEntropy("loss", b.Dense("fc", x, {.out_features = 1000}), 1000);
  return b.Finish(entry.description);
}

}  // namespace

std::vector<ZooRecipe> InceptionZoo() {
  return {{{"inception-v3", "Inception-v3 (Szegedy et al. 2016), torchvision Inception3 "
                            "without the auxiliary head, 299x299"},
           BuildInceptionV3}};
}

}  // namespace dtsim::models
