// The ONNX importer's state, shared by the files that hold its parts:
// onnx_import.cc (graph walk, values, constants), onnx_import_layers.cc
// (layers and views) and onnx_import_patterns.cc (decomposed LayerNorm,
// GELU, SiLU, masked softmax, position tables, recurrent layers).
// Internal to models/; the public interface is models/onnx_import.h.
//
// Every ONNX value is either a constant (OnnxConst: weights, shapes and
// whatever is computed from them alone) or an activation (Act: computed
// from the model's input). Exporters write batch-1 graphs whose shapes are
// numbers, so an activation carries its full ONNX dimensions and which of
// them holds the batch; dtsim's tensor is the per-sample part.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/graph_builder.h"
#include "models/onnx_constants.h"
#include "models/onnx_model.pb.h"

namespace dtsim::models::onnx_import {

namespace onnx = dtsim::onnx_format;

// TensorProto.DataType (onnx.proto).
constexpr int kFloat = 1, kUint8 = 2, kInt8 = 3, kInt32 = 6, kInt64 = 7, kBool = 9,
              kFloat16 = 10, kDouble = 11, kBfloat16 = 16;

inline bool IsFloatType(int t) {
  return t == kFloat || t == kFloat16 || t == kDouble || t == kBfloat16;
}

// An activation. Its per-sample shape is `dims` without the batch axis when
// that axis stands alone (size 1 at batch 1); when the batch was merged into
// another axis by a reshape (PyTorch's attention views (S, B*A, D)), every
// axis is per sample.
struct Act {
  Tensor t;                        // dtsim's tensor holding the elements
  std::vector<std::int64_t> dims;  // the ONNX dimensions at batch 1
  std::size_t batch_axis = 0;
  bool batch_alone = true;
  // The per-sample shape is t's with its last two axes swapped (K^T of
  // attention): only a MatMul reading it as its second input, or a
  // Transpose swapping back, may read it.
  bool key_transposed = false;
  // Multiplied by this (attention's 1/sqrt(D)) and, when causal, masked to
  // j <= i: both pending until a Softmax takes them.
  double scale = 1.0;
  bool causal = false;

