// Models from ONNX files (https://onnx.ai, IR version 3 and later): the
// graph, its input shapes and the dimensions of its weights, turned into a
// ModelGraph through GraphBuilder, so that FLOPs, parameters and saved
// activations are derived exactly as for zoo models. The weights' values
// are never read: a file may hold them, leave them out, or keep them in
// external data files.
//
// What is read (docs/onnx_import.md lists each operator's mapping):
// - Graph inputs that are not initializers: their first dimension is the
//   batch (a symbol or any number); the others must be fixed numbers.
//   Float inputs are images or features, integer inputs token ids.
// - Real exporter output (torch.onnx.export in training mode, opsets 13 to
//   17): computations on constants and shapes are folded
//   (models/onnx_constants.h), so head-split chains become dtsim's views;
//   the batch is followed through reshapes and transposes (exports hold
//   batch-1 shapes as numbers). Patterns become one op each: decomposed
//   LayerNorm and GELU, x * Sigmoid(x) (SiLU), a scaled and causally
//   masked attention softmax, position and token-type tables added to the
//   embeddings, ViT's class token, PyTorch's LSTM/GRU/RNN nodes, an LM head
//   tied to its embedding. A pattern that does not match exactly is imported
//   node by node, where what dtsim has no op for is refused.
// - The first graph output is the model's output. ONNX files describe
//   inference: the loss dtsim trains with is softmax cross-entropy over the
//   output's last dimension; a final Softmax becomes that loss.
//
// Nodes no graph output depends on are skipped (a runtime never computes
// them). Anything else is refused with a UserError naming the file, the
// node's index, name and operator, and what to change: never a silently
// wrong graph. Values that become ints (window sizes, strides, padding,
// groups) are refused outside int's range rather than cut.
//
// A PyTorch eval-mode export, whose batch norms the exporter folded into
// the convolutions, imports (it is a valid graph) with a warning in the
// graph's warnings(): it trains faster than the model does.
#pragma once

#include <cstdint>
#include <string>

#include "models/graph.h"
#include "models/op.h"

namespace dtsim::models {

// Bounds checked as a file is read, so that a small file cannot cost
// minutes or gigabytes (docs/fuzzing.md):
// - the file's size: protobuf parses messages below 2 GiB;
constexpr std::int64_t kMaxOnnxFileBytes = (std::int64_t{1} << 31) - 1;
// - nodes, graph inputs, weights and outputs, and the inputs of one node:
//   as many as a model may have ops (kMaxModelOps);
constexpr int kMaxOnnxNodes = static_cast<int>(kMaxModelOps);
// - dimensions of a tensor besides the batch: images are (C, H, W), a
//   transformer's activations (A, S, D); 8 leaves room for any layer read.
constexpr int kMaxOnnxRank = 8;

// True when `path` names an ONNX file (ends in ".onnx").
bool IsOnnxPath(const std::string& path);

// Reads the ONNX model in the file `path`; the graph is named after the
// file's stem. Throws UserError (at `path`) when it cannot be read or holds
// what the importer does not support.
ModelGraph LoadOnnxModel(const std::string& path);

// Same from the serialized ModelProto `bytes`; `filename` names it in
// messages and gives the graph's name. The graph's warnings() hold
// OnnxFoldedBatchNormWarning's.
ModelGraph ParseOnnxModel(const std::string& bytes, const std::string& filename);

// The warning for a PyTorch eval-mode export whose BatchNorm layers were
// folded into the convolutions before them (it trains faster than the model
// does), with the export command that keeps them; "" when the file shows no
// such folding. Throws UserError when `bytes` is not an ONNX model.
std::string OnnxFoldedBatchNormWarning(const std::string& bytes, const std::string& filename);

}  // namespace dtsim::models
