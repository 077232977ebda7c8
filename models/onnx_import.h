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
// Anything else is refused with a UserError naming the file, the node's
// index, name and operator, and what to change: never a silently wrong
// graph.
#pragma once

#include <string>

#include "models/graph.h"

namespace dtsim::models {

// True when `path` names an ONNX file (ends in ".onnx").
bool IsOnnxPath(const std::string& path);

// Reads the ONNX model in the file `path`; the graph is named after the
// file's stem. Throws UserError (at `path`) when it cannot be read or holds
// what the importer does not support.
ModelGraph LoadOnnxModel(const std::string& path);

// Same from the serialized ModelProto `bytes`; `filename` names it in
// messages and gives the graph's name.
ModelGraph ParseOnnxModel(const std::string& bytes, const std::string& filename);

}  // namespace dtsim::models
