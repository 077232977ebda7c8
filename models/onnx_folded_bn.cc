// Detects an ONNX file exported from PyTorch in eval mode, whose batch
// norms the exporter folded into the convolutions before them.
//
// The evidence, all of which must hold:
// - the producer is "pytorch";
// - no BatchNormalization node is left;
// - some Conv's bias is a tensor the exporter computed: PyTorch names
//   folded constants "onnx::<Op>_<n>", while every parameter keeps its
//   module path ("layer1.0.conv1.weight"). A conv with a bias of its own
//   (VGG's) keeps its name, so models built without batch norm are not
//   taken for folded ones.
#include <string>

#include "models/onnx_importer.h"

namespace dtsim::models::onnx_import {

std::string FoldedBatchNormWarning(const onnx::ModelProto& model, const std::string& filename) {
  if (model.producer_name() != "pytorch") return "";
  int convs = 0, folded = 0;
  for (const onnx::NodeProto& node : model.graph().node()) {
    if (node.op_type() == "BatchNormalization") return "";
    if (node.op_type() != "Conv") continue;
    ++convs;
    if (node.input_size() > 2 && node.input(2).starts_with("onnx::")) ++folded;
  }
  if (folded == 0) return "";
  return filename + ": " + std::to_string(folded) + " of " + std::to_string(convs) +
         " convolutions have biases PyTorch's exporter computed and no BatchNormalization is "
         "left: this looks like an eval-mode export with batch norm folded into the "
         "convolutions, which trains faster than the model does (no batch norm ops). Export the "
         "training graph with torch.onnx.export(model.train(), x, f, "
         "training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)";
}

}  // namespace dtsim::models::onnx_import
