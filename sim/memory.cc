#include "sim/memory.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "common/error.h"
#include "plan/expert_parallel.h"
#include "plan/layers.h"
#include "plan/tensor_parallel.h"

namespace dtsim::sim {
namespace {

constexpr double kFp32Bytes = 4;  // optimizer state and master weights
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// fp32 buffers per parameter the optimizer keeps (besides a master copy).
int OptimizerBuffers(config::OptimizerKind optimizer) {
  switch (optimizer) {
    case config::OptimizerKind::kSgd:
      return 0;
    case config::OptimizerKind::kMomentum:
      return 1;  // velocity
    case config::OptimizerKind::kAdam:
      return 2;  // first and second moments
  }
  return 0;
}

// 1 / t when `split`, else 1.
double Share(bool split, int tensor_parallel) { return split ? 1.0 / tensor_parallel : 1.0; }

// Bytes per sample of `op`'s output (what a unit keeps as its input under
// recomputation).
double OutputBytesPerSample(const models::Op& op, int tensor_parallel, bool sequence_parallel) {
  const bool split = plan::TensorParallelSplitsOutput(op) ||
                     (sequence_parallel && plan::InSequenceParallelRegion(op));
  return static_cast<double>(models::NumElements(op.output_shape)) * models::DTypeBytes(op.dtype) *
         Share(split, tensor_parallel);
}

// With sequence parallelism (Korthikanti et al. 2022, §4.2.2) everything a
// transformer layer keeps divides by t: the split ops' as before, the
// sequence-parallel region's, and the column-parallel ops' inputs (kept
// sharded and all-gathered again in backward).
bool SplitsSaved(const models::Op& op, bool sequence_parallel) {
  if (plan::TensorParallelSplitsSavedActivations(op)) return true;
  return sequence_parallel &&
         (plan::InSequenceParallelRegion(op) ||
          plan::TensorParallelCollective(op) == plan::TpCollective::kAfterBackwardInput);
}

double SavedBytesPerSample(const models::Op& op, int tensor_parallel, bool sequence_parallel) {
  return op.ActivationBytes(1.0) * Share(SplitsSaved(op, sequence_parallel), tensor_parallel);
}

std::vector<bool> OpSet(const models::ModelGraph& graph, const std::vector<models::OpId>& ops) {
  std::vector<bool> in_set(graph.num_ops(), false);
  for (models::OpId id : ops) {
    DTSIM_CHECK(id < graph.num_ops(), "op id " + std::to_string(id) + " out of range");
    DTSIM_CHECK(!in_set[id], "op " + graph.op(id).name + " listed twice");
    in_set[id] = true;
  }
  return in_set;
}

// "41.2" (GiB with `decimals` decimals); with `trim`, "40" rather than "40.0".
std::string Gib(double bytes, int decimals, bool trim) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, bytes / kGiB);
  std::string s = buf;
  if (trim && s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

}  // namespace

std::vector<double> KeptBytesPerSample(const models::ModelGraph& graph,
                                       const std::vector<models::OpId>& ops, const KeepOptions& o,
                                       double* largest_unit_bytes,
                                       plan::RecomputeRanges* recomputed) {
  const int tensor_parallel = o.tensor_parallel;
  DTSIM_CHECK(tensor_parallel >= 1, "tensor_parallel must be >= 1");
  const bool sp = o.sequence_parallel && tensor_parallel > 1;
  const std::vector<bool> in_set = OpSet(graph, ops);
  std::vector<double> kept(graph.num_ops(), 0.0);
  for (models::OpId id : ops) {
    const models::Op& op = graph.op(id);
    kept[id] = SavedBytesPerSample(op, tensor_parallel, sp) *
               plan::RoutedLoadFactor(graph, id, o.expert_parallel);
    if (o.fp8 && op.kind == models::OpKind::kDense) kept[id] /= models::DTypeBytes(op.dtype);
    // The loss runs in fp32 whatever the training dtype: Megatron-LM casts
    // the logits (`.float()` unless --fp16-lm-cross-entropy) and
    // torch.autocast runs log_softmax and cross_entropy in float32 (its op
    // reference, "CUDA Ops that can autocast to float32"), so the
    // probabilities kept for backward take 4 bytes each.
    if (op.kind == models::OpKind::kSoftmaxCrossEntropy)
      kept[id] *= kFp32Bytes / models::DTypeBytes(op.dtype);
  }
  double largest = 0;
  if (o.selective) {
    // Attention's core keeps nothing of its own s x s tensors: softmax's
    // output, the dropout's mask and the probabilities attention over V
    // reads; scores keeps Q and K and context keeps V, the inputs the
    // recomputation starts from (Korthikanti et al. 2022, §5: the 5as/h
    // term of Eq. 1 goes). One core's full activations are held while it is
    // recomputed.
    for (const auto& [b, e] : plan::AttentionCores(graph)) {
      if (!in_set[b]) continue;
      double dropped = 0;
      const models::Op& first = graph.op(b);
      if (first.kind == models::OpKind::kAttention && first.output_shape.size() == 3) {
        // A fused kernel keeps no s x s tensor to drop: its inputs q, k, v
        // are the checkpoint's and its output is the projection's input,
        // so re-running it frees only its log-sum-exp per query row (A S).
        const double rows = static_cast<double>(first.output_shape[0] * first.output_shape[1]);
        dropped = std::min(kept[b], rows * models::DTypeBytes(first.dtype) *
                                        Share(SplitsSaved(first, sp), tensor_parallel));
        kept[b] -= dropped;
      }
      for (models::OpId id = b + 1; id < e; ++id) {
        if (!in_set[id]) continue;
        double keep = 0;
        const models::Op& op = graph.op(id);
        if (id + 1 == e && op.input_shapes.size() >= 2) {  // context: keep V
          keep = std::min(kept[id], static_cast<double>(models::NumElements(op.input_shapes[1])) *
                                        models::DTypeBytes(op.dtype) *
                                        Share(SplitsSaved(op, sp), tensor_parallel));
        }
        dropped += kept[id] - keep;
        kept[id] = keep;
      }
      largest = std::max(largest, dropped);
      if (recomputed != nullptr) recomputed->emplace_back(b, e);
    }
  }
  if (o.recompute) {
    // Checkpoint granularity: each layer unit, or (per_stage) the device's
    // whole op set as one unit.
    std::vector<plan::LayerUnit> units = plan::LayerUnits(graph);
    if (o.per_stage) units = {plan::LayerUnit{"stage", 0, graph.num_ops()}};
    for (const plan::LayerUnit& unit : units) {
      // The part of the unit this device holds, and what it reads from
      // outside that part (each producer once).
      std::vector<models::OpId> group;
      for (models::OpId id = unit.begin; id < unit.end; ++id) {
        if (in_set[id]) group.push_back(id);
      }
      if (group.empty()) continue;
      const auto in_group = [&](models::OpId id) {
        return id >= unit.begin && id < unit.end && in_set[id];
      };
      std::vector<models::OpId> producers;
      double full = 0;
      for (models::OpId id : group) {
        full += kept[id];
        for (models::OpId p : graph.inputs(id)) {
          if (!in_group(p) && std::find(producers.begin(), producers.end(), p) == producers.end()) {
            producers.push_back(p);
          }
        }
      }
      double input = 0;
      for (models::OpId p : producers)
        input += OutputBytesPerSample(graph.op(p), tensor_parallel, sp);
      if (input >= full) continue;  // checkpointing would not save memory
      for (models::OpId id : group) kept[id] = 0;
      kept[group.front()] = input;
      largest = std::max(largest, full);
      if (recomputed != nullptr) recomputed->emplace_back(group.front(), group.back() + 1);
    }
  }
  if (largest_unit_bytes != nullptr) *largest_unit_bytes = largest;
  return kept;
}

std::vector<double> KeptBytesPerSample(const models::ModelGraph& graph,
                                       const std::vector<models::OpId>& ops, int tensor_parallel,
                                       bool recompute, double* largest_unit_bytes,
                                       bool per_stage, plan::RecomputeRanges* recomputed) {
  KeepOptions o;
  o.tensor_parallel = tensor_parallel;
  o.recompute = recompute;
  o.per_stage = per_stage;
  return KeptBytesPerSample(graph, ops, o, largest_unit_bytes, recomputed);
}

plan::RecomputeRanges RecomputedRanges(const models::ModelGraph& graph,
                                       const std::vector<models::OpId>& ops, int tensor_parallel,
                                       bool per_stage) {
  plan::RecomputeRanges ranges;
  KeptBytesPerSample(graph, ops, tensor_parallel, true, nullptr, per_stage, &ranges);
  return ranges;
}

MemoryBreakdown DeviceMemory(const MemoryInputs& in) {
  DTSIM_CHECK(in.graph != nullptr, "MemoryInputs::graph is null");
  DTSIM_CHECK(in.tensor_parallel >= 1 && in.data_parallel >= 1,
              "tensor_parallel and data_parallel must be >= 1");
  DTSIM_CHECK(in.zero_stage >= 0 && in.zero_stage <= 3,
              "zero_stage must be 0-3, got " + std::to_string(in.zero_stage));
  DTSIM_CHECK(in.micro_batch_size >= 1 && in.micro_batches_in_flight >= 0,
              "micro_batch_size must be >= 1 and micro_batches_in_flight >= 0");
  const models::ModelGraph& graph = *in.graph;

  // Per parameter: the op's dtype for weights and gradients; fp32 for the
  // master copy (mixed precision) and each optimizer buffer.
  const double state_bytes_per_param =
      (in.mixed_precision ? kFp32Bytes : 0) + kFp32Bytes * OptimizerBuffers(in.optimizer) +
      in.extra_state_bytes_per_param;
  MemoryBreakdown m;
  MemoryBreakdown experts;  // the routed experts' share, ZeRO-sharded over d / ep
  const int ep = in.expert_parallel;
  DTSIM_CHECK(ep >= 1 && in.data_parallel % ep == 0, "expert_parallel must divide data_parallel");
  std::vector<models::OpId> holds = in.ops;
  holds.insert(holds.end(), in.weight_copies.begin(), in.weight_copies.end());
  for (models::OpId id : holds) {
    DTSIM_CHECK(id < graph.num_ops(), "op id " + std::to_string(id) + " out of range");
    const models::Op& op = graph.op(id);
    const bool expert = plan::HoldsExpertParams(op);
    MemoryBreakdown& to = expert ? experts : m;
    const double params = static_cast<double>(op.params) *
                          Share(plan::IsTensorParallelSplit(op), in.tensor_parallel) /
                          (expert ? ep : 1);
    to.params_bytes += in.weight_versions * params * models::DTypeBytes(op.dtype);
    to.grads_bytes += params * (in.fp32_grads ? kFp32Bytes : models::DTypeBytes(op.dtype));
    to.optimizer_bytes += params * state_bytes_per_param;
    if (in.fp8 && op.kind == models::OpKind::kDense) to.params_bytes += 2 * params;
  }
  const double d = in.data_parallel;
  if (in.zero_stage >= 1) m.optimizer_bytes /= d;
  if (in.zero_stage >= 2) m.grads_bytes /= d;
  if (in.zero_stage >= 3) m.params_bytes /= d;
  const double expert_d = d / ep;
  if (in.zero_stage >= 1) experts.optimizer_bytes /= expert_d;
  if (in.zero_stage >= 2) experts.grads_bytes /= expert_d;
  if (in.zero_stage >= 3) experts.params_bytes /= expert_d;
  m.params_bytes += experts.params_bytes;
  m.grads_bytes += experts.grads_bytes;
  m.optimizer_bytes += experts.optimizer_bytes;

  double largest_unit = 0;
  KeepOptions keep;
  keep.tensor_parallel = in.tensor_parallel;
  keep.recompute = in.recompute;
  keep.per_stage = in.recompute_per_stage;
  keep.sequence_parallel = in.sequence_parallel;
  keep.selective = in.recompute_selective;
  keep.fp8 = in.fp8;
  keep.expert_parallel = in.expert_parallel;
  const std::vector<double> kept = KeptBytesPerSample(graph, in.ops, keep, &largest_unit);
  double kept_per_sample = 0;
  for (double bytes : kept) kept_per_sample += bytes;
  // Context parallelism: each op keeps its S / c positions' share.
  const double c = std::max(1, in.context.degree);
  kept_per_sample /= c;
  largest_unit /= c;
  const double batch = in.micro_batch_size;
  m.activations_bytes = batch * in.micro_batches_in_flight * kept_per_sample;
  if (in.micro_batches_in_flight > 0) {
    m.recompute_bytes = batch * largest_unit;
    m.context_buffers_bytes =
        batch * ContextParallelBufferBytes(graph, in.ops, in.tensor_parallel, in.context);
    m.activations_bytes += m.recompute_bytes + m.context_buffers_bytes;
  }
  m.workspace_bytes = in.workspace_bytes;
  return m;
}

int MicroBatchesInFlight(config::PipelineSchedule schedule, int stage, int stages,
                         int micro_batches, int virtual_stages) {
  DTSIM_CHECK(stages >= 1 && stage >= 0 && stage < stages,
              "stage " + std::to_string(stage) + " not in [0, " + std::to_string(stages) + ")");
  DTSIM_CHECK(micro_batches >= 1 && virtual_stages >= 1,
              "micro_batches and virtual_stages must be >= 1");
  const int p = stages;
  const int m = micro_batches;
  const int v = virtual_stages;
  switch (schedule) {
    case config::PipelineSchedule::kGpipe:
      return m;
    case config::PipelineSchedule::kInterleaved:
      if (v > 1) {
        const long long warmup = 2LL * (p - stage - 1) + static_cast<long long>(v - 1) * p;
        const long long chunks = std::min(warmup + 1, static_cast<long long>(m) * v);
        return static_cast<int>((chunks + v - 1) / v);
      }
      [[fallthrough]];  // one chunk per device is 1F1B
    case config::PipelineSchedule::kOneFOneB:
      return std::min(p - stage, m);
    case config::PipelineSchedule::kPipeDream:
      // Per replica; the caller gives plan::PipeDreamInFlight (replicas).
      return p - stage;
    case config::PipelineSchedule::kPipeDream2BW:
      // No flush: the 1F1B steady state carries over iteration boundaries,
      // p - stage micro-batches in flight whatever m (Narayanan et al.
      // 2021, PipeDream-2BW, §3.2).
      return p - stage;
  }
  return m;
}

MemoryVerdict JudgeMemory(double peak_bytes, double capacity_bytes, double margin) {
  if (peak_bytes > capacity_bytes * (1 + margin)) return MemoryVerdict::kDoesNotFit;
  if (peak_bytes >= capacity_bytes * (1 - margin)) return MemoryVerdict::kTight;
  return MemoryVerdict::kFits;
}

const char* MemoryVerdictName(MemoryVerdict v) {
  switch (v) {
    case MemoryVerdict::kFits: return "fits";
    case MemoryVerdict::kTight: return "tight";
    case MemoryVerdict::kDoesNotFit: return "does_not_fit";
  }
  return "?";
}

std::string TightMemoryWarning(int device_index, double peak_bytes, double capacity_bytes,
                               double margin) {
  char text[320];
  std::snprintf(text, sizeof text,
                "memory is tight: device %d needs %.2f GiB of its %.2f GiB, within the memory "
                "model's %.0f%% margin (%.2f to %.2f GiB): the run may not fit; `dtsim run "
                "--memory-check refuse` refuses such plans",
                device_index, peak_bytes / kGiB, capacity_bytes / kGiB, margin * 100,
                capacity_bytes * (1 - margin) / kGiB, capacity_bytes * (1 + margin) / kGiB);
  return text;
}

// The CUDA context, its loaded modules and the driver's allocations: about
// 0.5 GiB on a Hopper GPU under CUDA 12 with lazy module loading (first
// principles: nvidia-smi shows a process holding ~500 MiB before its first
// allocation). cuBLAS's workspace: 32 MiB per handle on Hopper (cuBLAS
// documentation, cublasSetWorkspace: "the recommended size ... 32 MiB for
// Hopper"). NCCL: NCCL_BUFFSIZE, 4 MiB by default (NCCL documentation,
// environment variables), per channel for sending and for receiving, with up
// to 32 channels per communicator on NVLink/InfiniBand systems: 256 MiB per
// communicator a rank joins.
double GpuRuntimeBytes(int communicators) {
  constexpr double kMiB = 1024.0 * 1024.0;
  return 512 * kMiB + 32 * kMiB + std::max(0, communicators) * 2.0 * 32 * 4 * kMiB;
}

std::string DoesNotFit(int device_index, const MemoryBreakdown& memory, double capacity_bytes) {
  const double total = memory.Total();
  if (total <= capacity_bytes) return "";
  // One decimal, or more when one decimal would print the same need and
  // capacity ("needs 40.0 GiB, has 40 GiB").
  int decimals = 1;
  while (decimals < 3 && Gib(total, decimals, true) == Gib(capacity_bytes, decimals, true)) {
    ++decimals;
  }
  struct Part {
    const char* name;
    double bytes;
  };
  std::vector<Part> parts = {{"activations", memory.activations_bytes},
                             {"optimizer state", memory.optimizer_bytes},
                             {"parameters", memory.params_bytes},
                             {"gradients", memory.grads_bytes},
                             {"workspace", memory.workspace_bytes}};
  std::stable_sort(parts.begin(), parts.end(),
                   [](const Part& a, const Part& b) { return a.bytes > b.bytes; });
  std::string text = "does not fit: device " + std::to_string(device_index) + " needs " +
                     Gib(total, decimals, false) + " GiB, has " +
                     Gib(capacity_bytes, decimals, true) + " GiB (";
  bool first = true;
  for (const Part& part : parts) {
    if (part.bytes <= 0) continue;
    text += std::string(first ? "" : ", ") + part.name + " " + Gib(part.bytes, decimals, false);
    first = false;
  }
  return text + ")";
}

std::vector<std::pair<SimTime, double>> MemoryTimeline(const plan::Plan& plan,
                                                       const models::ModelGraph& graph,
                                                       const EngineResult& result,
                                                       plan::RankId rank, double static_bytes,
                                                       int tensor_parallel, bool recompute,
                                                       bool recompute_per_stage,
                                                       bool recompute_selective) {
  DTSIM_CHECK(rank >= 0 && rank < plan.num_ranks(),
              "rank " + std::to_string(rank) + " out of range");
  DTSIM_CHECK(result.timing.size() == plan.num_tasks(), "engine result is not from this plan");
  const auto is_backward = [](plan::TaskKind k) {
    return k == plan::TaskKind::kBackward || k == plan::TaskKind::kBackwardInput ||
           k == plan::TaskKind::kBackwardWeight;
  };
  const auto op_range = [&](const plan::Task& t) {
    DTSIM_CHECK(t.op >= 0 && t.op_count >= 1 &&
                    static_cast<std::size_t>(t.op) + static_cast<std::size_t>(t.op_count) <=
                        graph.num_ops(),
                "compute task's ops out of the graph's range");
    return std::pair<models::OpId, models::OpId>(static_cast<models::OpId>(t.op),
                                                 static_cast<models::OpId>(t.op + t.op_count));
  };

  // One activation = (iteration, micro-batch, op).
  struct Key {
    std::int32_t iteration, micro_batch;
    models::OpId op;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      std::size_t h = std::hash<std::int64_t>()(k.iteration);
      h = h * 1000003u ^ std::hash<std::int64_t>()(k.micro_batch);
      return h * 1000003u ^ std::hash<std::size_t>()(k.op);
    }
  };
  std::unordered_map<Key, SimTime, KeyHash> freed_at;  // end of the last backward
  std::vector<bool> on_rank(graph.num_ops(), false);
  for (std::size_t i = 0; i < plan.num_tasks(); ++i) {
    const plan::Task& t = plan.tasks()[i];
    if (t.rank != rank) continue;
    if (t.kind == plan::TaskKind::kForward) {
      const auto [begin, end] = op_range(t);
      for (models::OpId op = begin; op < end; ++op) on_rank[op] = true;
    } else if (is_backward(t.kind)) {
      const auto [begin, end] = op_range(t);
      for (models::OpId op = begin; op < end; ++op) {
        SimTime& at = freed_at.try_emplace(Key{t.iteration, t.micro_batch, op}, 0).first->second;
        at = std::max(at, result.timing[i].end);
      }
    }
  }
  std::vector<models::OpId> ops;
  for (models::OpId op = 0; op < graph.num_ops(); ++op) {
    if (on_rank[op]) ops.push_back(op);
  }
  KeepOptions keep;
  keep.tensor_parallel = tensor_parallel;
  keep.recompute = recompute;
  keep.per_stage = recompute_per_stage;
  keep.selective = recompute_selective;
  const std::vector<double> kept = KeptBytesPerSample(graph, ops, keep);

