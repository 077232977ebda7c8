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
// - Operators: Conv (2-D, dilation 1, symmetric padding), Gemm, MatMul
//   (with a weight: a dense layer, fused with a following Add of a bias;
//   of two activations: a batched product), Add of two activations,
//   Relu, Tanh, Gelu, Dropout, Identity, BatchNormalization,
//   LayerNormalization (last axis), LRN, MaxPool, AveragePool,
//   GlobalAveragePool, Flatten (axis 1), Reshape (a constant shape),
//   Concat, Softmax (last axis), Gather (an embedding table), Constant.
// - The first graph output is the model's output. ONNX files describe
//   inference: the loss dtsim trains with is softmax cross-entropy over the
//   output's last dimension; a final Softmax becomes that loss.
//
// Nodes no graph output depends on are skipped (a runtime never computes
// them). Anything else is refused with a UserError naming the file, the
// node's index, name and operator, and what to change: never a silently
// wrong graph. Values that become ints (window sizes, strides, padding,
// groups) are refused outside int's range rather than cut.
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
