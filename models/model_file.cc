// LoadModelFile / ParseModelYaml: the user's own models, in the YAML format
// of models/MODEL_FILE.md. Layers give shapes and hyper-parameters only;
// GraphBuilder derives every FLOP and byte.
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "models/graph_builder.h"
#include "models/model_file_layers.h"
#include "models/yaml_reader.h"
#include "models/zoo.h"

namespace dtsim::models {
namespace {

constexpr const char* kInputName = "input";  // the op made from top-level `input:`

// Runs `step` and gives a location-less UserError from GraphBuilder the
// location of `at`.
template <typename Step>
auto Located(const YamlReader& yaml, const YAML::Node& at, Step step) {
  try {
    return step();
  } catch (const UserError& e) {
    if (!e.where().file.empty()) throw;
    throw UserError(yaml.Where(at), e.message(), e.hint());
  }
}

// Reads one document into a ModelGraph. Layers are built as they are read,
// so a layer's `inputs` can only name layers above it.
class ModelFileParser {
 public:
  ModelFileParser(const YamlReader& yaml, std::string default_name)
      : yaml_(yaml), default_name_(std::move(default_name)) {}

  ModelGraph Parse(const YAML::Node& root) {
    yaml_.RequireMap(root, "a model file");
    yaml_.CheckKeys(root, {"name", "description", "input", "layers", "transformer"},
                    "the model file");
    const std::string name =
        root["name"].IsDefined() ? yaml_.String(root["name"], "'name'") : default_name_;
    const std::string description =
        root["description"].IsDefined() ? yaml_.String(root["description"], "'description'")
                                        : "";
    if (root["transformer"].IsDefined()) {
      for (const char* key : {"input", "layers"}) {
        if (root[key].IsDefined()) {
          yaml_.Fail(root[key], std::string("'") + key + "' cannot be combined with 'transformer'",
                     "'transformer' describes the whole model; remove 'input' and 'layers'");
        }
      }
      return ParseTransformer(root["transformer"], name, description);
    }
    return ParseLayers(root, name, description);
  }

 private:
  ModelGraph ParseTransformer(const YAML::Node& node, const std::string& name,
                              const std::string& description) {
    const std::string what = "'transformer'";
    yaml_.RequireMap(node, what);
    yaml_.CheckKeys(node,
                    {"layers", "hidden", "heads", "sequence", "vocab", "ffn_hidden",
                     "max_positions", "tied_embeddings", "causal"},
                    what);
    // Absent keys keep TransformerConfig's defaults (as in scenario files).
    TransformerConfig c;
    auto read = [&](const char* key, int& field, int min) {
      if (node[key].IsDefined()) {
        field = static_cast<int>(yaml_.Int(node[key], std::string("transformer.") + key, min));
      }
    };
    read("layers", c.layers, 1);
    read("hidden", c.hidden, 1);
    read("heads", c.heads, 1);
    read("sequence", c.sequence, 1);
    read("vocab", c.vocab, 1);
    read("ffn_hidden", c.ffn_hidden, 0);
    read("max_positions", c.max_positions, 0);
    if (node["tied_embeddings"].IsDefined()) {
      c.tied_embeddings = yaml_.Bool(node["tied_embeddings"], "transformer.tied_embeddings");
    }
    if (node["causal"].IsDefined()) c.causal = yaml_.Bool(node["causal"], "transformer.causal");
    ModelGraph g = Located(yaml_, node, [&] { return BuildTransformer(c, name); });
    if (!description.empty()) g.set_description(description);
    return g;
  }

  ModelGraph ParseLayers(const YAML::Node& root, const std::string& name,
                         const std::string& description) {
    GraphBuilder b(name);
    if (root["input"].IsDefined()) {
      const Shape shape = yaml_.ShapeOf(root["input"], "'input'");
      Remember(kInputName,
               Located(yaml_, root["input"], [&] { return b.Input(kInputName, shape); }));
    }
    const YAML::Node layers =
        yaml_.Required(root, "layers", "the model file", "a list of layers");
    if (!layers.IsSequence() || layers.size() == 0) {
      yaml_.Fail(layers, "'layers' must be a non-empty list of layers",
                 "write each layer as '- {name: fc, type: dense, out_features: 10}'");
    }
    std::string last_type;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      last_type = ParseLayer(b, layers[i], i + 1);
    }
    if (last_type != kLossLayerType) {
      yaml_.Fail(layers[layers.size() - 1],
                 "the last layer must be the loss (type " + std::string(kLossLayerType) +
                     "), got " + last_type,
                 "backward starts at the loss; end 'layers' with '- {type: softmax_xent}'");
    }
    return b.Finish(description.empty() ? "read from " + yaml_.filename() : description);
  }

