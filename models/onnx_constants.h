// Constants of an ONNX graph as the importer folds them: every value that
// does not depend on the model's input (weights, Constant nodes, shapes and
// the arithmetic exporters write on them: Shape, Gather, Unsqueeze, Concat,
// Slice, Cast, Range, Equal, Where, ConstantOfShape, Expand, ...). Folding
// turns a head-split chain's `Shape -> Gather -> Unsqueeze -> Concat` into
// the numbers a Reshape needs, and a causal mask buffer into the matrix
// whose values say it is causal.
//
// A constant always has its dimensions; it has its values when the file
// holds them (weights may be left out) and it has at most kMaxFoldedElements
// elements. Folding functions throw UserError (without a location; the
// importer adds file and node) when they cannot fold exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::models::onnx_import {

// Values are folded for constants of at most this many elements (a 1024 x
// 1024 mask); larger ones keep only their dimensions.
constexpr std::int64_t kMaxFoldedElements = std::int64_t{1} << 20;

// Kinds of element, as far as folding cares.
enum class ElementKind : std::uint8_t { kFloat, kInt, kBool };

// Where an embedding-like constant came from: rows of a weight table read
// by constant ids (Gather of an initializer).
struct TableRows {
  std::string table;         // the initializer's name
  std::int64_t rows = 0;     // its dimension 0 (the table's size)
  std::int64_t width = 0;    // its dimension 1
  bool positions = false;    // the ids are 0, 1, ..., n-1 along their last axis
  bool zeros = false;        // the ids are all 0
};

struct OnnxConst {
  std::vector<std::int64_t> dims;  // all of them: a constant has no batch
  ElementKind kind = ElementKind::kFloat;
  // Row-major values, when known (integers are exact up to 2^53).
  std::optional<std::vector<double>> values;
  // The initializer this constant is (through Identity, Cast, Unsqueeze or
  // Reshape) or, with `transposed`, the transpose of (a 2-D weight used by
  // MatMul): its parameters belong to the op that reads it.
  std::string weight;
  bool transposed = false;
  std::optional<TableRows> table;

  std::int64_t Elements() const;
  bool IsScalarLike() const { return Elements() == 1; }
  // The single value of a one-element constant with known values.
  std::optional<double> Scalar() const;
  // The values as integers. Throws UserError when unknown or not integral.
  std::vector<std::int64_t> Ints(const std::string& what) const;
};

// Broadcast dimensions of two shapes (numpy rules). Throws UserError when
// they do not broadcast.
std::vector<std::int64_t> BroadcastDims(const std::vector<std::int64_t>& a,
                                        const std::vector<std::int64_t>& b);

// Elementwise binary operators on constants: Add, Sub, Mul, Div, Pow,
// Equal, Less, Greater, And, Or, Where's condition choose; `op` is the ONNX
// operator. Values are unknown when either input's are.
OnnxConst FoldBinary(const std::string& op, const OnnxConst& a, const OnnxConst& b);
// Unary: Not, Neg, Sqrt, Cast (to `kind`), Identity.
OnnxConst FoldUnary(const std::string& op, const OnnxConst& x, ElementKind kind);
OnnxConst FoldWhere(const OnnxConst& cond, const OnnxConst& a, const OnnxConst& b);
// Gather along `axis` by `indices`.
OnnxConst FoldGather(const OnnxConst& data, const OnnxConst& indices, std::int64_t axis);
// Slice with ONNX's starts/ends/axes/steps (clamped as ONNX clamps them).
OnnxConst FoldSlice(const OnnxConst& x, const std::vector<std::int64_t>& starts,
                    const std::vector<std::int64_t>& ends, const std::vector<std::int64_t>& axes,
                    const std::vector<std::int64_t>& steps);
OnnxConst FoldConcat(const std::vector<OnnxConst>& parts, std::int64_t axis);
OnnxConst FoldTranspose(const OnnxConst& x, const std::vector<std::int64_t>& perm);
// Reshape, Unsqueeze, Squeeze, Flatten: same values, other dimensions.
OnnxConst FoldReshape(const OnnxConst& x, std::vector<std::int64_t> dims);
OnnxConst FoldExpand(const OnnxConst& x, const std::vector<std::int64_t>& shape);
// Range(start, limit, delta) and ConstantOfShape(shape) of `fill`.
OnnxConst FoldRange(double start, double limit, double delta, ElementKind kind);
OnnxConst FoldConstantOfShape(const std::vector<std::int64_t>& shape, double fill,
                              ElementKind kind);

// A Reshape's target: 0 copies the input's dimension (unless allowzero),
// -1 takes what is left. Throws UserError when the elements differ.
std::vector<std::int64_t> ReshapeTarget(const std::vector<std::int64_t>& in,
                                        const std::vector<std::int64_t>& target);
// Normalises an axis of a rank-`rank` tensor (negative from the end).
std::int64_t NormalizeAxis(std::int64_t axis, std::size_t rank);
std::string DimsToString(const std::vector<std::int64_t>& dims);  // "1x128x768"

}  // namespace dtsim::models::onnx_import
