// Builds tensor x pipeline x data parallel plans (Megatron-LM's 3D
// parallelism), and plain model parallelism by layer placement as its
// special case (one micro-batch, no tensor split).
//
// Ranks: r = replica x (p c t) + stage x (c t) + context_rank x t +
// tensor_rank (c = context-parallel degree, plan/context_parallel.h), so a
// tensor group sits on consecutive devices (inside a node first), then the
// context ranks, then the stages, then the data-parallel replicas (with expert parallelism:
// HybridOptions::expert). Each device of stage s holds the model chunks
// s, s + p, ..., s + (v - 1) p (v = virtual stages, interleaved schedule).
//
// Per micro-batch and chunk, the forward runs the chunk's ops in segments
// separated by Megatron's tensor-parallel all-reduces (after the forward of
// row-parallel ops, after the input gradient of column-parallel ops); the
// activation goes to the next chunk's device, the gradient back. After the
// last backward, the device's gradients are all-reduced over the replicas,
// then the optimizer updates the device's shard.
//
// Replicas and tensor ranks do exactly what their representative does, so
// only replica 0, tensor rank 0 of each stage is materialized when
// `symmetric`; collectives are still priced over their whole groups.
// Otherwise every rank is materialized: the t ranks of a tensor group (and
// the c context ranks of a replica) run the same schedule, and each tensor-
// parallel collective has one member task per rank (flows between the real
// members on the SimGrid engine; a slow rank holds up its whole group); an
// expert group's replicas are emitted together, so each of its all-to-alls
// has a member per rank, and each ring-attention member sends to its real
// successor (EmitContextAttentionGroup).
#pragma once

#include <utility>
#include <vector>

#include "models/graph.h"
#include "plan/compute_tasks.h"
#include "plan/context_parallel.h"
#include "plan/data_parallel.h"
#include "plan/plan.h"

