// LoadModelFile / ParseModelYaml: the user's own models, in the YAML format
// of docs/model_file.md. Layers give shapes and hyper-parameters only;
// GraphBuilder derives every FLOP and byte.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/input_file.h"
#include "common/yaml_reader.h"
#include "models/graph_builder.h"
#include "models/model_file.h"
#include "models/model_file_layers.h"
#include "models/onnx_import.h"
#include "models/zoo.h"

namespace dtsim::models {
namespace {

constexpr const char* kInputName = "input";  // the op made from top-level `input:`

// Runs `step` and reports a location-less UserError from GraphBuilder at `at`.
template <typename Step>
auto Located(const YamlValue& at, Step step) {
  try {
    return step();
  } catch (const UserError& e) {
    if (!e.where().file.empty()) throw;
    at.Fail(e.message(), e.hint());
  }
}

// Reads one document into a ModelGraph. Layers are built as they are read,
// so a layer's `inputs` can only name layers above it.
class ModelFileParser {
 public:
  ModelFileParser(std::string filename, std::string default_name)
      : filename_(std::move(filename)), default_name_(std::move(default_name)) {}

  ModelGraph Parse(const YamlValue& root) {
    const YamlMap m = root.AsMap({"name", "description", "input", "layers", "transformer"});
    const std::optional<YamlValue> name_value = m.Get("name");
    const std::string name = name_value ? name_value->AsString() : default_name_;
    const std::optional<YamlValue> description_value = m.Get("description");
    const std::string description = description_value ? description_value->AsString() : "";
    if (const std::optional<YamlValue> transformer = m.Get("transformer")) {
      for (const char* key : {"input", "layers"}) {
        if (const std::optional<YamlValue> v = m.Get(key)) {
          v->Fail("cannot be combined with 'transformer'",
                  "'transformer' describes the whole model; remove 'input' and 'layers'");
        }
      }
      return ParseTransformer(*transformer, name, description);
    }
    return ParseLayers(m, name, description);
  }

 private:
  ModelGraph ParseTransformer(const YamlValue& v, const std::string& name,
                              const std::string& description) {
    const TransformerConfig c = ReadTransformerConfig(v);
    ModelGraph g = Located(v, [&] { return BuildTransformer(c, name); });
    if (!description.empty()) g.set_description(description);
    return g;
  }

  ModelGraph ParseLayers(const YamlMap& m, const std::string& name,
                         const std::string& description) {
    GraphBuilder b(name);
    if (const std::optional<YamlValue> input = m.Get("input")) {
      const Shape shape = input->AsInt64List(1, kMaxModelCount);
      Remember(kInputName, Located(*input, [&] { return b.Input(kInputName, shape); }));
    }
    const YamlValue layers = m.Require("layers", "a list of layers");
    if (!layers.IsSequence() || layers.node().size() == 0) {
      layers.Fail("expected a non-empty list of layers, got " + layers.Describe(),
                  "write each layer as '- {name: fc, type: dense, out_features: 10}'");
    }
    const std::vector<YamlValue> items = layers.AsSequence();
    std::string last_type;
    for (std::size_t i = 0; i < items.size(); ++i) last_type = ParseLayer(b, items[i], i + 1);
    if (last_type != kLossLayerType) {
      items.back().Fail("the last layer must be the loss (type " + std::string(kLossLayerType) +
                            "), got " + last_type,
                        "backward starts at the loss; end 'layers' with '- {type: softmax_xent}'");
    }
    return b.Finish(description.empty() ? "read from " + filename_ : description);
  }

  // Reads layer `index` (1-based) and returns its type. The keys a layer may
  // hold depend on its type, so the type is read first.
  std::string ParseLayer(GraphBuilder& b, const YamlValue& v, std::size_t index) {
    const std::vector<std::string> type_names = LayerTypeNames();
    const LayerType& lt =
        LayerTypes()[v.RequireSelector("type", "a layer type such as conv2d, dense or relu")
                         .AsChoice(type_names, "layer type")];
    std::vector<std::string> keys = {"name", "type"};
    if (lt.max_inputs > 0) keys.push_back("inputs");
    keys.insert(keys.end(), lt.keys.begin(), lt.keys.end());
    const YamlMap m = v.AsMap(keys);
    const std::optional<YamlValue> name_value = m.Get("name");
    const std::string name =
        name_value ? name_value->AsString() : lt.type + "_" + std::to_string(index);
    const std::string what = "layer '" + name + "' (" + lt.type + ")";

    const LayerEntry entry(m, Inputs(m, lt, what));
    Remember(name, Located(v, [&] { return lt.build(b, name, entry); }));
    return lt.type;
  }

  // The layer's inputs: the names under `inputs`, else the previous layer.
  std::vector<Tensor> Inputs(const YamlMap& m, const LayerType& lt,
                             const std::string& what) const {
    std::vector<Tensor> inputs;
    const std::optional<YamlValue> list = lt.max_inputs > 0 ? m.Get("inputs") : std::nullopt;
    if (!list) {
      if (lt.min_inputs == 0) return inputs;
      if (lt.min_inputs > 1) {
        m.self().Fail(what + " needs 'inputs' listing the layers it reads",
                      "e.g. inputs: [conv1, shortcut]");
      }
      if (!previous_) {
        m.self().Fail(what + " has no input: it is the first layer",
                      "add a top-level 'input: [C, H, W]' or start with a layer of type input");
      }
      return {*previous_};
    }
    const std::string expected = lt.max_inputs == lt.min_inputs
                                     ? std::to_string(lt.min_inputs)
                                     : "at least " + std::to_string(lt.min_inputs);
    const std::size_t count = list->IsSequence() ? list->node().size() : 0;
    if (!list->IsSequence() || count < lt.min_inputs || count > lt.max_inputs) {
      list->Fail("expected a list of " + expected + " layer names, got " + list->Describe());
    }
    for (const YamlValue& item : list->AsSequence()) {
      const std::string in = item.AsString();
      auto it = tensors_.find(in);
      if (it == tensors_.end()) {
        item.Fail(what + " reads '" + in + "', which is not an earlier layer",
                  "inputs name layers defined above this one (or 'input')");
      }
      inputs.push_back(it->second);
    }
    return inputs;
  }

