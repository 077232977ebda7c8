// The zoo's families of models. Each family file lists its models with their
// names, descriptions (naming the source of the architecture) and builders;
// zoo.cc joins the families into the registry. Internal to models/.
#pragma once

#include <functional>
#include <vector>

#include "models/graph.h"
#include "models/zoo.h"

namespace dtsim::models {

struct ZooRecipe {
  ZooEntry entry;
  // Builds the model; the graph takes its name and description from `entry`.
  std::function<ModelGraph(const ZooEntry& entry)> build;
};

std::vector<ZooRecipe> SmallZoo();        // zoo_small.cc: mnist-mlp, cifar10-cnn
std::vector<ZooRecipe> ClassicZoo();      // zoo_classic.cc: alexnet, vgg16
std::vector<ZooRecipe> ResNetZoo();       // zoo_resnet.cc: resnet50/101/152
std::vector<ZooRecipe> InceptionZoo();    // zoo_inception.cc: inception-v3
std::vector<ZooRecipe> TransformerZoo();  // zoo_transformers.cc: bert-*, gpt2*, gpt3-*

// BERT pre-training model (post-LN encoder with MLM and NSP heads) of the
// sizes in `config`; bert.cc.
ModelGraph BuildBert(const TransformerConfig& config, const ZooEntry& entry);

}  // namespace dtsim::models
