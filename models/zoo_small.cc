// Small classic models: the MNIST MLP and the TensorFlow CIFAR-10 CNN.
#include "models/graph_builder.h"
#include "models/zoo_builders.h"

namespace dtsim::models {
namespace {

// 784 -> 500 -> 10 multilayer perceptron with ReLU (the layer sizes of the
// Theano MLP tutorial): 784 * 500 + 500 + 500 * 10 + 10 = 397,510 params.
ModelGraph BuildMnistMlp(const ZooEntry& entry) {
  GraphBuilder b(entry.name);
  const Tensor x = b.Input("image", {784});
  const Tensor h = b.Relu("relu1", b.Dense("fc1", x, {.out_features = 500}));
  b.SoftmaxCrossEntropy("loss", b.Dense("fc2", h, {.out_features = 10}), 10);
  return b.Finish(entry.description);
}

// TensorFlow's CIFAR-10 tutorial model (tensorflow/models, tutorials/image/
// cifar10/cifar10.py), on 24 x 24 crops:
//
//   3x24x24 -conv1 5x5x64 SAME, relu-> 64x24x24 -pool1 3x3/2 SAME-> 64x12x12
//   -norm1 lrn(4)-> -conv2 5x5x64 SAME, relu-> -norm2 lrn(4)-> -pool2 3x3/2 SAME->
//   64x6x6 -local3 2304->384 relu-> -local4 384->192 relu-> -softmax_linear 192->10
//
// TensorFlow's 'SAME' 3x3/2 pooling pads one row and column at the end only;
// PyTorch-style ceil_mode with no padding gives the same windows (24 -> 12,
// 12 -> 6). Stride-1 SAME 5x5 convs pad 2 on each side.
ModelGraph BuildCifar10Cnn(const ZooEntry& entry) {
  GraphBuilder b(entry.name);
  constexpr int kLrnRadius = 4;  // depth_radius=4 in cifar10.py
  const PoolSpec pool = PoolSpec::Square(3, 2).WithCeilMode();
  Tensor x = b.Input("image", {3, 24, 24});
  x = b.Relu("conv1.relu", b.Conv2d("conv1", x, ConvSpec::Square(64, 5, 1, 2)));
  x = b.MaxPool("pool1", x, pool);
  x = b.LocalResponseNorm("norm1", x, kLrnRadius);
  x = b.Relu("conv2.relu", b.Conv2d("conv2", x, ConvSpec::Square(64, 5, 1, 2)));
  x = b.LocalResponseNorm("norm2", x, kLrnRadius);
  x = b.MaxPool("pool2", x, pool);
  x = b.Flatten("flatten", x);
  x = b.Relu("local3.relu", b.Dense("local3", x, {.out_features = 384}));
  x = b.Relu("local4.relu", b.Dense("local4", x, {.out_features = 192}));
  b.SoftmaxCrossEntropy("loss", b.Dense("softmax_linear", x, {.out_features = 10}), 10);
  return b.Finish(entry.description);
}

// A small CNN for 28 x 28 grey images (Fashion-MNIST, MNIST), sized so that
// four CPU ranks train it in seconds and its gradient (0.83 MB) is worth
// sending over 100 Mb/s:
//
//   1x28x28 -conv1 3x3x16 pad 1, relu-> -pool1 2x2-> 16x14x14
//   -conv2 3x3x32 pad 1, relu-> -pool2 2x2-> 32x7x7 -fc1 1568->128 relu-> -fc2 128->10
//
// Params: 16*9 + 16 = 160, 32*16*9 + 32 = 4,640, 1568*128 + 128 = 200,832,
// 128*10 + 10 = 1,290: 206,922.
ModelGraph BuildFashionMnistCnn(const ZooEntry& entry) {
  GraphBuilder b(entry.name);
  const PoolSpec pool = PoolSpec::Square(2, 2);
  Tensor x = b.Input("image", {1, 28, 28});
  x = b.Relu("conv1.relu", b.Conv2d("conv1", x, ConvSpec::Square(16, 3, 1, 1)));
  x = b.MaxPool("pool1", x, pool);
  x = b.Relu("conv2.relu", b.Conv2d("conv2", x, ConvSpec::Square(32, 3, 1, 1)));
  x = b.MaxPool("pool2", x, pool);
  x = b.Flatten("flatten", x);
  x = b.Relu("fc1.relu", b.Dense("fc1", x, {.out_features = 128}));
  b.SoftmaxCrossEntropy("loss", b.Dense("fc2", x, {.out_features = 10}), 10);
  return b.Finish(entry.description);
}

}  // namespace

std::vector<ZooRecipe> SmallZoo() {
  return {
      {{"mnist-mlp", "MNIST multilayer perceptron 784-500-10 with ReLU (LeCun et al. 1998 data; "
                     "500 hidden units as in the Theano MLP tutorial)"},
       BuildMnistMlp},
      {{"cifar10-cnn", "TensorFlow CIFAR-10 tutorial CNN on 24x24 crops (tensorflow/models "
                       "tutorials/image/cifar10/cifar10.py)"},
       BuildCifar10Cnn},
      {{"fashion-mnist-cnn", "Small CNN for 28x28 grey images (Fashion-MNIST): two 3x3 convs of "
                             "16 and 32 channels with 2x2 max pools, a 128-unit dense layer"},
       BuildFashionMnistCnn},
  };
}

}  // namespace dtsim::models