  void Remember(const std::string& name, const Tensor& t) {
    tensors_[name] = t;
    previous_ = t;
  }

  std::string filename_;
  std::string default_name_;
  std::map<std::string, Tensor> tensors_;
  std::optional<Tensor> previous_;
};

}  // namespace

ModelGraph ParseModelYaml(const std::string& text, const std::string& filename) {
  const YamlValue root = YamlValue::Root(ParseYamlDocument(text, filename), filename);
  return ModelFileParser(filename, std::filesystem::path(filename).stem().string()).Parse(root);
}

ModelGraph LoadModelFile(const std::string& path) {
  if (IsOnnxPath(path)) return LoadOnnxModel(path);
  return ParseModelYaml(ReadRegularFile(path, "model file"), path);
}

TransformerConfig ReadTransformerConfig(const YamlValue& v) {
  const YamlMap m = v.AsMap({"layers", "hidden", "heads", "sequence", "vocab", "ffn_hidden",
                             "max_positions", "tied_embeddings", "causal", "mlp", "norm",
                             "positions", "kv_heads", "bias", "dropout", "attention", "experts",
                             "top_k", "expert_ffn_hidden", "shared_experts", "dense_layers",
                             "capacity_factor", "expert_load_skew"});
  TransformerConfig t;
  if (auto x = m.Get("layers")) t.layers = x->AsInt(1);
  if (auto x = m.Get("hidden")) t.hidden = x->AsInt(1);
  if (auto x = m.Get("heads")) t.heads = x->AsInt(1);
  if (auto x = m.Get("sequence")) t.sequence = x->AsInt(1);
  if (auto x = m.Get("vocab")) t.vocab = x->AsInt(1);
  // 0 keeps the builder's default (4 x hidden; = sequence).
  if (auto x = m.Get("ffn_hidden")) t.ffn_hidden = x->AsInt(0);
  if (auto x = m.Get("max_positions")) t.max_positions = x->AsInt(0);
  if (auto x = m.Get("tied_embeddings")) t.tied_embeddings = x->AsBool();
  if (auto x = m.Get("causal")) t.causal = x->AsBool();
  // Enumerations in the order of their enum classes (models/zoo.h).
  if (auto x = m.Get("mlp"))
    t.mlp = static_cast<MlpKind>(x->AsChoice({"gelu", "swiglu", "geglu"}, "MLP"));
  if (auto x = m.Get("norm"))
    t.norm = static_cast<NormKind>(x->AsChoice({"layernorm", "rmsnorm"}, "norm"));
  if (auto x = m.Get("positions"))
    t.positions = static_cast<PositionKind>(x->AsChoice({"learned", "rotary"}, "positions"));
  if (auto x = m.Get("kv_heads")) t.kv_heads = x->AsInt(0);
  if (auto x = m.Get("bias")) t.bias = x->AsBool();
  if (auto x = m.Get("dropout")) t.dropout = x->AsBool();
  if (auto x = m.Get("attention")) {
    // eager, or a fused kernel: flash (the framework's or the GPU's choice)
    // or one by name (models/op.h, AttentionKernel).
    const int k = x->AsChoice({"eager", "flash", "fa2", "fa3", "cudnn", "sdpa"}, "attention");
    t.attention = k == 0 ? AttentionKind::kEager : AttentionKind::kFlash;
    t.attention_kernel = k == 0 ? AttentionKernel::kDefault : static_cast<AttentionKernel>(k - 1);
  }
  if (auto x = m.Get("experts")) t.experts = x->AsInt(0);
  if (auto x = m.Get("top_k")) t.top_k = x->AsInt(1);
  if (auto x = m.Get("expert_ffn_hidden")) t.expert_ffn_hidden = x->AsInt(0);
  if (auto x = m.Get("shared_experts")) t.shared_experts = x->AsInt(0);
  if (auto x = m.Get("dense_layers")) t.dense_layers = x->AsInt(0);
  if (auto x = m.Get("capacity_factor")) t.capacity_factor = x->AsNumber();
  if (auto x = m.Get("expert_load_skew")) t.expert_load_skew = x->AsNumber();
  if (t.experts == 0) {
    for (const char* key : {"top_k", "expert_ffn_hidden", "shared_experts", "dense_layers",
                            "capacity_factor", "expert_load_skew"})
      if (auto x = m.Get(key))
        x->Fail(std::string(key) + " describes mixture-of-experts layers, and experts is 0 (dense MLPs)");
  }
  if (t.hidden % t.heads != 0) {
    const YamlValue at = m.Get("heads") ? *m.Get("heads") : v;
    at.Fail("hidden (" + std::to_string(t.hidden) + ") must be divisible by heads (" +
            std::to_string(t.heads) + ")");
  }
  if (t.max_positions != 0 && t.max_positions < t.sequence) {
    m.Require("max_positions")
        .Fail("max_positions (" + std::to_string(t.max_positions) +
              ") is shorter than sequence (" + std::to_string(t.sequence) + ")");
  }
  // The builder has the last word on what is consistent; its errors are
  // reported at the transformer mapping.
  Located(v, [&] { return BuildTransformer(t); });
  return t;
}

}  // namespace dtsim::models
