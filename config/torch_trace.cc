#include "config/torch_trace.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "common/error.h"
#include "common/input_file.h"
#include "config/sequence_alignment.h"
#include "config/torch_aten_kinds.h"
#include "config/torch_trace_events.h"

namespace dtsim::config {
namespace {

using models::ModelGraph;
using models::OpId;
using models::OpKind;
using torch_trace::ForwardOp;
using torch_trace::Step;

// Graph ops a trace op's time goes to, with the share of it each gets.
using Attribution = std::vector<std::pair<OpId, double>>;

// What a trace op is matched by, computed once per op.
struct TraceKey {
  std::vector<OpKind> kinds;   // torch_trace::AtenKinds
  std::int64_t per_sample = -1;  // activation elements without the batch; -1: none
  std::int64_t batch = 0;        // the activation's leading dimension
  std::int64_t weight = -1;      // weight elements; -1: no weight
  bool binary = false;           // a second tensor input of the activation's shape
};

// The elements of dims [first, last): -1 when a size is negative or the
// product exceeds models::kMaxModelCount (no graph tensor is that large).
std::int64_t Elements(std::vector<std::int64_t>::const_iterator first,
                      std::vector<std::int64_t>::const_iterator last) {
  std::int64_t n = 1;
  for (; first != last; ++first) {
    if (*first < 0 || (*first > 0 && n > models::kMaxModelCount / *first)) return -1;
    n *= *first;
  }
  return n;
}

TraceKey KeyOf(const ForwardOp& t) {
  TraceKey k;
  k.kinds = torch_trace::AtenKinds(t.name);
  const auto use = torch_trace::InputsOf(t.name, t.dims);
  if (use.activation < 0) return k;
  const auto& x = t.dims[use.activation];
  // A batch of at least one sample and sizes a graph can have, or no match.
  if (x[0] < 1 || Elements(x.begin() + 1, x.end()) < 0) return k;
  k.batch = x[0];
  k.per_sample = Elements(x.begin() + 1, x.end());
  // The second input: the activation's shape, or it without the batch
  // dimension (broadcast over the batch, as a position table).
  k.binary = t.dims.size() >= 2 &&
             (t.dims[1] == x || std::equal(t.dims[1].begin(), t.dims[1].end(), x.begin() + 1,
                                           x.end()));
  if (use.weight >= 0) {
    k.weight = Elements(t.dims[use.weight].begin(), t.dims[use.weight].end());
    if (k.weight < 0) k.per_sample = -1;  // no match
  }
  return k;
}

// Whether a trace op computes graph op `op`: same kind, same per-sample
// input elements and, for ops with weights, a weight that accounts for the
// op's parameters (less a bias of one per output feature).
bool Computes(const TraceKey& t, const models::Op& op) {
  if (std::find(t.kinds.begin(), t.kinds.end(), op.kind) == t.kinds.end()) return false;
  if (t.per_sample < 0 || op.input_shapes.empty()) return false;
  if (t.per_sample != models::NumElements(op.input_shapes[0])) return false;
  if (op.kind == OpKind::kAdd && !t.binary) return false;
  if (t.weight >= 0 && op.attrs.tied_to < 0) {  // a tied head's weight is its table's
    // Output features: channels (first) of images, the last dimension else.
    const bool image = op.kind == OpKind::kConv2d || op.kind == OpKind::kBatchNorm;
    const std::int64_t out = op.output_shape.empty() ? 0
                             : image                 ? op.output_shape[0]
                                                     : op.output_shape.back();
    if (op.params != t.weight && op.params != t.weight + out) return false;
  }
  return true;
}

// The longest common subsequence of `trace` and `ops` under Computes: the
// anchors, as (trace index, index in ops) pairs in order. A trace op can
// only match graph ops of one of its kinds with its per-sample input size:
// an index of those answers whether it matches any (AlignSequences skips
// the rest), so a trace's extra events cost one lookup each.
std::vector<std::pair<int, int>> Align(const std::vector<ForwardOp>& trace,
                                       const std::vector<OpId>& ops, const ModelGraph& g) {
  const int n = static_cast<int>(trace.size()), m = static_cast<int>(ops.size());
  std::vector<TraceKey> keys;
  for (const ForwardOp& t : trace) keys.push_back(KeyOf(t));
  std::map<std::pair<OpKind, std::int64_t>, std::vector<int>> by_kind_and_size;
  for (int j = 0; j < m; ++j) {
    const models::Op& op = g.op(ops[static_cast<std::size_t>(j)]);
    if (!op.input_shapes.empty())
      by_kind_and_size[{op.kind, models::NumElements(op.input_shapes[0])}].push_back(j);
  }
  const auto matches_some = [&](int i) {
    const TraceKey& k = keys[static_cast<std::size_t>(i)];
    for (OpKind kind : k.kinds) {
      const auto it = by_kind_and_size.find({kind, k.per_sample});
      if (it == by_kind_and_size.end()) continue;
      for (int j : it->second)
        if (Computes(k, g.op(ops[static_cast<std::size_t>(j)]))) return true;
    }
    return false;
  };
  return AlignSequences(
      n, m,
      [&](int i, int j) {
        return Computes(keys[static_cast<std::size_t>(i)], g.op(ops[static_cast<std::size_t>(j)]));
      },
      matches_some);
}

// Each forward op's attribution: anchors to their graph op; the trace ops
// between two anchors to the graph ops left unaligned between them, in
// proportion to their forward bytes (Op::FwdBytes; these are mostly
// memory-bound elementwise ops); when no graph op is left between them, to
// the next anchor (what they prepare: a softmax's scale and causal mask,
// BatchNorm's step counter) or, after the last anchor, to the last (the
// loss's remaining ops). Ops before the first anchor stay unattributed.
std::vector<Attribution> Attribute(const std::vector<ForwardOp>& trace,
                                   const std::vector<OpId>& ops, const ModelGraph& g,
                                   const std::vector<std::pair<int, int>>& anchors) {
  std::vector<Attribution> out(trace.size());
  int prev_t = -1, prev_g = -1;
  for (std::size_t a = 0; a <= anchors.size(); ++a) {
    const bool last = a == anchors.size();
    const int next_t = last ? static_cast<int>(trace.size()) : anchors[a].first;
    const int next_g = last ? static_cast<int>(ops.size()) : anchors[a].second;
    Attribution gap;
    double bytes = 0;
    for (int j = prev_g + 1; j < next_g; ++j) bytes += g.op(ops[j]).FwdBytes(1);
    for (int j = prev_g + 1; j < next_g; ++j) {
      gap.push_back({ops[j], bytes > 0 ? g.op(ops[j]).FwdBytes(1) / bytes
                                       : 1.0 / (next_g - prev_g - 1)});
    }
    if (gap.empty() && !last && prev_g >= 0) gap.push_back({ops[next_g], 1.0});
    if (gap.empty() && last && prev_g >= 0) gap.push_back({ops[prev_g], 1.0});
    for (int t = prev_t + 1; t < next_t; ++t) out[t] = gap;
    if (!last) out[next_t].push_back({ops[next_g], 1.0});
    prev_t = next_t;
    prev_g = next_g;
  }
  return out;
}

// What one step measured of each graph op, seconds.
struct StepTimes {
  std::map<OpId, double> forward, backward;
};

std::string Micros(double s) { return std::to_string(std::llround(s * 1e6)) + " us"; }

StepTimes MapStep(const Step& step, const std::vector<OpId>& ops, const ModelGraph& g,
                  TorchTraceStep* totals, TorchTraceReport* report, bool first_step,
                  std::map<std::int64_t, int>* batches, std::set<OpId>* anchored) {
  StepTimes times;
  const auto anchors = Align(step.forward, ops, g);
  const auto attribution = Attribute(step.forward, ops, g, anchors);
  for (const auto& [t, j] : anchors) {
    ++(*batches)[KeyOf(step.forward[t]).batch];
    anchored->insert(ops[j]);
  }
  auto unattributed = [&](const std::string& name, double s) {
    totals->unattributed_s += s;
    report->unattributed.push_back(name + " in " + step.name + " (" + Micros(s) + ")");
  };
  std::map<OpId, std::vector<std::string>> sources;
  for (std::size_t t = 0; t < step.forward.size(); ++t) {
    if (attribution[t].empty()) unattributed(step.forward[t].name, step.forward[t].seconds);
    for (const auto& [id, share] : attribution[t]) {
      times.forward[id] += share * step.forward[t].seconds;
      totals->forward_s += share * step.forward[t].seconds;
      sources[id].push_back(step.forward[t].name);
    }
  }
  if (first_step) {
    for (const auto& [id, names] : sources) {
      std::string line = g.op(id).name + " <-";
      for (const auto& n : names) line += " " + n;
      report->measured.push_back(line);
    }
  }
  // Backward: forward op k owns sequence numbers [seq_k, seq_k+1).
  std::vector<std::pair<std::int64_t, std::size_t>> owners;
  for (std::size_t t = 0; t < step.forward.size(); ++t) {
    if (step.forward[t].sequence >= 0) owners.push_back({step.forward[t].sequence, t});
  }
  std::sort(owners.begin(), owners.end());
  const Attribution* last = nullptr;
  for (const auto& node : step.backward) {
    const Attribution* to = nullptr;
    if (node.sequence >= 0) {
      auto it = std::upper_bound(owners.begin(), owners.end(),
                                 std::make_pair(node.sequence, step.forward.size()));
      if (it != owners.begin()) to = &attribution[std::prev(it)->second];
      last = to;
    } else if (torch_trace::IsAccumulateGrad(node.name)) {
      to = last;
    }
    if (to == nullptr || to->empty()) {
      unattributed(node.name, node.seconds);
      continue;
    }
    for (const auto& [id, share] : *to) {
      times.backward[id] += share * node.seconds;
      totals->backward_s += share * node.seconds;
    }
  }
  for (const auto& op : step.other) unattributed(op.name, op.seconds);
  return times;
}

OpCostEntry EntryOf(const models::Op& op, bool backward_input, std::int64_t batch) {
  OpCostEntry e;
  e.signature = OpSignature(op);
  e.kind = op.kind;
  e.batch = batch;
  e.name = op.name;
  e.occurrences = 0;
  e.backward_input = backward_input;
  const double b = static_cast<double>(batch);
  e.forward_flops = op.fwd_flops * b;
  e.backward_flops = ((backward_input ? op.bwd_input_flops : 0) + op.bwd_weight_flops) * b;
  e.forward_bytes = op.FwdBytes(b);
  e.backward_bytes = op.BwdBytes(b);
  return e;
}

}  // namespace

OpCostTable ImportTorchTrace(const std::string& json_text, const std::string& filename,
                             const ModelGraph& graph, TorchTraceReport* report) {
  TorchTraceReport local;
  if (report == nullptr) report = &local;
  *report = TorchTraceReport{};
  const torch_trace::Trace trace = torch_trace::ReadTrace(json_text, filename);
  report->gpu_kernels = trace.gpu_kernels;

  std::vector<OpId> ops;  // the graph's ops in topological order, inputs left out
  for (OpId id : graph.TopologicalOrder()) {
    if (graph.op(id).kind != OpKind::kInput) ops.push_back(id);
  }
  std::map<std::int64_t, int> batches;  // batch -> anchors with it
  std::set<OpId> anchored;
  std::vector<StepTimes> steps;
  for (std::size_t s = 0; s < trace.steps.size(); ++s) {
    const Step& step = trace.steps[s];
    TorchTraceStep totals;
    totals.name = step.name;
    totals.step_s = step.seconds;
    totals.optimizer_s = step.optimizer_s;
    totals.zero_grad_s = step.zero_grad_s;
    for (const auto& c : step.communication) totals.communication_s += c.seconds;
    steps.push_back(MapStep(step, ops, graph, &totals, report, s == 0, &batches, &anchored));
    report->steps.push_back(totals);
  }
  // A trace of this model matches most of its layers with parameters.
  int weighted = 0, weighted_found = 0;
  for (OpId id : ops) {
    if (graph.op(id).params == 0) continue;
    ++weighted;
    weighted_found += static_cast<int>(anchored.count(id));
  }
  if (batches.empty() || 2 * weighted_found < weighted) {
    std::string first;
    for (std::size_t t = 0; t < trace.steps[0].forward.size() && t < 5; ++t)
      first += " " + trace.steps[0].forward[t].name;
    throw UserError(SourceLocation{filename},
                    "the trace's forward pass matches " + std::to_string(weighted_found) +
                        " of the " + std::to_string(weighted) +
                        " layers with parameters of model '" + graph.name() +
                        "' (by kind, per-sample input size and weight)",
                    "is it a trace of this model's training step? Its forward starts with" +
                        first);
  }
  // The batch most anchors ran at.
  report->batch = std::max_element(batches.begin(), batches.end(), [](auto& a, auto& b) {
                    return a.second < b.second;
                  })->first;

  OpCostTable table;
  table.source = "torch.profiler";
  table.device = trace.device;
  table.backend = "pytorch";
  // Entries by signature, over every call of its ops in every step.
  std::map<std::string, std::size_t> index;
  std::vector<std::vector<double>> forward, backward;
  for (OpId id : ops) {
    const models::Op& op = graph.op(id);
    const std::string sig = OpSignature(op);
    auto [it, added] = index.emplace(sig, table.entries.size());
    if (added) {
      table.entries.push_back(EntryOf(op, !graph.ReadsOnlyGraphInputs(id), report->batch));
      forward.emplace_back();
      backward.emplace_back();
    }
    ++table.entries[it->second].occurrences;
    bool measured = false;
    for (const StepTimes& st : steps) {
      if (auto f = st.forward.find(id); f != st.forward.end() && f->second > 0) {
        forward[it->second].push_back(f->second);
        measured = true;
      }
      if (auto b = st.backward.find(id); b != st.backward.end() && b->second > 0)
        backward[it->second].push_back(b->second);
    }
    if (!measured) report->unmeasured.push_back(op.name);
  }
  std::vector<OpCostEntry> entries;
  for (std::size_t e = 0; e < table.entries.size(); ++e) {
    if (!forward[e].empty()) table.entries[e].forward = TimingOf(forward[e]);
    if (!backward[e].empty()) table.entries[e].backward = TimingOf(backward[e]);
    if (table.entries[e].forward || table.entries[e].backward)
      entries.push_back(std::move(table.entries[e]));
  }
  table.entries = std::move(entries);

  std::vector<double> optimizer;
  for (const Step& s : trace.steps) {
    if (s.optimizer_s > 0) optimizer.push_back(s.optimizer_s);
  }
  if (!optimizer.empty()) {
    table.optimizer = OptimizerCost{trace.optimizer, graph.Totals().params, TimingOf(optimizer)};
  }
  // Collectives by name and size, seconds per call.
  std::map<std::pair<std::string, double>, std::vector<double>> calls;
  for (const Step& s : trace.steps) {
    for (const auto& c : s.communication) {
      if (c.seconds > 0) calls[{c.name, c.bytes}].push_back(c.seconds);
    }
  }
  for (auto& [key, seconds] : calls) {
    table.communication.push_back({key.first, key.second, TimingOf(seconds)});
  }
  return table;
}

OpCostTable LoadTorchTrace(const std::string& path, const ModelGraph& graph,
                           TorchTraceReport* report) {
  // A Kineto trace of a large model holds 10^5..10^6 events, a few hundred
  // bytes each: 512 MiB of JSON leaves room and bounds a gzip bomb.
  const std::string text =
      ReadMaybeGzippedFile(path, "torch.profiler trace", std::int64_t{512} << 20);
  return ImportTorchTrace(text, path, graph, report);
}

}  // namespace dtsim::config
