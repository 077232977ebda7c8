// Per-device memory of training: what one device holds at its peak, whether
// that fits, and (from a simulated run) how its memory evolves over time.
//
// The footprint of a device is five parts:
//
//   params       each op's parameters in the op's dtype (2 bytes in mixed
//                precision, 4 in fp32)
//   grads        one gradient per parameter, same dtype
//   optimizer    fp32 state per parameter: the master copy of the weights in
//                mixed precision (4 bytes) plus the optimizer's buffers (SGD
//                0, momentum 1, Adam 2 buffers of 4 bytes)
//   activations  what forward keeps for backward, for every micro-batch in
//                flight at the peak (see MicroBatchesInFlight)
//   workspace    a fixed amount given by the caller (default 0)
//
// Adam in mixed precision is thus 2 + 2 + (4 + 4 + 4) = 16 bytes per
// parameter (Rajbhandari et al. 2020, "ZeRO", §3.1: 2 + 2 + K with K = 12).
//
// Parallelism divides the parts (Shoeybi et al. 2019; Rajbhandari et al.
// 2020 §5):
//   tensor parallel t   params, grads and optimizer state of the ops
//                       Megatron splits (plan/tensor_parallel.h) / t, and
//                       their saved activations except the replicated inputs
//                       of column-parallel layers; replicated ops (layer
//                       norms, dropouts after proj/fc2, residuals) are not
//                       divided (no sequence parallelism): Korthikanti et
//                       al. 2022 Eq. 2.
//   ZeRO stage 1        optimizer state / d      (d = data-parallel replicas)
//   ZeRO stage 2        + gradients / d
//   ZeRO stage 3        + parameters / d
// Not modelled: ZeRO-3's per-layer gather buffer, the all-reduce buckets of
// data parallelism, the CUDA context and allocator fragmentation (give them
// as workspace_bytes), and the bias of row-parallel layers being replicated
// (it is divided by t with the layer's other parameters).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/units.h"
#include "config/scenario.h"
#include "models/graph.h"
#include "plan/compute_tasks.h"
#include "plan/context_parallel.h"
#include "plan/plan.h"
#include "sim/engine/engine.h"

namespace dtsim::sim {

// Bytes one device holds at its peak, by part.
struct MemoryBreakdown {
  double params_bytes = 0;
  double grads_bytes = 0;
  double optimizer_bytes = 0;    // optimizer state, fp32 master copy included
  double activations_bytes = 0;  // saved for backward, all micro-batches in flight
  // Of activations_bytes: what recomputing the largest unit of one
  // micro-batch holds meanwhile (0 without recomputation), held once
  // whatever the micro-batches in flight.
  double recompute_bytes = 0;
  // Of activations_bytes: context parallelism's communication buffers
  // (ContextParallelBufferBytes), held once.
  double context_buffers_bytes = 0;
  double workspace_bytes = 0;    // MemoryInputs::workspace_bytes

