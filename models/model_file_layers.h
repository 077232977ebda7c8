// The layer types of model files (models/MODEL_FILE.md): for each type, its
// keys, how many inputs it reads and the GraphBuilder call it makes.
// Internal to models/; model_file.cc reads the document around them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "models/graph_builder.h"
#include "models/yaml_reader.h"

namespace dtsim::models {

inline constexpr const char* kLossLayerType = "softmax_xent";

// One layer entry being read: typed access to its keys, and its inputs.
// Every getter throws UserError at the key (or at the layer for a missing
// required key), naming the layer (`what`) and what was expected.
// `yaml` and `node` must outlive the entry.
class LayerEntry {
 public:
  LayerEntry(const YamlReader& yaml, const YAML::Node& node, std::string what,
             std::vector<Tensor> inputs)
      : yaml_(yaml), node_(node), what_(std::move(what)), inputs_(std::move(inputs)) {}

  const std::vector<Tensor>& inputs() const { return inputs_; }
  const Tensor& input() const { return inputs_.at(0); }

  // Required keys: Int, Pair, ShapeOf. Optional keys: the ...Or getters,
  // which return `fallback` when the key is absent.
  std::int64_t Int(const char* key, std::int64_t min) const {
    return yaml_.Int(Required(key, "an integer >= " + std::to_string(min)), Name(key), min,
                     INT64_MAX);
  }
  std::int64_t IntOr(const char* key, std::int64_t fallback, std::int64_t min) const {
    return Has(key) ? yaml_.Int(node_[key], Name(key), min) : fallback;
  }
  std::pair<int, int> Pair(const char* key, int min) const {
    return yaml_.IntPair(Required(key, "an integer or a [height, width] pair"), Name(key), min);
  }
  std::pair<int, int> PairOr(const char* key, std::pair<int, int> fallback, int min) const {
    return Has(key) ? yaml_.IntPair(node_[key], Name(key), min) : fallback;
  }
  bool BoolOr(const char* key, bool fallback) const {
    return Has(key) ? yaml_.Bool(node_[key], Name(key)) : fallback;
  }
  Shape ShapeOf(const char* key) const {
    return yaml_.ShapeOf(Required(key, "a list of dimensions"), Name(key));
  }
  // Checks an optional dropout rate; FLOPs do not depend on it.
  void CheckRate(const char* key) const {
    if (!Has(key)) return;
    const double rate = yaml_.Number(node_[key], Name(key));
    if (rate < 0 || rate >= 1) yaml_.Fail(node_[key], Name(key) + " must be in [0, 1)");
  }

 private:
  bool Has(const char* key) const { return node_[key].IsDefined(); }
  std::string Name(const char* key) const { return what_ + ": '" + key + "'"; }
  YAML::Node Required(const char* key, const std::string& expected) const {
    return yaml_.Required(node_, key, what_, expected);
  }

  const YamlReader& yaml_;
  const YAML::Node& node_;
  std::string what_;
  std::vector<Tensor> inputs_;
};

using BuildFn = std::function<Tensor(GraphBuilder&, const std::string&, const LayerEntry&)>;

struct LayerType {
  std::string type;
  std::vector<std::string> keys;  // beyond name, type and inputs
  // Inputs read. A layer without `inputs` reads the previous layer when
  // min_inputs is 1, nothing when 0; with 2 or more `inputs` is required.
  std::size_t min_inputs = 1;
  std::size_t max_inputs = 1;
  BuildFn build;  // (builder, layer name, entry) -> output
};

// Every layer type, in the order MODEL_FILE.md lists them.
const std::vector<LayerType>& LayerTypes();
// "input, conv2d, ...", for hints.
std::string LayerTypeNames();

}  // namespace dtsim::models
