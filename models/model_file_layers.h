// The layer types of model files (docs/model_file.md): for each type, its
// keys, how many inputs it reads and the GraphBuilder call it makes.
// Internal to models/; model_file.cc reads the document around them.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/yaml_reader.h"
#include "models/graph_builder.h"

namespace dtsim::models {

inline constexpr const char* kLossLayerType = "softmax_xent";

// One layer entry being read: typed access to its keys, and its inputs.
// Every getter throws UserError at the key (or at the layer for a missing
// required key) saying what was expected. REQUIRES: every key read is one of
// the keys `layer` was checked against.
class LayerEntry {
 public:
  LayerEntry(YamlMap layer, std::vector<Tensor> inputs)
      : layer_(std::move(layer)), inputs_(std::move(inputs)) {}

  const std::vector<Tensor>& inputs() const { return inputs_; }
  const Tensor& input() const { return inputs_.at(0); }

  // Required keys: Int, Pair, ShapeOf. Optional keys: the ...Or getters,
  // which return `fallback` when the key is absent.
  std::int64_t Int(const char* key, std::int64_t min) const {
    return layer_.Require(key, "an integer >= " + std::to_string(min))
        .AsInt64(min, kMaxModelCount);
  }
  std::int64_t IntOr(const char* key, std::int64_t fallback, std::int64_t min) const {
    const std::optional<YamlValue> v = layer_.Get(key);
    return v ? v->AsInt64(min, INT32_MAX) : fallback;
  }
  std::pair<int, int> Pair(const char* key, int min) const {
    return layer_.Require(key, "an integer or a [height, width] pair").AsIntPair(min);
  }
  std::pair<int, int> PairOr(const char* key, std::pair<int, int> fallback, int min) const {
    const std::optional<YamlValue> v = layer_.Get(key);
    return v ? v->AsIntPair(min) : fallback;
  }
  // An optional positive number.
  double NumberOr(const char* key, double fallback) const {
    const std::optional<YamlValue> v = layer_.Get(key);
    if (!v) return fallback;
    const double x = v->AsNumber();
    if (!(x > 0) || !std::isfinite(x)) v->Fail("expected a positive number, got " + v->Describe());
    return x;
  }
  bool BoolOr(const char* key, bool fallback) const {
    const std::optional<YamlValue> v = layer_.Get(key);
    return v ? v->AsBool() : fallback;
  }
  Shape ShapeOf(const char* key) const {
    return layer_.Require(key, "a list of dimensions").AsInt64List(1, kMaxModelCount);
  }
  // Checks an optional dropout rate; FLOPs do not depend on it.
  void CheckRate(const char* key) const {
    const std::optional<YamlValue> v = layer_.Get(key);
    if (!v) return;
    const double rate = v->AsNumber();
    if (rate < 0 || rate >= 1) v->Fail("expected a rate in [0, 1), got " + v->Describe());
  }

 private:
  YamlMap layer_;
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

// Every layer type, in the order docs/model_file.md lists them.
const std::vector<LayerType>& LayerTypes();
// The `type` of each of LayerTypes(), in the same order.
std::vector<std::string> LayerTypeNames();

}  // namespace dtsim::models
