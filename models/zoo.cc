// The zoo registry: the families of zoo_builders.h, joined in a fixed order.
#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "models/zoo.h"
#include "models/zoo_builders.h"

namespace dtsim::models {
namespace {

const std::vector<ZooRecipe>& Recipes() {
  static const std::vector<ZooRecipe> recipes = [] {
    std::vector<ZooRecipe> all;
    for (auto family : {SmallZoo, ClassicZoo, ResNetZoo, InceptionZoo, TransformerZoo}) {
      for (ZooRecipe& r : family()) all.push_back(std::move(r));
    }
    return all;
  }();
  return recipes;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::vector<ZooEntry> ZooEntries() {
  std::vector<ZooEntry> entries;
  for (const ZooRecipe& r : Recipes()) entries.push_back(r.entry);
  return entries;
}

ModelGraph BuildZooModel(std::string_view name) {
  const std::string key = Lower(name);
  std::string known;
  for (const ZooRecipe& r : Recipes()) {
    if (r.entry.name == key) return r.build(r.entry);
    known += (known.empty() ? "" : ", ") + r.entry.name;
  }
  throw UserError("unknown model '" + std::string(name) + "'",
                  "built-in models: " + known +
                      "; or describe your own in a model file (see docs/model_file.md)");
}

ModelGraph BuildModel(std::string_view name) {
  const bool is_file = name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".onnx");
  return is_file ? LoadModelFile(std::string(name)) : BuildZooModel(name);
}

}  // namespace dtsim::models
