#include "models/graph.h"

#include <boost/graph/topological_sort.hpp>
#include <algorithm>
#include <iterator>

#include "common/error.h"

namespace dtsim::models {

OpId ModelGraph::AddOp(Op op, const std::vector<OpId>& inputs) {
  DTSIM_CHECK(Find(op.name) == num_ops(), "duplicate op name '" + op.name + "'");
  std::string name = op.name;
  OpId id = boost::add_vertex(std::move(op), g_);
  by_name_.emplace(std::move(name), id);
  for (OpId in : inputs) {
    DTSIM_CHECK(in < id, "op inputs must be added before the op");
    boost::add_edge(in, id, g_);
  }
  input_order_.push_back(inputs);
  return id;
}

std::vector<OpId> ModelGraph::inputs(OpId id) const { return input_order_.at(id); }

std::vector<OpId> ModelGraph::consumers(OpId id) const {
  std::vector<OpId> out;
  for (auto [it, end] = boost::out_edges(id, g_); it != end; ++it)
    out.push_back(boost::target(*it, g_));
  return out;
}

bool ModelGraph::ReadsOnlyGraphInputs(OpId id) const {
  const auto& ins = input_order_.at(id);
  return std::all_of(ins.begin(), ins.end(),
                     [&](OpId i) { return g_[i].kind == OpKind::kInput; });
}

std::vector<OpId> ModelGraph::TopologicalOrder() const {
  Validate();
  std::vector<OpId> order(num_ops());
  for (OpId i = 0; i < order.size(); ++i) order[i] = i;
  return order;
}

void ModelGraph::Validate() const {
  std::vector<OpId> reversed;
  try {
    boost::topological_sort(g_, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    DTSIM_CHECK(false, "model graph '" + name_ + "' has a cycle");
  }
  // Index order is topological by construction (AddOp); confirm.
  for (OpId v = 0; v < num_ops(); ++v)
    for (OpId in : input_order_[v]) DTSIM_CHECK(in < v, "op order is not topological");
}

GraphTotals ModelGraph::Totals() const {
  GraphTotals t;
  t.num_ops = num_ops();
  for (OpId v = 0; v < num_ops(); ++v) {
    const Op& o = g_[v];
    t.params += o.params;
    t.active_params += o.ActiveParams();
    t.fwd_flops += o.fwd_flops;
    t.bwd_flops += o.bwd_weight_flops + (ReadsOnlyGraphInputs(v) ? 0.0 : o.bwd_input_flops);
    t.saved_elements += o.saved_elements_per_sample;
  }
  return t;
}

void ModelGraph::SetDType(DType dtype) {
  for (OpId v = 0; v < num_ops(); ++v) g_[v].dtype = dtype;
}

OpId ModelGraph::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? num_ops() : it->second;
}

}  // namespace dtsim::models