  Shape SampleShape() const;
};

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string filename);
  ModelGraph Run();

 private:
  // onnx_import.cc: the walk, names, errors, values.
  ModelGraph Finish();
  [[noreturn]] void FailModel(const std::string& message) const;
  [[noreturn]] void Fail(const onnx::NodeProto& node, const std::string& message) const;
  std::string OpName(const onnx::NodeProto& node, const std::string& suffix = "");
  std::string UniqueName(std::string name, const std::string& tag);
  void AddInput(const onnx::ValueInfoProto& in);
  void FindLiveNodes();
  void Import(const onnx::NodeProto& node);
  bool ImportConstant(const onnx::NodeProto& node);
  OnnxConst ReadTensor(const onnx::NodeProto* node, const onnx::TensorProto& t) const;
  void CheckWeight(const onnx::NodeProto& node, const onnx::TensorProto& w) const;
  int SmallInt(const onnx::NodeProto& node, std::int64_t v, const std::string& what,
               std::int64_t lowest) const;
  // The strides and symmetric pads of a 2-D Conv or pooling window, as
  // {stride_h, stride_w, pad_h, pad_w}; refuses auto_pad other than NOTSET
  // or VALID and asymmetric padding.
  std::array<int, 4> WindowStridesAndPads(const onnx::NodeProto& node) const;
  static const onnx::AttributeProto* Attr(const onnx::NodeProto& node, const std::string& name);
  static std::int64_t Int(const onnx::NodeProto& node, const std::string& name,
                          std::int64_t fallback);
  static std::vector<std::int64_t> Ints(const onnx::NodeProto& node, const std::string& name,
                                        std::vector<std::int64_t> fallback);
  bool IsConst(const onnx::NodeProto& node, int input) const;
  bool IsAct(const onnx::NodeProto& node, int input) const;
  const OnnxConst& Const(const onnx::NodeProto& node, int input) const;
  const OnnxConst* ConstOrNull(const std::string& name) const;
  // ConstOrNull, folding a Constant node listed later (patterns look ahead).
  const OnnxConst* Ahead(const std::string& name);
  const Act& ActOf(const onnx::NodeProto& node, int input) const;
  // The activation input `input` as a dtsim tensor of its per-sample shape
  // (a pending reshape becomes a view); refused while a scale, mask or key
  // transpose is pending.
  Tensor Use(const onnx::NodeProto& node, int input);
  Tensor Materialize(const onnx::NodeProto& node, Act& a, const std::string& name);
  void SetAct(const onnx::NodeProto& node, int output, Act a);
  void SetConst(const onnx::NodeProto& node, int output, OnnxConst c);
  // An activation of `dims` (batch axis placed as a reshape of `from`
  // places it) whose elements are `t`'s.
  Act Reshaped(const onnx::NodeProto& node, const Act& from, const Tensor& t,
               std::vector<std::int64_t> dims) const;
  Act FromSample(const Act& like, const Tensor& t) const;  // same batch placement
  int SampleAxis(const onnx::NodeProto& node, const Act& a, std::int64_t axis) const;
  // The nodes reading each value (live nodes only; a graph output counts
  // as a reader with index -1).
  const std::vector<int>& Readers(const std::string& value) const;
  const onnx::NodeProto& NodeAt(int index) const { return model_.graph().node(index); }
  // The only reader of `value` when it has exactly one and it is `op`.
  const onnx::NodeProto* OnlyReader(const std::string& value, const std::string& op) const;
  void Consume(const onnx::NodeProto& node);
  // Claims the initializer `weight` for the op being built: false when an
  // embedding holds it (a tied LM head), refused when another layer does.
  bool ClaimWeight(const onnx::NodeProto& node, const std::string& weight, bool embedding);

  // onnx_import_layers.cc
  void Conv(const onnx::NodeProto& node);
  void Gemm(const onnx::NodeProto& node);
  void MatMul(const onnx::NodeProto& node);
  void DenseFromConst(const onnx::NodeProto& node, const OnnxConst& w, bool transposed);
  void Pool(const onnx::NodeProto& node);
  void Reshape(const onnx::NodeProto& node);
  void SqueezeUnsqueeze(const onnx::NodeProto& node);
  void Flatten(const onnx::NodeProto& node);
  void Transpose(const onnx::NodeProto& node);
  void SliceAct(const onnx::NodeProto& node);
  void Split(const onnx::NodeProto& node);
  void GatherAct(const onnx::NodeProto& node);
  void Concat(const onnx::NodeProto& node);
  void Add(const onnx::NodeProto& node);
  void MulDiv(const onnx::NodeProto& node);
  void Elementwise(const onnx::NodeProto& node);

  // onnx_import_patterns.cc
  bool LayerNormPattern(const onnx::NodeProto& node);
  bool GeluPattern(const onnx::NodeProto& node);
  void Sigmoid(const onnx::NodeProto& node);
  void Softmax(const onnx::NodeProto& node);
  void Where(const onnx::NodeProto& node);
  // Adds a position, token-type or patch-position table `c` to `x`.
  bool TableAdd(const onnx::NodeProto& node, int act_input, const OnnxConst& c);
  // A tensor of `shape` to read as embedding ids: the model's integer input
  // when it has that shape, else a view of `x` (only its shape is read).
  Tensor IdsOfShape(const onnx::NodeProto& node, const Tensor& x, const Shape& shape);
  void Recurrent(const onnx::NodeProto& node);
  static bool CausalMask(const OnnxConst& mask, bool masked_value, std::int64_t s);

  const onnx::ModelProto& model_;
  std::string filename_;
  GraphBuilder builder_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, Act> acts_;
  std::map<std::string, OnnxConst> consts_;
  std::map<std::string, std::vector<int>> readers_;
  std::map<std::string, int> producer_;  // value -> the live node writing it
  std::map<std::string, bool> claimed_;  // initializer -> claimed by an embedding
  std::set<std::string> used_names_;
  std::set<int> consumed_;  // nodes a pattern already imported
  std::vector<bool> live_;  // per node: a graph output depends on it
  std::vector<Tensor> id_inputs_;  // integer graph inputs (token ids)
  std::string output_name_;
  int node_index_ = 0;
  bool loss_done_ = false;
};

// The warning for a PyTorch eval-mode export whose batch norms were folded
// into its convolutions (onnx_folded_bn.cc gives the evidence), naming
// `filename`; "" when the file shows none.
std::string FoldedBatchNormWarning(const onnx::ModelProto& model, const std::string& filename);

}  // namespace dtsim::models::onnx_import