namespace dtsim::plan {

enum class PipelineSchedule {
  kGpipe,        // all forwards of the micro-batches, then all backwards
  kOneFOneB,     // PipeDream-Flush: warm-up forwards, then one forward one backward
  kInterleaved,  // 1F1B over `virtual_stages` model chunks per device (Megatron-LM)
  // PipeDream-2BW (Narayanan et al. 2021, "Memory-Efficient Pipeline-
  // Parallel DNN Training", ICML): 1F1B without a flush across iterations;
  // each stage accumulates its m micro-batches' gradients and updates its
  // weights in the background (double-buffered: new micro-batches use the
  // previous version, so gradients are one version stale). In the plan the
  // update of iteration i (after the stage's data-parallel all-reduce) runs
  // after the stage's last backward of iteration i + 1. One chunk per
  // device; no weights shared across stages.
  kPipeDream2BW,
  // PipeDream (Narayanan et al. 2019, SOSP): 1F1B over round-robin
  // replicated stages, an update after every minibatch, weight stashing
  // (plan/pipedream.h).
  kPipeDream,
};
// "gpipe", "1f1b", "interleaved", "pipedream_2bw", "pipedream"
const char* PipelineScheduleName(PipelineSchedule s);

struct HybridOptions {
  int tensor = 1;          // t
  int pipeline = 1;        // p
  int micro_batch = 1;     // samples per micro-batch
  int micro_batches = 1;   // m, per replica and iteration
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  int virtual_stages = 1;  // v (interleaved)
  // Expert parallelism (plan/expert_parallel.h): the routed experts of the
  // mixture-of-experts layers sharded over groups of `expert` replicas; it
  // divides d. 1 = every rank holds every expert (no all-to-alls). With
  // expert > 1 the ranks are laid out as Megatron-LM's tp-ep-dp-pp order:
  // r = stage x (d t) + replica x t + tensor_rank, an expert group being
  // `expert` consecutive replicas of a stage (inside a node where it fits);
  // requires t = 1 and c = 1 for now.
  int expert = 1;
  // The p x v chunks as op ranges [begin, end) in model order; chunk c runs
  // on stage c % p. Together they cover every op.
  std::vector<std::pair<models::OpId, models::OpId>> chunks;
  bool recompute = false;  // re-run a chunk's forward before its backward
  // Selective recomputation: op ranges (attention's core, AttentionCores)
  // whose forward re-runs before the backward of the chunk holding them.
  RecomputeRanges recompute_ranges;
  // Megatron-LM's sequence parallelism (InSequenceParallelRegion): with
  // t > 1, reduce-scatters and all-gathers in place of the all-reduces.
  bool sequence_parallel = false;
  // Tensor-parallel collectives pipelined with the GEMM beside them
  // (Transformer Engine's userbuffers overlap, Megatron-LM --tp-comm-overlap;
  // PyTorch's AsyncTP): each all-gather before a column-parallel layer and
  // each reduce-scatter (all-reduce) after a row-parallel one is split into
  // t chunks exchanged while the GEMM works on the chunks already there.
  // The collective names that GEMM's task (Collective::overlap_with) and t
  // chunks; its exposed time is priced by the simulator.
  bool tp_comm_overlap = false;
  // The stage's data-parallel gradient reduction overlapped with compute
  // (Megatron-LM --overlap-grad-reduce, and --overlap-param-gather with
  // `distributed_optimizer`): its buckets are reduced as the last
  // micro-batch's backward produces them, and with the distributed
  // optimizer the parameter all-gather half runs under the next step's
  // first forward. The collective names those compute tasks
  // (Collective::overlap_with) and its bucket count as chunks.
  bool dp_overlap = false;
  // Megatron-LM's distributed optimizer (ZeRO-1): the gradient all-reduce
  // is a reduce-scatter, then an all-gather of the updated parameters.
  bool distributed_optimizer = false;
  // Parameters per data-parallel bucket; 0 = Megatron-LM's default,
  // max(40,000,000, 1,000,000 x d) (distributed_data_parallel.py).
  std::int64_t dp_bucket_params = 0;
  // Context parallelism (plan/context_parallel.h): `graph` is then a
  // context rank's shard (ContextParallelShard), and d = devices / (t p c).
  ContextParallel context;
  int iterations = 1;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  // Materialize only each stage's representative (see above); false:
  // every rank.
  bool symmetric = true;
  // kPipeDream: devices per stage (p entries adding up to the devices);
  // micro_batch is then one replica's minibatch and micro_batches the
  // minibatches of an iteration (PipeDreamRound).
  std::vector<int> stage_replicas;
  // kPipeDream: a replicated stage all-reduces its gradients in buckets of
  // this many bytes as its backward fills them (PyTorch DDP's default
  // bucket_cap_mb = 25); <= 0: one all-reduce after the whole backward.
  double bucket_bytes = 25.0 * 1024 * 1024;
};

// One tensor rank's share of `graph` split t ways: ops Megatron splits
// (IsTensorParallelSplit) have their FLOPs, parameters and memory traffic
// divided by t; the rest are replicated. Shapes stay those of the full
// tensors (collectives and pipeline sends use them).
// With `sequence_parallel`, the ops InSequenceParallelRegion also divide
// their FLOPs, memory traffic and saved activations by t (each rank works on
// s/t of the sequence).
models::ModelGraph TensorParallelShard(const models::ModelGraph& graph, int t,
                                       bool sequence_parallel = false);

// The pipeline stage of rank `r` of a plan BuildHybridPlan builds with
// `o` on `devices` devices (the rank layout above).
int HybridStageOfRank(const HybridOptions& o, int devices, RankId r);

// `graph` is one tensor rank's share of the model (TensorParallelShard).
// Throws UserError for impossible combinations (devices not divisible by
// t x p, interleaving with m not a multiple of p, ...).
Plan BuildHybridPlan(const models::ModelGraph& graph, const ClusterShape& cluster,
                     const HybridOptions& options);

// The order in which a stage runs its forwards (true) and backwards (false)
// of (micro-batch, local chunk j): chunk id = stage + j x p.
struct ScheduleStep {
  bool forward;
  int micro_batch;
  int local_chunk;
};
std::vector<ScheduleStep> StageSchedule(PipelineSchedule schedule, int stage, int stages,
                                        int micro_batches, int virtual_stages);

}  // namespace dtsim::plan