  // params + grads + optimizer: what the device holds for the whole step.
  double StaticBytes() const { return params_bytes + grads_bytes + optimizer_bytes; }
  double Total() const { return StaticBytes() + activations_bytes + workspace_bytes; }
};

// What DeviceMemory needs to know about one device.
struct MemoryInputs {
  // The model: per-op params, saved elements per sample and dtype. Must stay
  // live during the call. REQUIRES: non-null.
  const models::ModelGraph* graph = nullptr;
  // The ops this device holds (a pipeline stage's op range(s); every op for
  // data parallelism), each at most once. Empty = none.
  std::vector<models::OpId> ops;
  // Ops of other stages whose parameters this device also holds as a copy:
  // the embedding table a tied LM head on the last pipeline stage shares
  // (Megatron-LM keeps a copy there and all-reduces its gradient with the
  // first stage, plan/hybrid.cc). Their parameters, gradients and optimizer
  // state count; they keep no activations here.
  std::vector<models::OpId> weight_copies;
  // t: tensor-split ops' params and activations divide by t (>= 1).
  int tensor_parallel = 1;
  // d: the data-parallel replicas ZeRO shards over (>= 1).
  int data_parallel = 1;
  // ep (plan/expert_parallel.h, divides d and the experts): the routed
  // experts' params, gradients and optimizer state divide by ep, and ZeRO
  // shards them over the d / ep replicas holding the same experts; their
  // activations are those of the rank holding the busiest expert
  // (plan::RoutedLoadFactor).
  int expert_parallel = 1;
  // 0: no sharding; 1: optimizer state / d; 2: + gradients / d;
  // 3: + parameters / d.
  int zero_stage = 0;
  config::OptimizerKind optimizer = config::OptimizerKind::kAdam;
  // True for fp16/bf16 training with fp32 master weights: adds 4 bytes per
  // parameter to the optimizer state. Params and grads take the ops' dtype
  // (set the graph's dtype with ModelGraph::SetDType).
  bool mixed_precision = false;
  // Gradients in fp32 (4 bytes per parameter) whatever the parameters'
  // dtype, sharded only from ZeRO stage 2 on (config::FrameworkProfile::
  // fp32_grads: Megatron-LM's main_grad buffers).
  bool fp32_grads = false;
  // fp8 (hw::Precision::kFp8, with mixed_precision): each dense layer also
  // holds its weight in FP8 and the FP8 transpose of it, 2 bytes per
  // parameter counted with the parameters (Transformer Engine keeps both on
  // Hopper, whose FP8 GEMMs take only the TN layout), and keeps its saved
  // input as the FP8 transpose made for its weight gradient, 1 byte per
  // value instead of the dtype's (sim/cost/op_kernels.h).
  bool fp8 = false;
  // More fp32 state per parameter, counted with the optimizer's: local
  // SGD's outer optimizer keeps the previous parameters and a momentum (8).
  double extra_state_bytes_per_param = 0;
  // Copies of the weights held (PipeDream-2BW's double buffer: 2).
  int weight_versions = 1;
  int micro_batch_size = 1;  // samples per micro-batch (>= 1)
  // Micro-batches whose activations are held at the peak (>= 0), e.g.
  // MicroBatchesInFlight(...) for a pipeline stage, 1 without pipelining.
  int micro_batches_in_flight = 1;
  // Full activation recomputation (Megatron-LM's "full" checkpointing,
  // Korthikanti et al. 2022 §4): forward keeps only each layer unit's input
  // (plan/layers.h units); backward recomputes one unit at a time, so the
  // full activations of the largest unit are held once more, for one
  // micro-batch. A unit whose saved activations are smaller than its input
  // keeps them instead (recomputing it would save nothing).
  bool recompute = false;
  // With `recompute`: checkpoint at the stage's input instead of each layer
  // unit's, as GPipe does (Huang et al. 2019 §2.3, "Re-materialization":
  // during forward each accelerator only stores the activations at the
  // partition boundaries; torchgpipe checkpoints each partition per
  // micro-batch). Forward then keeps only the stage's input per micro-batch,
  // and backward recomputes the whole stage for one micro-batch at a time,
  // holding its full activations once. For a CNN this is far smaller than
  // per-block checkpoints: ResNet's block inputs are large feature maps,
  // while a stage's input is one of them (or the image).
  bool recompute_per_stage = false;
  // Selective recomputation (Korthikanti et al. 2022, §5): attention's core
  // (plan::AttentionCores) keeps none of its s x s activations; one core's
  // are held while it is recomputed. Exclusive with `recompute`.
  bool recompute_selective = false;
  // Sequence parallelism with t > 1 (plan::InSequenceParallelRegion): what
  // the replicated ops and the column-parallel inputs keep divides by t too,
  // so a transformer layer keeps sbh (34 / t + 5as / (ht)) bytes in fp16
  // (Korthikanti et al. 2022, Table 2).
  bool sequence_parallel = false;
  // Context parallelism (plan/context_parallel.h): every op works on S / c
  // of each sequence, so what each keeps divides by c; the ring's or
  // Ulysses' buffers come on top (ContextParallelBufferBytes). ZeRO's
  // sharding over data x context ranks is the caller's data_parallel.
  plan::ContextParallel context;
  // Fixed per-device bytes added to the total: cuBLAS/cuDNN workspaces,
  // the CUDA context, communication buffers. Default 0 = not counted, so
  // every byte of the result comes from the model; frameworks typically
  // need 0.5-2 GiB on top, which a caller may put here.
  double workspace_bytes = 0;
};

// The footprint of one device at its peak (see the file comment).
// Throws InternalError when an input is out of range (null graph, op id out
// of range or repeated, t, d or micro_batch_size < 1, zero_stage not 0-3).
MemoryBreakdown DeviceMemory(const MemoryInputs& inputs);

// Bytes per sample that `ops` keep from forward to backward: each op's
// saved elements in its dtype (÷ t where TensorParallelSplitsSavedActivations),
// or with `recompute` each unit's input instead (see MemoryInputs::recompute).
// `*largest_unit_bytes` (optional) receives, with `recompute`, the full
// per-sample activations of the largest recomputed unit (the extra held
// while it is recomputed), else 0. Returned per op id of the graph (size
// graph.num_ops(); ops not in `ops` are 0); with `recompute` a unit's
// input is counted on the first of its ops.
// `per_stage` (with `recompute`): `ops` form one unit whose input is kept
// (MemoryInputs::recompute_per_stage).
struct KeepOptions {
  int tensor_parallel = 1;
  bool recompute = false;          // full, per layer unit (or per stage)
  bool per_stage = false;
  bool selective = false;          // attention's core only
  bool sequence_parallel = false;
  bool fp8 = false;                // dense ops keep their input in FP8 (MemoryInputs::fp8)
  int expert_parallel = 1;         // MemoryInputs::expert_parallel
};
// The same with every option; `*recomputed` then also lists the attention
// cores selective recomputation re-runs.
std::vector<double> KeptBytesPerSample(const models::ModelGraph& graph,
                                       const std::vector<models::OpId>& ops, const KeepOptions& options,
                                       double* largest_unit_bytes = nullptr,
                                       plan::RecomputeRanges* recomputed = nullptr);

// `*recomputed` (optional) receives the op ranges whose forward is
// recomputed (the units that keep their input instead of their activations).
std::vector<double> KeptBytesPerSample(const models::ModelGraph& graph,
                                       const std::vector<models::OpId>& ops, int tensor_parallel,
                                       bool recompute, double* largest_unit_bytes = nullptr,
                                       bool per_stage = false,
                                       plan::RecomputeRanges* recomputed = nullptr);

// The ranges full recomputation re-runs, the same that KeptBytesPerSample
// checkpoints: each layer unit of `ops` whose input is smaller than the
// activations it saves (or the whole of `ops` with `per_stage`), as
// [first op, last op + 1). Plans re-run exactly these, so the memory saved
// and the compute paid agree.
plan::RecomputeRanges RecomputedRanges(const models::ModelGraph& graph,
                                       const std::vector<models::OpId>& ops, int tensor_parallel,
                                       bool per_stage = false);

// Bytes per sample of context parallelism's communication buffers on a
// device holding `ops` of the full `graph`, at its largest attention core:
//   ring:    4 key/value blocks: during the backward, the block in hand
//            and the one arriving, each with its dK/dV partial sums
//            (Transformer Engine's two p2p buffers of [kv, dkv]); a block is
//            the k and v of S / c positions, (2 G (S / c) D) elements;
//   ulysses: 2 x (q, k, v) of the rank: the all-to-all's input and output
//            buffers, ((A + 2 G) (S / c) D) elements each.
// Tensor-split cores (t > 1) hold 1/t of them. 0 for c = 1.
double ContextParallelBufferBytes(const models::ModelGraph& graph,
                                  const std::vector<models::OpId>& ops, int tensor_parallel,
                                  const plan::ContextParallel& context);

// Micro-batches whose activations pipeline stage `stage` (0-based, of
// `stages` = p) holds at its peak, with m = micro_batches:
//   GPipe        m: every forward runs before the first backward.
//   1F1B         min(p - stage, m): stage s runs p - s - 1 warm-up forwards,
//                then one forward before each backward (Narayanan et al.
//                2021 §2.2.1; PipeDream-Flush).
//   PipeDream-2BW p - stage: 1F1B's steady state, never flushed.
//   interleaved  v = virtual_stages model chunks per device. Megatron-LM's
//                schedule (Narayanan et al. 2021 §2.2.2; code:
//                megatron/core/pipeline_parallel/schedules.py,
//                forward_backward_pipelining_with_interleaving) runs
//                  w = 2 (p - s - 1) + (v - 1) p
//                warm-up chunk forwards, then one forward before each
//                backward, so it holds min(w + 1, m v) chunk activations,
//                each 1/v of the stage's: (w + 1) / v micro-batches of the
//                whole stage. On the first stage that is
//                  (2 (p - 1) + (v - 1) p + 1) / v = p + (p - 1) / v
//                    = p (1 + (p - 1) / (p v)),
//                i.e. (1 + (p - 1) / (p v)) times 1F1B's p.
//                Rounded up to a whole micro-batch (over-estimates by less
//                than one micro-batch). v = 1 is 1F1B.
// REQUIRES: 0 <= stage < stages, micro_batches >= 1, virtual_stages >= 1.
int MicroBatchesInFlight(config::PipelineSchedule schedule, int stage, int stages,
                         int micro_batches, int virtual_stages);

// "" when `memory` fits in `capacity_bytes`, else a one-line message:
//   "does not fit: device 3 needs 41.2 GiB, has 40 GiB (activations 28.1,
//    optimizer state 9.0, parameters 2.2, gradients 1.9)"
// GiB with one decimal (the capacity without ".0" when whole; two or three
// decimals when one would print the need equal to the capacity), non-zero
// parts largest first.
// The memory model's error band: +-10%, the accuracy its checks against
// published peak-memory figures are held to (docs/predictions.md,
// "Memory"). Not a measured error: too few published peaks are at hand.
inline constexpr double kMemoryModelMargin = 0.10;

// fits: the peak is below capacity x (1 - margin); tight: within the margin
// either side of the capacity (the run may or may not fit); does not fit:
// above capacity x (1 + margin).
enum class MemoryVerdict { kFits, kTight, kDoesNotFit };
MemoryVerdict JudgeMemory(double peak_bytes, double capacity_bytes, double margin);
const char* MemoryVerdictName(MemoryVerdict v);  // "fits", "tight", "does_not_fit"
// "memory is tight: device D needs X GiB of C GiB, within the memory
// model's 10% margin ..."
std::string TightMemoryWarning(int device_index, double peak_bytes, double capacity_bytes,
                               double margin);

// What a GPU process holds besides its tensors: the CUDA context with its
// modules, cuBLAS's workspace and NCCL's buffers for `communicators`
// communicators (sim/memory.cc gives the sources).
double GpuRuntimeBytes(int communicators);

std::string DoesNotFit(int device_index, const MemoryBreakdown& memory, double capacity_bytes);

// Memory of `rank` over a simulated run, as steps (time, bytes after every
// change at that time), sorted by time and starting with (0, static_bytes):
// static_bytes (params + grads + optimizer, e.g. MemoryBreakdown::StaticBytes)
// plus activations, allocated when a kForward task of (iteration,
// micro-batch) ends (each of its ops [op, op + op_count) keeps
// KeptBytesPerSample x task.batch) and freed when the last backward task
// (kBackward, kBackwardInput or kBackwardWeight) of the same op, iteration
// and micro-batch on the rank ends. An op with no backward task on the rank
// is freed when its forward ends. Recomputation's transient (one unit's full
// activations during its backward) is not in the timeline.
// REQUIRES: `result` comes from running `plan`; rank < plan.num_ranks().
std::vector<std::pair<SimTime, double>> MemoryTimeline(
    const plan::Plan& plan, const models::ModelGraph& graph, const EngineResult& result,
    plan::RankId rank, double static_bytes, int tensor_parallel = 1, bool recompute = false,
    bool recompute_per_stage = false, bool recompute_selective = false);

}  // namespace dtsim::sim
