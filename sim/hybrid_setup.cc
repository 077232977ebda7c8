#include "sim/hybrid_setup.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/units.h"
#include "plan/expert_parallel.h"
#include "plan/layers.h"
#include "plan/partition.h"
#include "plan/pipedream.h"
#include "plan/tensor_parallel.h"
#include "sim/cost/collectives.h"
#include "sim/memory.h"
#include "sim/plan_size.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

// Whether `name` is `part` inside sublayer `sublayer` ("layer3.attn.q").
bool Named(const std::string& name, std::string_view sublayer_part) {
  return name == sublayer_part ||
         (name.size() > sublayer_part.size() && name.ends_with(sublayer_part) &&
          name[name.size() - sublayer_part.size() - 1] == '.');
}

// Megatron-LM gives each of the t tensor ranks whole attention heads, whole
// key/value heads and an equal slice of every MLP (Shoeybi et al. 2019,
// section 3; Megatron-LM asserts num_attention_heads % t == 0,
// num_query_groups % t == 0 and ffn_hidden_size % t == 0): a t
// that does not divide them is a plan that cannot be built. The hidden size
// (heads x head size) then divides too; it is checked on its own for
// transformers whose heads are not listed. The vocabulary need not divide:
// Megatron pads it to a multiple of 128 x t (--make-vocab-size-divisible-by
// 128), and dtsim divides the unpadded vocabulary's cost by t (the padding
// is fewer than 128 x t rows, e.g. 50257 -> 50304 for GPT-2 at t = 1).
void CheckTensorSplit(const config::Scenario& s, const models::ModelGraph& graph, int t) {
  if (t == 1) return;
  const SourceLocation at = s.Where("parallelism.tensor_parallel");
  bool splits = false;
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    const models::Op& op = graph.op(v);
    if (!plan::IsTensorParallelSplit(op)) continue;
    splits = true;
    std::int64_t n = 0;
    std::string what;
    if (op.kind == models::OpKind::kReshape && Named(op.name, "attn.q") &&
        op.output_shape.size() == 3) {
      n = op.output_shape[0];  // (heads, sequence, head size)
      what = "attention heads";
    } else if (op.kind == models::OpKind::kReshape && Named(op.name, "attn.k") &&
               op.output_shape.size() == 3) {
      n = op.output_shape[0];  // (key/value heads, sequence, head size)
      what = "key/value heads (kv_heads)";
    } else if (op.kind == models::OpKind::kDense && Named(op.name, "attn.qkv") &&
               !op.input_shapes.empty() && !op.input_shapes[0].empty()) {
      n = op.input_shapes[0].back();
      what = "hidden size";
    } else if (op.kind == models::OpKind::kDense && Named(op.name, "mlp.fc2") &&
               !op.input_shapes.empty() && !op.input_shapes[0].empty()) {
      n = op.input_shapes[0].back();  // F, also with a gated MLP's 2F-wide fc1
      what = "MLP width (ffn_hidden)";
    } else {
      continue;
    }
    if (n % t != 0) {
      throw InfeasiblePlan(at,
                           "parallelism.tensor_parallel: " + std::to_string(t) +
                               " tensor ranks cannot share the " + std::to_string(n) + " " +
                               what + " of " + op.name + " evenly",
                           "Megatron-LM gives each tensor rank whole heads and an equal slice "
                           "of the MLP; choose a tensor_parallel that divides heads, kv_heads, "
                           "hidden and ffn_hidden");
    }
  }
  if (!splits) {
    throw InfeasiblePlan(at,
                         "parallelism.tensor_parallel: model '" + graph.name() +
                             "' has no layer that tensor parallelism splits",
                         "Megatron-style tensor parallelism splits the attention and MLP of "
                         "transformer blocks (plan/tensor_parallel.h); use tensor_parallel: 1");
  }
}

