// ResNet-50/101/152 (He et al. 2016) as torchvision builds them ("v1.5": the
// bottleneck's stride sits on its 3x3 conv), at 224 x 224.
//
//   3x224x224 -conv1 7x7/2 p3, bn, relu-> 64x112x112 -maxpool 3/2 p1-> 64x56x56
//   -layer1 (width 64,  stride 1)-> 256x56x56
//   -layer2 (width 128, stride 2)-> 512x28x28
//   -layer3 (width 256, stride 2)-> 1024x14x14
//   -layer4 (width 512, stride 2)-> 2048x7x7 -avgpool-> 2048 -fc-> 1000
//
// Bottleneck, width w, stride s, output 4w:
//
//   x -conv1 1x1 w, bn1, relu1 -conv2 3x3/s w, bn2, relu2 -conv3 1x1 4w, bn3-+-add-relu3->
//   |                                                                        |
//   +------------- identity, or downsample: conv 1x1/s 4w, bn ---------------+
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/graph_builder.h"
#include "models/zoo_builders.h"

namespace dtsim::models {
namespace {

constexpr std::int64_t kExpansion = 4;  // bottleneck output = 4 x width

Tensor ConvBn(GraphBuilder& b, const std::string& conv, const std::string& bn, const Tensor& x,
              const ConvSpec& spec) {
  return b.BatchNorm(bn, b.Conv2d(conv, x, spec.NoBias()));
}

Tensor Bottleneck(GraphBuilder& b, const std::string& p, const Tensor& x, std::int64_t width,
                  int stride) {
  Tensor h = b.Relu(p + "relu1", ConvBn(b, p + "conv1", p + "bn1", x, ConvSpec::Square(width, 1)));
  h = b.Relu(p + "relu2",
             ConvBn(b, p + "conv2", p + "bn2", h, ConvSpec::Square(width, 3, stride, 1)));
  h = ConvBn(b, p + "conv3", p + "bn3", h, ConvSpec::Square(kExpansion * width, 1));
  Tensor identity = x;
  if (stride != 1 || x.shape[0] != kExpansion * width) {
    identity = ConvBn(b, p + "downsample.0", p + "downsample.1", x,
                      ConvSpec::Square(kExpansion * width, 1, stride));
  }
  return b.Relu(p + "relu3", b.Add(p + "add", h, identity));
}


// Parameter counts (torchvision model summaries): ResNet-50 25,557,032,
// ResNet-101 44,549,160, ResNet-152 60,192,808.
ModelGraph BuildResNet(int depth, const ZooEntry& entry) {
  // Bottlenecks per stage, Table 1 of He et al. 2016.
  static const std::map<int, std::vector<int>> kBlocks = {
      {50, {3, 4, 6, 3}}, {101, {3, 4, 23, 3}}, {152, {3, 8, 36, 3}}};
  auto it = kBlocks.find(depth);
  DTSIM_CHECK(it != kBlocks.end(), "no ResNet of depth " + std::to_string(depth));
  GraphBuilder b(entry.name);
  Tensor x = b.Input("image", {3, 224, 224});
  x = b.Relu("relu", ConvBn(b, "conv1", "bn1", x, ConvSpec::Square(64, 7, 2, 3)));
  x = b.MaxPool("maxpool", x, PoolSpec::Square(3, 2, 1));
  std::int64_t width = 64;
  for (std::size_t stage = 0; stage < it->second.size(); ++stage, width *= 2) {
    for (int i = 0; i < it->second[stage]; ++i) {
      const int stride = (stage > 0 && i == 0) ? 2 : 1;
      x = Bottleneck(b, "layer" + std::to_string(stage + 1) + "." + std::to_string(i) + ".", x,
                     width, stride);
    }
  }
  x = b.Flatten("flatten", b.GlobalAvgPool("avgpool", x));
  b.SoftmaxCrossEntropy("loss", b.Dense("fc", x, {.out_features = 1000}), 1000);
  return b.Finish(entry.description);
}

}  // namespace

std::vector<ZooRecipe> ResNetZoo() {
  std::vector<ZooRecipe> zoo;
  for (int depth : {50, 101, 152}) {
    const std::string d = std::to_string(depth);
    zoo.push_back({{"resnet" + d, "ResNet-" + d +
                                      " (He et al. 2016), torchvision v1.5 (stride on the 3x3 "
                                      "conv), 224x224"},
                   [depth](const ZooEntry& e) { return BuildResNet(depth, e); }});
  }
  return zoo;
}

}  // namespace dtsim::models