  // Reads layer `index` (1-based) and returns its type.
  std::string ParseLayer(GraphBuilder& b, const YAML::Node& node, std::size_t index) {
    const std::string position = "layer " + std::to_string(index);
    yaml_.RequireMap(node, position);
    const YAML::Node type_node =
        yaml_.Required(node, "type", position, "a layer type: " + LayerTypeNames());
    const std::string type = yaml_.String(type_node, position + ": 'type'");
    const LayerType* lt = nullptr;
    for (const LayerType& t : LayerTypes()) lt = t.type == type ? &t : lt;
    if (lt == nullptr) {
      yaml_.Fail(type_node, "unknown layer type '" + type + "'",
                 "known types: " + LayerTypeNames());
    }
    const std::string name = node["name"].IsDefined()
                                 ? yaml_.String(node["name"], position + ": 'name'")
                                 : type + "_" + std::to_string(index);
    const std::string what = "layer '" + name + "' (" + type + ")";
    std::vector<std::string> keys = {"name", "type"};
    if (lt->max_inputs > 0) keys.push_back("inputs");
    keys.insert(keys.end(), lt->keys.begin(), lt->keys.end());
    yaml_.CheckKeys(node, keys, what);

    const LayerEntry entry(yaml_, node, what, Inputs(node, *lt, what));
    Remember(name, Located(yaml_, node, [&] { return lt->build(b, name, entry); }));
    return type;
  }

  // The layer's inputs: the names under `inputs`, else the previous layer.
  std::vector<Tensor> Inputs(const YAML::Node& node, const LayerType& lt,
                             const std::string& what) const {
    const YAML::Node list = node["inputs"];
    std::vector<Tensor> inputs;
    if (!list.IsDefined()) {
      if (lt.min_inputs == 0) return inputs;
      if (lt.min_inputs > 1) {
        yaml_.Fail(node, what + " needs 'inputs' listing the layers it reads",
                   "e.g. inputs: [conv1, shortcut]");
      }
      if (!previous_) {
        yaml_.Fail(node, what + " has no input: it is the first layer",
                   "add a top-level 'input: [C, H, W]' or start with a layer of type input");
      }
      return {*previous_};
    }
    const std::string expected = lt.max_inputs == lt.min_inputs
                                     ? std::to_string(lt.min_inputs)
                                     : "at least " + std::to_string(lt.min_inputs);
    if (!list.IsSequence() || list.size() < lt.min_inputs || list.size() > lt.max_inputs) {
      yaml_.Fail(list, what + ": 'inputs' must be a list of " + expected + " layer names");
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string in = yaml_.String(list[i], what + ": input");
      auto it = tensors_.find(in);
      if (it == tensors_.end()) {
        yaml_.Fail(list[i], what + " reads '" + in + "', which is not an earlier layer",
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

  const YamlReader& yaml_;
  std::string default_name_;
  std::map<std::string, Tensor> tensors_;
  std::optional<Tensor> previous_;
};

}  // namespace

ModelGraph ParseModelYaml(const std::string& text, const std::string& filename) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw UserError(SourceLocation{filename, e.mark.line + 1, e.mark.column + 1},
                    "invalid YAML: " + e.msg);
  }
  const YamlReader yaml(filename);
  return ModelFileParser(yaml, std::filesystem::path(filename).stem().string()).Parse(root);
}

ModelGraph LoadModelFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw UserError(SourceLocation{path, 0, 0}, "cannot open model file '" + path + "'",
                    "check the path; model files are described in models/MODEL_FILE.md");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParseModelYaml(text.str(), path);
}

}  // namespace dtsim::models
