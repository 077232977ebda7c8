// For tests: ONNX models written op by op, as torch.onnx.export writes
// torchvision's ResNet-50 (opset 13: Conv with its weight and no bias,
// BatchNormalization, Relu, MaxPool, Add, GlobalAveragePool, Flatten, Gemm
// with transB = 1). Templates over the message types, so that the same
// generator fills dtsim's own schema (models/onnx_model.proto) and the one
// Debian's libonnx-dev generates from ONNX's onnx.proto
// (models/onnx_fixture_writer.cc): a file the second writes and the first
// reads checks dtsim's field numbers against ONNX's.
//
// Weights are written with their dimensions only (no values): the importer
// never reads values.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dtsim::models::onnx_test {

template <typename Model>
class OnnxWriter {
 public:
  using Graph = std::remove_reference_t<decltype(*std::declval<Model>().mutable_graph())>;
  using Node = std::remove_reference_t<decltype(*std::declval<Graph>().add_node())>;

  explicit OnnxWriter(Model* model) : model_(model), graph_(model->mutable_graph()) {
    model_->set_ir_version(8);
    model_->set_producer_name("dtsim onnx_test_models.h");
    auto* opset = model_->add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    graph_->set_name("test");
  }

  // An input of elem_type (1 float, 7 int64) with a symbolic batch "N" then
  // `dims`.
  void Input(const std::string& name, const std::vector<std::int64_t>& dims, int elem_type = 1) {
    auto* in = graph_->add_input();
    in->set_name(name);
    auto* t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    t->mutable_shape()->add_dim()->set_dim_param("N");
    for (std::int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }

  void Output(const std::string& name) { graph_->add_output()->set_name(name); }

  // A float initializer of `dims` (no values).
  std::string Weight(const std::string& name, const std::vector<std::int64_t>& dims) {
    auto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(1);
    for (std::int64_t d : dims) t->add_dims(d);
    return name;
  }

  // An int64 initializer holding `values` (a shape for Reshape).
  std::string Int64s(const std::string& name, const std::vector<std::int64_t>& values) {
    auto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(7);
    t->add_dims(static_cast<std::int64_t>(values.size()));
    for (std::int64_t v : values) t->add_int64_data(v);
    return name;
  }

  Node* Add(const std::string& op, const std::string& name, const std::vector<std::string>& in,
            const std::string& out) {
    Node* n = graph_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }

  static void SetInt(Node* n, const std::string& name, std::int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(decltype(a->type())(2));  // INT
    a->set_i(v);
  }
  static void SetInts(Node* n, const std::string& name, const std::vector<std::int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(decltype(a->type())(7));  // INTS
    for (std::int64_t x : v) a->add_ints(x);
  }

  // Conv without bias, square kernel k, stride s, padding p; BatchNorm.
  std::string ConvBn(const std::string& name, const std::string& x, std::int64_t in_c,
                     std::int64_t out_c, int k, int s, int p) {
    Node* c = Add("Conv", name + ".conv", {x, Weight(name + ".conv.weight", {out_c, in_c, k, k})},
                  name + ".conv.out");
    SetInts(c, "kernel_shape", {k, k});
    SetInts(c, "strides", {s, s});
    SetInts(c, "pads", {p, p, p, p});
    SetInts(c, "dilations", {1, 1});
    SetInt(c, "group", 1);
    Add("BatchNormalization", name + ".bn",
        {name + ".conv.out", Weight(name + ".bn.weight", {out_c}),
         Weight(name + ".bn.bias", {out_c}), Weight(name + ".bn.running_mean", {out_c}),
         Weight(name + ".bn.running_var", {out_c})},
        name + ".bn.out");
    return name + ".bn.out";
  }

  std::string Relu(const std::string& name, const std::string& x) {
    Add("Relu", name, {x}, name + ".out");
    return name + ".out";
  }

 private:
  Model* model_;
  Graph* graph_;
};

// torchvision's resnet50 (v1.5), 224 x 224, as its ONNX export lays it out;
// the output "logits" (1000).
template <typename Model>
void WriteResNet50(Model* model) {
  OnnxWriter<Model> w(model);
  w.Input("image", {3, 224, 224});
  std::string x = w.Relu("relu", w.ConvBn("conv1", "image", 3, 64, 7, 2, 3));
  auto* pool = w.Add("MaxPool", "maxpool", {x}, "maxpool.out");
  w.SetInts(pool, "kernel_shape", {3, 3});
  w.SetInts(pool, "strides", {2, 2});
  w.SetInts(pool, "pads", {1, 1, 1, 1});
  x = "maxpool.out";
  std::int64_t channels = 64;
  const int blocks[4] = {3, 4, 6, 3};
  std::int64_t width = 64;
  for (int stage = 0; stage < 4; ++stage, width *= 2) {
    for (int i = 0; i < blocks[stage]; ++i) {
      const int stride = stage > 0 && i == 0 ? 2 : 1;
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      std::string h = w.Relu(p + ".relu1", w.ConvBn(p + ".1", x, channels, width, 1, 1, 0));
      h = w.Relu(p + ".relu2", w.ConvBn(p + ".2", h, width, width, 3, stride, 1));
      h = w.ConvBn(p + ".3", h, width, 4 * width, 1, 1, 0);
      std::string identity = x;
      if (stride != 1 || channels != 4 * width) {
        identity = w.ConvBn(p + ".downsample", x, channels, 4 * width, 1, stride, 0);
      }
      w.Add("Add", p + ".add", {h, identity}, p + ".add.out");
      x = w.Relu(p + ".relu3", p + ".add.out");
      channels = 4 * width;
    }
  }
  w.Add("GlobalAveragePool", "avgpool", {x}, "avgpool.out");
  auto* flat = w.Add("Flatten", "flatten", {"avgpool.out"}, "flatten.out");
  w.SetInt(flat, "axis", 1);
  auto* fc = w.Add("Gemm", "fc",
                   {"flatten.out", w.Weight("fc.weight", {1000, 2048}), w.Weight("fc.bias", {1000})},
                   "logits");
  w.SetInt(fc, "transB", 1);
  w.Output("logits");
}

}  // namespace dtsim::models::onnx_test