// schedule pipedream: the replicas per stage and the stages' layer units,
// given or chosen by PipeDream's planner on this cluster's links.
void SetUpPipeDream(const config::Scenario& s, const models::ModelGraph& graph,
                    const CostModel& cost_model, HybridSetup* x) {
  const auto& h = s.parallelism.hybrid;
  plan::HybridOptions& o = x->options;
  const int n = s.cluster.num_devices();
  const auto units = plan::LayerUnits(graph);
  if (!h.plan_replicas) {
    o.stage_replicas = h.stage_replicas.empty()
                           ? std::vector<int>(static_cast<std::size_t>(o.pipeline), n / o.pipeline)
                           : h.stage_replicas;
    if (o.pipeline > static_cast<int>(units.size()))
      throw InfeasiblePlan(s.Where("parallelism.pipeline_parallel"),
                           "the model has " + std::to_string(units.size()) +
                               " layer units, fewer than the " + std::to_string(o.pipeline) +
                               " stages",
                           "every stage needs at least one layer unit (`dtsim plan` lists them)");
  }
  if (!h.stage_layers.empty()) {
    try {
      o.chunks = plan::ChunksFromCounts(units, h.stage_layers);
    } catch (const UserError& e) {
      throw UserError(s.Where("parallelism.stage_layers"), e.message(), e.hint());
    }
    if (static_cast<int>(o.chunks.size()) != o.pipeline)
      throw UserError(s.Where("parallelism.stage_layers"),
                      "parallelism.stage_layers has " + std::to_string(o.chunks.size()) +
                          " entries, the pipeline has " + std::to_string(o.pipeline) + " stages");
    x->partition_note = "stages given by hand";
  } else {
    if (h.plan_replicas) {
      const double work = static_cast<double>(units.size()) * static_cast<double>(units.size()) *
                          static_cast<double>(n) * n;
      if (work > 2e9)
        throw UserError(s.Where("parallelism.stage_replicas"),
                        "PipeDream's planner searches units^2 x devices^2 = " +
                            std::to_string(static_cast<long long>(work)) +
                            " choices here, more than dtsim allows (2e9)",
                        "give stage_replicas and pipeline_parallel by hand");
    }
    plan::PipeDreamProblem pr;
    for (const auto& u : units) {
      double w = 0;
      for (models::OpId v = u.begin; v < u.end; ++v) w += graph.op(v).ParamBytes();
      pr.compute_s.push_back(TrainingSeconds(cost_model, graph, u.begin, u.end, o.micro_batch));
      pr.param_bytes.push_back(w);
      pr.boundary_bytes.push_back(plan::OutputBytes(graph, u.end - 1, o.micro_batch));
    }
    pr.devices = n;
    if (!h.plan_replicas) pr.replicas = o.stage_replicas;
    // One level, as the paper's planner on a flat cluster: replicas
    // all-reduce over the first devices, sends cross the slowest link.
    const hw::HardwareCatalog catalog = config::ScenarioCatalog(s);
    auto network = std::make_shared<Network>(MakeNetworkSpec(s, catalog));
    const int far = s.cluster.nodes > 1 ? s.cluster.devices_per_node : std::min(1, n - 1);
    const plan::CollectiveAlgorithm algorithm = s.parallelism.algorithm;
    pr.sync_s = [network, algorithm](double bytes, int m) {
      std::vector<int> ranks(static_cast<std::size_t>(m));
      for (int k = 0; k < m; ++k) ranks[static_cast<std::size_t>(k)] = k;
      return AllReduceSeconds(*network, algorithm, ranks, bytes);
    };
    pr.send_s = [network, far](double bytes) {
      return far == 0 ? 0.0 : network->TransferSeconds(0, far, bytes);
    };
    const plan::PipeDreamPartition got = plan::PlanPipeDream(pr);
    o.chunks = plan::ChunksFromCounts(units, got.units);
    if (h.plan_replicas) {
      o.stage_replicas = got.replicas;
      o.pipeline = static_cast<int>(got.replicas.size());
    }
    x->partition_note = std::string(h.plan_replicas ? "stages and replicas" : "stages") +
                        " chosen by PipeDream's planner: slowest stage " +
                        FormatSeconds(got.slowest_s) + " per minibatch";
  }
  CheckPipeDreamPlanSize(s, graph, o.stage_replicas);
  o.micro_batches = plan::PipeDreamRound(o.stage_replicas);
}

}  // namespace

double TrainingSeconds(const CostModel& cost_model, const models::ModelGraph& graph,
                       models::OpId begin, models::OpId end, int batch) {
  double c = 0;
  for (models::OpId v = begin; v < end; ++v) {
    const models::Op& op = graph.op(v);
    c += cost_model.ComputeSeconds(op, plan::TaskKind::kForward, batch);
    c += cost_model.ComputeSeconds(op, plan::TaskKind::kBackwardInput, batch);
    if (op.HasParams()) c += cost_model.ComputeSeconds(op, plan::TaskKind::kBackwardWeight, batch);
  }
  return c;
}

