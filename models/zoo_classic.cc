// AlexNet and VGG-16 as torchvision builds them (torchvision/models/alexnet.py,
// vgg.py), at 224 x 224. Their AdaptiveAvgPool2d((6, 6)) / ((7, 7)) is the
// identity at that size and is left out.
#include <string>
#include <vector>

#include "models/graph_builder.h"
#include "models/zoo_builders.h"

namespace dtsim::models {
namespace {

// Where the classifier's dropouts sit.
enum class DropoutAt {
  kBeforeDense,  // AlexNet: Dropout, Dense, ReLU
  kAfterRelu,    // VGG:     Dense, ReLU, Dropout
};

// Two hidden dense layers of `hidden` units with ReLU and dropout, the
// 1000-way classifier and the loss: the head both torchvision models share.
void Classifier(GraphBuilder& b, Tensor x, std::int64_t hidden, DropoutAt dropout_at) {
  x = b.Flatten("flatten", x);
  for (int i = 6; i <= 7; ++i) {
    const std::string n = std::to_string(i);
    if (dropout_at == DropoutAt::kBeforeDense) x = b.Dropout("drop" + n, x);
    x = b.Relu("relu" + n, b.Dense("fc" + n, x, {.out_features = hidden}));
    if (dropout_at == DropoutAt::kAfterRelu) x = b.Dropout("drop" + n, x);
  }
  b.SoftmaxCrossEntropy("loss", b.Dense("fc8", x, {.out_features = 1000}), 1000);
}


//   3x224x224 -conv1 11x11/4 p2, 64-> 64x55x55 -pool 3/2-> 27
//   -conv2 5x5 p2, 192-> -pool-> 13 -conv3 384, conv4 256, conv5 256 (3x3 p1)->
//   -pool-> 256x6x6 = 9216 -> 4096 -> 4096 -> 1000
// 61,100,840 params (torchvision model summary).
ModelGraph BuildAlexNet(const ZooEntry& entry) {
  GraphBuilder b(entry.name);
  const PoolSpec pool = PoolSpec::Square(3, 2);
  Tensor x = b.Input("image", {3, 224, 224});
  x = b.Relu("relu1", b.Conv2d("conv1", x, ConvSpec::Square(64, 11, 4, 2)));
  x = b.MaxPool("pool1", x, pool);
  x = b.Relu("relu2", b.Conv2d("conv2", x, ConvSpec::Square(192, 5, 1, 2)));
  x = b.MaxPool("pool2", x, pool);
  x = b.Relu("relu3", b.Conv2d("conv3", x, ConvSpec::Square(384, 3, 1, 1)));
  x = b.Relu("relu4", b.Conv2d("conv4", x, ConvSpec::Square(256, 3, 1, 1)));
  x = b.Relu("relu5", b.Conv2d("conv5", x, ConvSpec::Square(256, 3, 1, 1)));
  x = b.MaxPool("pool5", x, pool);
  Classifier(b, x, 4096, DropoutAt::kBeforeDense);
  return b.Finish(entry.description);
}

// VGG-16, configuration D of Simonyan & Zisserman 2015: 13 3x3 convs in five
// stages of (64, 64), (128, 128), (256 x 3), (512 x 3), (512 x 3), each
// followed by a 2x2/2 max pool; 512x7x7 = 25088 -> 4096 -> 4096 -> 1000.
// 138,357,544 params (torchvision model summary).
ModelGraph BuildVgg16(const ZooEntry& entry) {
  GraphBuilder b(entry.name);
  const std::vector<std::vector<std::int64_t>> stages = {
      {64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512}, {512, 512, 512}};
  Tensor x = b.Input("image", {3, 224, 224});
  for (std::size_t s = 0; s < stages.size(); ++s) {
    for (std::size_t i = 0; i < stages[s].size(); ++i) {
      const std::string n = std::to_string(s + 1) + "_" + std::to_string(i + 1);
      x = b.Relu("relu" + n, b.Conv2d("conv" + n, x, ConvSpec::Square(stages[s][i], 3, 1, 1)));
    }
    x = b.MaxPool("pool" + std::to_string(s + 1), x, PoolSpec::Square(2, 2));
  }
  Classifier(b, x, 4096, DropoutAt::kAfterRelu);
  return b.Finish(entry.description);
}

}  // namespace

std::vector<ZooRecipe> ClassicZoo() {
  return {
      {{"alexnet", "AlexNet (Krizhevsky et al. 2012), torchvision variant (Krizhevsky 2014, "
                   "'One weird trick'), 224x224"},
       BuildAlexNet},
      {{"vgg16", "VGG-16 (Simonyan & Zisserman 2015, configuration D), torchvision layout, "
                 "224x224"},
       BuildVgg16},
  };
}

}  // namespace dtsim::models
