#include "plan/context_parallel.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "plan/layers.h"

namespace dtsim::plan {
namespace {

using models::OpId;
using models::Shape;

// The dimension of `shape` holding the sequence of S tokens: 0 for (S) and
// (S, X), 1 for per-head (A, S, D); -1 for a per-sample scalar (a loss),
// -2 when the shape carries no full sequence.
int SequenceDim(const Shape& shape, std::int64_t s) {
  if (shape.size() == 1 && shape[0] == 1) return -1;
  if ((shape.size() == 1 || shape.size() == 2) && shape[0] == s) return 0;
  if (shape.size() == 3 && shape[1] == s) return 1;
  return -2;
}

// Whether op v is inside one of `cores`.
bool InCore(const std::vector<std::pair<OpId, OpId>>& cores, OpId v) {
  for (const auto& [b, e] : cores)
    if (v >= b && v < e) return true;
  return false;
}

void Divide(models::Op& op, double by) {
  op.fwd_flops /= by;
  op.bwd_input_flops /= by;
  op.bwd_weight_flops /= by;
  op.read_elements_per_sample /= by;
  op.written_elements_per_sample /= by;
  op.saved_elements_per_sample /= by;
}

double Elements(const Shape& s) { return static_cast<double>(models::NumElements(s)); }

}  // namespace

std::int64_t SequenceLength(const models::ModelGraph& g) {
  if (g.num_ops() == 0) return 0;
  const models::Op& in = g.op(0);
  return in.kind == models::OpKind::kInput && in.output_shape.size() == 1 ? in.output_shape[0] : 0;
}

const char* ContextParallelKindName(ContextParallelKind kind) {
  return kind == ContextParallelKind::kUlysses ? "ulysses" : "ring";
}

std::string ContextParallelProblem(const models::ModelGraph& g, const ContextParallel& cp) {
  const int c = cp.degree;
  if (c <= 1) return "";
  const std::int64_t s = SequenceLength(g);
  if (s <= 0 || g.num_ops() < 2 || g.op(1).kind != models::OpKind::kEmbedding)
    return "model '" + g.name() + "' does not start with a sequence of token ids";
  const auto cores = AttentionCores(g);
  if (cores.empty()) return "model '" + g.name() + "' has no attention to split the sequence of";
  bool causal = false;
  for (const auto& [b, e] : cores) {
    const models::Op& first = g.op(b);
    causal |= first.attrs.causal;
    if (cp.kind == ContextParallelKind::kRing && first.kind != models::OpKind::kAttention)
      return "ring attention runs blockwise in the fused kernel, and " + first.name +
             " is unfused (attention: eager)";
    if (cp.kind == ContextParallelKind::kUlysses) {
      // The heads of q (and k, v) are the leading dimension of every core input.
      for (OpId v = b; v < e; ++v)
        for (const Shape& in : g.op(v).input_shapes)
          if (in.empty() || in[0] % c != 0)
            return "Ulysses gives each of the " + std::to_string(c) + " ranks whole heads, and " +
                   g.op(v).name + " has " + std::to_string(in.empty() ? 0 : in[0]) +
                   " (heads and kv_heads must divide by context_parallel)";
    }
  }
  const std::int64_t chunks = cp.kind == ContextParallelKind::kRing && causal ? 2LL * c : c;
  if (s % chunks != 0)
    return "the sequence (" + std::to_string(s) + ") does not divide into " +
           std::to_string(chunks) + " equal chunks" +
           (chunks > c ? " (causal ring attention balances 2 x context_parallel chunks)" : "");
  for (OpId v = 0; v < g.num_ops(); ++v) {
    const models::Op& op = g.op(v);
    if (op.kind == models::OpKind::kInput && v == 0) continue;
    std::vector<const Shape*> shapes = {&op.output_shape};
    for (const Shape& in : op.input_shapes) shapes.push_back(&in);
    for (const Shape* sh : shapes) {
      const int dim = SequenceDim(*sh, s);
      const bool core_square = InCore(cores, v) && sh->size() == 3 && (*sh)[1] == s;
      if (dim == -2 && !core_square)
        return "op " + op.name + " has a tensor of shape " + models::ShapeToString(*sh) +
               " without the whole sequence (" + std::to_string(s) +
               "), which context parallelism splits";
      if (op.kind == models::OpKind::kReshape && op.attrs.axis == 0 &&
          op.attrs.view == models::ViewKind::kSlice)
        return "op " + op.name + " selects positions of the sequence, which context parallelism "
               "splits";
    }
  }
  return "";
}

models::ModelGraph ContextParallelShard(const models::ModelGraph& graph, const ContextParallel& cp) {
  models::ModelGraph shard = graph;
  const int c = cp.degree;
  if (c <= 1) return shard;
  const std::string problem = ContextParallelProblem(graph, cp);
  DTSIM_CHECK(problem.empty(), problem);
  const std::int64_t s = SequenceLength(graph);
  const auto cores = AttentionCores(graph);
  const auto split_sequence = [&](Shape& sh) {
    const int dim = SequenceDim(sh, s);
    if (dim >= 0) sh[static_cast<std::size_t>(dim)] /= c;
  };
  for (OpId v = 0; v < shard.num_ops(); ++v) {
    models::Op& op = shard.mutable_op(v);
    const bool core = InCore(cores, v);
    if (core && cp.kind == ContextParallelKind::kUlysses) {
      // Heads / c over the whole sequence.
      op.output_shape[0] /= c;
      for (Shape& in : op.input_shapes) in[0] /= c;
      Divide(op, c);
      continue;
    }
    split_sequence(op.output_shape);
    for (Shape& in : op.input_shapes) split_sequence(in);
    Divide(op, c);
    if (core) {
      // One ring step: (S/c) x (S/c) of the rank's (S/c) x S.
      op.fwd_flops /= c;
      op.bwd_input_flops /= c;
      op.bwd_weight_flops /= c;
    }
  }
  return shard;
}

double RingBlockBytes(const models::Op& core) {
  DTSIM_CHECK(core.kind == models::OpKind::kAttention && core.input_shapes.size() == 3,
              "ring attention passes the key/value inputs of a fused attention op");
  return (Elements(core.input_shapes[1]) + Elements(core.input_shapes[2])) *
         models::DTypeBytes(core.dtype) / std::max(1, core.attrs.tensor_split);
}

UlyssesBytes UlyssesAllToAllBytes(const models::ModelGraph& shard, OpId begin, OpId end) {
  DTSIM_CHECK(begin < end && end <= shard.num_ops(), "attention core out of the graph");
  UlyssesBytes b;
  // Each rank's buffers hold its S / c positions of every head (the shard's
  // core ops hold heads / c of all S positions: the same count).
  const models::Op& first = shard.op(begin);
  const models::Op& last = shard.op(end - 1);
  const double split = std::max(1, first.attrs.tensor_split);
  if (first.kind == models::OpKind::kAttention) {
    for (const Shape& in : first.input_shapes) b.before += Elements(in);
  } else {
    // Eager: scores reads q and k, context reads v.
    b.before = Elements(first.input_shapes[0]) + Elements(first.input_shapes[1]) +
               Elements(last.input_shapes[1]);
  }
  b.before *= models::DTypeBytes(first.dtype) / split;
  b.after = Elements(last.output_shape) * models::DTypeBytes(last.dtype) / split;
  return b;
}

TaskId EmitContextAttention(Plan& plan, const models::ModelGraph& shard, const ContextParallel& cp,
                            const AttentionSite& site, TaskKind kind, TaskId dep) {
  DTSIM_CHECK(kind == TaskKind::kForward || kind == TaskKind::kBackward,
              "attention's core runs as a forward or a backward task");
  const bool forward = kind == TaskKind::kForward;
  const auto deps_of = [](std::initializer_list<TaskId> ids) {
    std::vector<TaskId> out;
    for (TaskId x : ids)
      if (x >= 0) out.push_back(x);
    return out;
  };
  const auto compute = [&](std::vector<TaskId> deps) {
    Task task;
    task.kind = kind;
    task.rank = site.rank;
    task.iteration = site.iteration;
    task.micro_batch = site.micro_batch;
    task.op = static_cast<std::int32_t>(site.begin);
    task.op_count = static_cast<std::int32_t>(site.end - site.begin);
    task.batch = site.batch;
    return plan.AddTask(task, deps);
  };
  if (cp.kind == ContextParallelKind::kUlysses) {
    const UlyssesBytes bytes = UlyssesAllToAllBytes(shard, site.begin, site.end);
    const auto all_to_all = [&](double per_sample, std::vector<TaskId> deps) {
      Collective col;
      col.op = CollectiveOp::kAllToAll;
      col.algorithm = site.algorithm;
      col.bytes = per_sample * site.batch;
      col.group = site.group;
      col.activations = true;
      col.copies = site.copies;
      const auto ci = plan.AddCollective(col, {std::move(deps)}, site.iteration);
      return plan.collectives()[static_cast<std::size_t>(ci)].tasks[0];
    };
    // Forward: q, k, v in, the output back; backward: the output's
    // gradient in, the gradients of q, k and v back.
    const TaskId in = all_to_all(forward ? bytes.before : bytes.after, deps_of({dep}));
    const TaskId core = compute({in});
    return all_to_all(forward ? bytes.after : bytes.before, {core});
  }
  const double block = RingBlockBytes(shard.op(site.begin)) * site.batch;
  const auto send = [&](double bytes, std::vector<TaskId> deps) {
    Task task;
    task.kind = TaskKind::kSend;
    task.stream = StreamKind::kComm;
    task.rank = site.rank;
    task.peer = site.next;
    task.bytes = bytes;
    task.iteration = site.iteration;
    task.micro_batch = site.micro_batch;
    task.copies = site.copies;
    return plan.AddTask(task, deps);
  };
  const int c = cp.degree;
  TaskId step = -1, sent = -1;
  if (forward) {
    for (int j = 0; j < c; ++j) {
      // The block of step j is in hand: forward it while computing on it.
      const TaskId next_sent = j + 1 < c ? send(block, j == 0 ? deps_of({dep}) : deps_of({sent})) : -1;
      step = compute(j == 0 ? deps_of({dep}) : deps_of({step, sent}));
      sent = next_sent;
    }
    return step;
  }
  for (int j = 0; j < c; ++j) {
    // Step j sends the block of step j + 1 and the dK/dV of step j - 1.
    const double bytes = (j + 1 < c ? block : 0) + (j > 0 ? block : 0);
    const TaskId next_sent = send(bytes, j == 0 ? deps_of({dep}) : deps_of({sent, step}));
    step = compute(j == 0 ? deps_of({dep}) : deps_of({step, sent}));
    sent = next_sent;
  }
  // The dK/dV of the last step's block returns to its owner.
  return send(block, deps_of({sent, step}));
}

std::vector<TaskId> EmitContextAttentionGroup(Plan& plan, const models::ModelGraph& shard,
                                              const ContextParallel& cp,
                                              const std::vector<AttentionSite>& sites,
                                              TaskKind kind, const std::vector<TaskId>& deps) {
  const int c = cp.degree;
  DTSIM_CHECK(static_cast<int>(sites.size()) == c && deps.size() == sites.size(),
              "one site and one dependency per member of the context group");
  DTSIM_CHECK(kind == TaskKind::kForward || kind == TaskKind::kBackward,
              "attention's core runs as a forward or a backward task");
  const bool forward = kind == TaskKind::kForward;
  const auto n = sites.size();
  const AttentionSite& first = sites.front();
  const auto list = [](std::initializer_list<TaskId> ids) {
    std::vector<TaskId> out;
    for (TaskId x : ids)
      if (x >= 0) out.push_back(x);
    return out;
  };
  const auto compute = [&](std::size_t q, const std::vector<TaskId>& on) {
    Task task;
    task.kind = kind;
    task.rank = sites[q].rank;
    task.iteration = first.iteration;
    task.micro_batch = first.micro_batch;
    task.op = static_cast<std::int32_t>(first.begin);
    task.op_count = static_cast<std::int32_t>(first.end - first.begin);
    task.batch = first.batch;
    return plan.AddTask(task, on);
  };
  std::vector<TaskId> out(n, -1);
  if (cp.kind == ContextParallelKind::kUlysses) {
    const UlyssesBytes bytes = UlyssesAllToAllBytes(shard, first.begin, first.end);
    const auto all_to_all = [&](double per_sample, const std::vector<std::vector<TaskId>>& on) {
      Collective col;
      col.op = CollectiveOp::kAllToAll;
      col.algorithm = first.algorithm;
      col.bytes = per_sample * first.batch;
      col.group = first.group;
      col.activations = true;
      const auto ci = plan.AddCollective(col, on, first.iteration);
      return plan.collectives()[static_cast<std::size_t>(ci)].tasks;
    };
    std::vector<std::vector<TaskId>> on(n);
    for (std::size_t q = 0; q < n; ++q) on[q] = list({deps[q]});
    const std::vector<TaskId> in = all_to_all(forward ? bytes.before : bytes.after, on);
    for (std::size_t q = 0; q < n; ++q) on[q] = {compute(q, {in[q]})};
    return all_to_all(forward ? bytes.after : bytes.before, on);
  }
  const double block = RingBlockBytes(shard.op(first.begin)) * first.batch;
  const auto send = [&](std::size_t q, double bytes, const std::vector<TaskId>& on) {
    Task task;
    task.kind = TaskKind::kSend;
    task.stream = StreamKind::kComm;
    task.rank = sites[q].rank;
    task.peer = sites[(q + 1) % n].rank;
    task.bytes = bytes;
    task.iteration = first.iteration;
    task.micro_batch = first.micro_batch;
    return plan.AddTask(task, on);
  };
  const auto pred = [n](std::size_t q) { return (q + n - 1) % n; };
  std::vector<TaskId> step(n, -1), sent(n, -1), next_sent(n, -1);
  for (int j = 0; j < c; ++j) {
    for (std::size_t q = 0; q < n; ++q) {
      // The block of step j is in hand once the predecessor's send of step
      // j - 1 arrived.
      const std::vector<TaskId> arrived =
          j == 0 ? list({deps[q]}) : list({sent[pred(q)], sent[q], step[q]});
      if (forward) {
        next_sent[q] = j + 1 < c ? send(q, block, j == 0 ? list({deps[q]}) : list({sent[pred(q)], sent[q]}))
                                 : -1;
      } else {
        const double bytes = (j + 1 < c ? block : 0) + (j > 0 ? block : 0);
        next_sent[q] = send(q, bytes, arrived);
      }
      step[q] = compute(q, j == 0 ? list({deps[q]}) : list({step[q], sent[pred(q)]}));
    }
    sent = next_sent;
  }
  if (forward) return step;
  // The dK/dV of the last step's block returns to its owner, the successor.
  std::vector<TaskId> last(n);
  for (std::size_t q = 0; q < n; ++q) last[q] = send(q, block, list({sent[pred(q)], sent[q], step[q]}));
  for (std::size_t q = 0; q < n; ++q) out[q] = last[pred(q)];
  return out;
}

}  // namespace dtsim::plan