HybridSetup MakeHybridSetup(const config::Scenario& s, const models::ModelGraph& graph,
                            const CostModel& cost_model, int partition_micro_batches) {
  const auto& h = s.parallelism.hybrid;
  const int n = s.cluster.num_devices();
  HybridSetup x;
  plan::HybridOptions& o = x.options;
  const bool model = s.parallelism.strategy == config::Strategy::kModel;
  o.tensor = model ? 1 : h.tensor_parallel;
  o.pipeline = model && h.pipeline_parallel == 1 ? s.cluster.devices_per_node : h.pipeline_parallel;
  o.virtual_stages = h.schedule == config::PipelineSchedule::kInterleaved ? h.virtual_stages : 1;
  o.schedule = model ? plan::PipelineSchedule::kGpipe : h.schedule;
  o.recompute = s.parallelism.recompute;
  o.sequence_parallel = !model && h.sequence_parallel;
  o.tp_comm_overlap = !model && h.tp_comm_overlap;
  o.dp_overlap = !model && h.dp_overlap;
  o.distributed_optimizer = s.parallelism.zero_stage >= 1;
  if (!model) o.context = {h.context_parallel, h.context_parallel_kind};
  if (s.parallelism.recompute_selective) o.recompute_ranges = plan::AttentionCores(graph);
  o.algorithm = s.parallelism.algorithm;
  // Like every strategy: the report averages the iterations after the
  // first (stragglers' noise differs between them). exec plans one.
  o.iterations = s.workload.iterations;
  // Each factor is at most INT_MAX: the products below fit in 64 bits.
  if (!model && h.schedule == plan::PipelineSchedule::kPipeDream) {
    // config::CheckHybridShape has checked t = 1 and the replicas.
    o.micro_batch = h.micro_batch_size;
    o.bucket_bytes = s.parallelism.bucket_bytes;
    x.shard = graph;
    SetUpPipeDream(s, graph, cost_model, &x);
    return x;
  }
  const std::int64_t group = std::int64_t{o.tensor} * o.pipeline * o.context.degree;
  if (o.context.degree > 1 && n % group != 0) {
    throw InfeasiblePlan(s.Where("parallelism.context_parallel"),
                         "tensor_parallel x pipeline_parallel x context_parallel (" +
                             std::to_string(o.tensor) + " x " + std::to_string(o.pipeline) + " x " +
                             std::to_string(o.context.degree) + ") does not divide the " +
                             std::to_string(n) + " devices",
                         "data parallelism is devices / (tensor_parallel x pipeline_parallel x "
                         "context_parallel)");
  }
  if (o.tensor < 1 || o.pipeline < 1 || n % group != 0) {
    throw InfeasiblePlan(s.Where(o.pipeline > 1 ? "parallelism.pipeline_parallel"
                                                : "parallelism.tensor_parallel"),
                         "tensor_parallel x pipeline_parallel (" + std::to_string(o.tensor) +
                             " x " + std::to_string(o.pipeline) + ") does not divide the " +
                             std::to_string(n) + " devices",
                         "data parallelism is devices / (tensor_parallel x pipeline_parallel)");
  }
  const int d = static_cast<int>(n / group);
  if (model) {
    o.micro_batch = s.workload.batch_per_device;
    o.micro_batches = 1;
  } else {
    o.micro_batch = h.micro_batch_size;
    const std::int64_t per_step = std::int64_t{d} * h.micro_batch_size;
    const std::int64_t global = h.global_batch > 0 ? h.global_batch : per_step * o.pipeline;
    if (global % per_step != 0) {
      throw InfeasiblePlan(s.Where("parallelism.global_batch"),
                           "global_batch (" + std::to_string(global) +
                               ") is not a multiple of data parallelism x micro_batch_size (" +
                               std::to_string(d) + " x " + std::to_string(h.micro_batch_size) +
                               ")",
                           "each replica runs a whole number of micro-batches");
    }
    if (global / per_step > std::numeric_limits<int>::max()) {
      throw UserError(s.Where("parallelism.global_batch"),
                      "global_batch (" + std::to_string(global) + ") makes " +
                          std::to_string(global / per_step) +
                          " micro-batches per replica, more than dtsim can count");
    }
    o.micro_batches = static_cast<int>(global / per_step);
    if (o.schedule == plan::PipelineSchedule::kInterleaved && o.micro_batches % o.pipeline != 0) {
      throw InfeasiblePlan(
          s.Where(h.global_batch > 0 ? "parallelism.global_batch" : "parallelism.schedule"),
          "the interleaved schedule needs a number of micro-batches per replica (" +
              std::to_string(o.micro_batches) + ") divisible by pipeline_parallel (" +
              std::to_string(o.pipeline) + ")",
          "as Megatron-LM requires; change global_batch or micro_batch_size");
    }
  }
  CheckTensorSplit(s, graph, o.tensor);
  if (const std::string problem = plan::ContextParallelProblem(graph, o.context); !problem.empty())
    throw InfeasiblePlan(s.Where("parallelism.context_parallel"),
                         "parallelism.context_parallel: " + problem,
                         "context parallelism splits the sequence of decoder transformers; use "
                         "a context_parallel that divides it, or 1");
  o.expert = model ? 1 : h.expert_parallel;
  if (o.expert > 1) {
    const int experts = plan::ModelExperts(graph);
    if (experts == 0 || experts % o.expert != 0 || d % o.expert != 0)
      throw InfeasiblePlan(s.Where("parallelism.expert_parallel"),
                           experts == 0 ? "expert_parallel " + std::to_string(o.expert) +
                                              " shards experts, and model " + graph.name() +
                                              " has no mixture-of-experts layers"
                                        : "expert_parallel " + std::to_string(o.expert) +
                                              " must divide the model's " + std::to_string(experts) +
                                              " experts and data parallelism " + std::to_string(d),
                           "each rank of an expert group holds experts / expert_parallel experts");
  }
  x.shard = plan::TensorParallelShard(
      plan::ExpertParallelShard(plan::ContextParallelShard(graph, o.context), o.expert), o.tensor,
                                      o.sequence_parallel);
  const auto units = plan::LayerUnits(x.shard);
  const std::int64_t chunks = std::int64_t{o.pipeline} * o.virtual_stages;
  if (chunks > static_cast<std::int64_t>(units.size())) {
    throw InfeasiblePlan(
        s.Where(o.virtual_stages > 1 ? "parallelism.virtual_stages"
                                     : "parallelism.pipeline_parallel"),
        "the model has " + std::to_string(units.size()) + " layer units, fewer than the " +
            std::to_string(chunks) + " pipeline chunks",
        "every chunk needs at least one layer unit (`dtsim plan` lists them)");
  }
  const int parts = static_cast<int>(chunks);  // at most the number of units
  if (!h.stage_layers.empty()) {
    try {
      o.chunks = plan::ChunksFromCounts(units, h.stage_layers);
    } catch (const UserError& e) {
      throw UserError(s.Where("parallelism.stage_layers"), e.message(), e.hint());
    }
    if (static_cast<int>(o.chunks.size()) != parts)
      throw UserError(s.Where("parallelism.stage_layers"),
                      "parallelism.stage_layers has " + std::to_string(o.chunks.size()) +
                          " entries, the pipeline has " + std::to_string(parts) + " chunks");
  } else if (h.even_layers) {
    try {
      o.chunks = plan::EvenLayerChunks(units, parts);
    } catch (const UserError& e) {
      // The transformer layers do not divide over the chunks.
      throw InfeasiblePlan(s.Where("parallelism.pipeline_parallel"), e.message(), e.hint());
    }
  } else {
    // Balance the chunks' forward + backward time for one micro-batch,
    // within the device's memory.
    std::vector<double> cost, static_bytes, activation_bytes, working_bytes;
    MemoryInputs in;
    in.graph = &graph;
    in.tensor_parallel = o.tensor;
    in.context = o.context;
    in.data_parallel = d * o.context.degree;  // ZeRO shards over data x context ranks
    in.expert_parallel = o.expert;
    in.zero_stage = s.parallelism.zero_stage;
    in.optimizer = s.parallelism.optimizer;
    in.mixed_precision = hw::IsMixedPrecision(s.workload.precision);
    in.fp32_grads = s.workload.framework.fp32_grads;
    in.fp8 = s.workload.precision == hw::Precision::kFp8;
    in.micro_batch_size = o.micro_batch;
    in.recompute = s.parallelism.recompute;
    in.recompute_selective = s.parallelism.recompute_selective;
    in.sequence_parallel = o.sequence_parallel;
    for (const auto& u : units) {
      in.ops.clear();
      for (models::OpId v = u.begin; v < u.end; ++v) in.ops.push_back(v);
      cost.push_back(TrainingSeconds(cost_model, x.shard, u.begin, u.end, o.micro_batch));
      const MemoryBreakdown mem = DeviceMemory(in);
      static_bytes.push_back(mem.StaticBytes());
      // What one micro-batch keeps, apart from the recomputation's working
      // set, which a chunk holds once (not once per unit and micro-batch in
      // flight: the backward recomputes one unit of one micro-batch at a
      // time).
      activation_bytes.push_back(mem.activations_bytes - mem.recompute_bytes);
      working_bytes.push_back(mem.recompute_bytes);
    }
    const int m = partition_micro_batches > 0 ? partition_micro_batches : o.micro_batches;
    std::vector<int> in_flight;
    for (int k = 0; k < parts; ++k) {
      const int stage_in_flight =
          MicroBatchesInFlight(o.schedule, k % o.pipeline, o.pipeline, m, o.virtual_stages);
      in_flight.push_back((stage_in_flight + o.virtual_stages - 1) / o.virtual_stages);
    }
    // With v chunks per device, each chunk gets 1/v of its memory.
    bool fits = true;
    o.chunks = plan::BalancedChunksWithinMemory(units, cost, static_bytes, activation_bytes,
                                                in_flight,
                                                cost_model.device().memory_bytes / o.virtual_stages,
                                                parts, &fits, working_bytes);
    x.partition_note = fits ? "balanced within memory" : "balanced (no split fits in memory)";
  }
  return x;
}

}  // namespace dtsim::sim