  std::vector<std::pair<SimTime, double>> changes;  // (time, +/- bytes)
  std::unordered_set<Key, KeyHash> allocated;
  for (std::size_t i = 0; i < plan.num_tasks(); ++i) {
    const plan::Task& t = plan.tasks()[i];
    if (t.rank != rank || t.kind != plan::TaskKind::kForward) continue;
    const auto [begin, end] = op_range(t);
    for (models::OpId op = begin; op < end; ++op) {
      const double bytes = kept[op] * t.batch;
      const auto freed = freed_at.find(Key{t.iteration, t.micro_batch, op});
      if (bytes == 0 || freed == freed_at.end()) continue;  // nothing kept for a backward
      // A recomputed forward runs again later: only its first run keeps.
      if (!allocated.insert(Key{t.iteration, t.micro_batch, op}).second) continue;
      const SimTime alloc = result.timing[i].end;
      DTSIM_CHECK(freed->second >= alloc,
                  "backward of op " + graph.op(op).name + " ends before its forward");
      changes.emplace_back(alloc, bytes);
      changes.emplace_back(freed->second, -bytes);
    }
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });

  std::vector<std::pair<SimTime, double>> steps = {{0, static_bytes}};
  double bytes = static_bytes;
  for (const auto& [time, delta] : changes) {
    bytes += delta;
    if (steps.back().first == time) {
      steps.back().second = bytes;
    } else {
      steps.emplace_back(time, bytes);
    }
  }
  return steps;
}

}  // namespace dtsim::sim
