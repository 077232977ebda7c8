// A model as an operator-level DAG held in a Boost.Graph adjacency list.
// Vertices are Ops; an edge u -> v means v reads u's output.
//
// Ops are added inputs-first, so vertex index order is a topological order;
// Validate() checks that with boost::topological_sort all the same.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/op.h"

namespace dtsim::models {

using OpId = std::size_t;

// Sums over all ops of a graph, per sample where it says so.
struct GraphTotals {
  std::int64_t params = 0;
  // The parameters one token uses: params less the routed experts it is not
  // sent to (top_k of E); = params without mixture-of-experts layers.
  std::int64_t active_params = 0;
  double fwd_flops = 0;         // per sample
  double bwd_flops = 0;         // per sample, input + weight gradients
  double saved_elements = 0;    // per sample
  std::size_t num_ops = 0;
};

class ModelGraph {
 public:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Op>;

  explicit ModelGraph(std::string name = "") : name_(std::move(name)) {}

  // Adds `op` reading the outputs of `inputs` (which must already exist) and
  // returns its id. REQUIRES: op.name unique in this graph.
  OpId AddOp(Op op, const std::vector<OpId>& inputs);

  std::size_t num_ops() const { return boost::num_vertices(g_); }
  const Op& op(OpId id) const { return g_[id]; }
  Op& mutable_op(OpId id) { return g_[id]; }
  // Ids of the ops whose outputs `id` reads, in the order given to AddOp.
  std::vector<OpId> inputs(OpId id) const;
  std::vector<OpId> consumers(OpId id) const;
  // True when every input of `id` is a kInput op (its input gradient is not
  // needed in backward).
  bool ReadsOnlyGraphInputs(OpId id) const;

  // Ops in a topological order (index order; checked). Throws InternalError
  // on a cycle.
  std::vector<OpId> TopologicalOrder() const;
  void Validate() const;

  GraphTotals Totals() const;
  // Sets every op's dtype (mixed-precision training stores fp16/bf16).
  void SetDType(DType dtype);

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& description() const { return description_; }
  void set_description(std::string d) { description_ = std::move(d); }
  // What the model's reader doubts about the file it came from (an ONNX
  // export whose batch norms were folded away); tools print them on stderr.
  const std::vector<std::string>& warnings() const { return warnings_; }
  void AddWarning(std::string w) { warnings_.push_back(std::move(w)); }
  const Graph& graph() const { return g_; }
  // Index of the op called `name`, or num_ops() when absent.
  OpId Find(const std::string& name) const;

 private:
  std::string name_;
  std::string description_;
  std::vector<std::string> warnings_;
  Graph g_;
  std::vector<std::vector<OpId>> input_order_;  // inputs() order per vertex
  std::unordered_map<std::string, OpId> by_name_;
};

}  // namespace dtsim::models
