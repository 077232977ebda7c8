// Import of torch.profiler Chrome traces as op-cost tables: the measured
// times of a PyTorch training step, attributed to the ops of a dtsim graph.
//
// Input: the JSON that torch.profiler's export_chrome_trace writes through
// Kineto ({"traceEvents": [...]}), recorded with record_shapes=True so that
// aten ops carry "Input Dims". Times ("ts", "dur") are microseconds.
//
// Mapping, per profiled step (ProfilerStep#N span; the whole trace when
// there is none):
//  - Forward: the top-level aten ops (not nested in another op of the same
//    thread) before the step's first backward node, outside optimizer spans.
//    Each has a dtsim kind (aten::conv2d -> conv2d, aten::linear -> dense,
//    ...) and a per-sample size (the first input's elements without the
//    leading batch dimension). They are aligned in order with the graph's
//    ops in topological order (a longest common subsequence over "same kind,
//    same per-sample input elements, same weight"); aligned pairs are
//    anchors. The trace ops between two anchors that align with nothing (a
//    composite such as nn.LocalResponseNorm's mul, pad, avg_pool3d, pow,
//    div) go to the graph ops left unaligned between the same anchors, split
//    in proportion to their forward bytes (Op::FwdBytes); with no such graph
//    op, to the next anchor (what they prepare: a softmax's scale and
//    causal mask, BatchNorm's step counter), or after the last anchor to
//    the last (the loss's remaining ops). Ops before the first anchor (the
//    profiler's bookkeeping) stay unattributed.
//  - Backward: each autograd node ("autograd::engine::evaluate_function:
//    ConvolutionBackward0") carries the "Sequence number" of the forward op
//    that made it; a forward op owns the sequence numbers from its own to the
//    next forward op's, so composites' nodes follow them. AccumulateGrad
//    nodes (no sequence number) go to the backward of the node that ran just
//    before them on the same thread: the one that produced the gradient.
//  - Optimizer: the "Optimizer.step#NAME.step" span; "Optimizer.zero_grad"
//    is reported apart and priced nowhere.
//  - Communication: events named gloo:*, nccl:*, c10d::* or
//    record_param_comms, top-level or nested, go to `communication` and are
//    subtracted from the compute op they are nested in. Their bytes come
//    from "In msg nelems" and "dtype", or the first input's dims and type.
//    On a GPU their time is their kernels', never counted as compute.
//  - GPU: when the trace has kernels (cat "kernel"), an op's time is the sum
//    of the kernels that its aten ops launched (kernel "External id" = the
//    launching op's "External id"), not its CPU time.
// Every graph op measured in the steps becomes an entry keyed by
// OpSignature and batch; an entry's timing is over all calls of ops with
// that signature (ops x steps), seconds per call.
// The table's source is "torch.profiler", its backend "pytorch", its device
// "cpu" or the GPU's name; a trace does not say the threads, host or date:
// the caller sets them (threads stays 1).
#pragma once

#include <string>
#include <vector>

#include "config/op_cost_table.h"
#include "models/graph.h"

namespace dtsim::config {

// What one profiled step's time went to, seconds. forward + backward +
// optimizer + zero_grad + unattributed is the time of the step's top-level
// compute events; the rest of step_s is time between them (Python, the
// profiler) and collectives on the training thread. communication_s sums
// the step's collectives, which may run on other threads (gloo's, a GPU's
// communication stream), overlapping the rest.
struct TorchTraceStep {
  std::string name;  // "ProfilerStep#3", or "whole trace"
  double step_s = 0;
  double forward_s = 0, backward_s = 0;  // attributed to graph ops
  double optimizer_s = 0, zero_grad_s = 0, communication_s = 0;
  double unattributed_s = 0;  // top-level ops no graph op was found for
};

struct TorchTraceReport {
  std::int64_t batch = 0;  // the leading dimension of the anchors' inputs
  bool gpu_kernels = false;  // times are GPU kernel times
  std::vector<TorchTraceStep> steps;
  // The graph ops the first step's forward ops went to, with those ops,
  // e.g. "conv1 <- aten::conv2d", "norm1 <- aten::mul aten::unsqueeze ...".
  std::vector<std::string> measured;
  // Graph ops (not inputs) with no trace op: priced by the kernel model.
  std::vector<std::string> unmeasured;
  // Trace ops attributed to no graph op, e.g. "aten::ones_like in
  // ProfilerStep#3 (33 us)".
  std::vector<std::string> unattributed;
};

// The op-cost table of `graph`'s ops measured in the trace `json_text`;
// `filename` names it in errors. `report` (may be null) receives what mapped
// and where the time went. Throws UserError naming the file when the text
// is not JSON, is not a torch.profiler trace (no "traceEvents"; the
// shapeless export of a PyTorch without Kineto is named as such), has no
// input shapes ("record it with torch.profiler.profile(record_shapes=True)"),
// or when its forward pass matches fewer than half of the graph's ops with
// parameters (a trace of another model).
OpCostTable ImportTorchTrace(const std::string& json_text, const std::string& filename,
                             const models::ModelGraph& graph, TorchTraceReport* report);

// Same from a file, plain or gzip-compressed (.json.gz); a missing or
// unreadable file is a UserError naming it.
OpCostTable LoadTorchTrace(const std::string& path, const models::ModelGraph& graph,
                           TorchTraceReport* report);

}  // namespace dtsim::config
