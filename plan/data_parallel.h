// Builds synchronous data-parallel plans: every rank holds the whole model,
// trains on its own batch, and gradients are all-reduced in buckets while
// backward runs (PyTorch DDP / Horovod style); with an averaging period H > 1,
// local SGD (parameters averaged every H minibatches).
#pragma once

#include <vector>

#include "models/graph.h"
#include "plan/compute_tasks.h"
#include "plan/plan.h"

namespace dtsim::plan {

struct ClusterShape {
  int nodes = 1;             // >= 1
  int devices_per_node = 1;  // >= 1; rank r lives on node r / devices_per_node
};

struct DataParallelOptions {
  int batch_per_rank = 32;   // samples per rank per iteration, >= 1
  // Samples per iteration of each rank when they differ (a mixed cluster's
  // batch balanced by speed), each >= 1; empty = batch_per_rank on every
  // rank. REQUIRES: empty or one entry per rank, every rank materialized.
  std::vector<int> batch_of_rank;
  int iterations = 1;        // >= 1
  // Gradients are packed, in the order backward produces them, into buckets
  // of at least this many bytes (a bucket closes once it reaches the cap,
  // as PyTorch DDP's bucket_cap_mb does); each bucket is one all-reduce.
  double bucket_bytes = 25.0 * 1024 * 1024;
  // true: a bucket's all-reduce may start as soon as its gradients exist;
  // false: all-reduces wait for the whole backward pass.
  bool overlap = true;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  // Local SGD: ranks all-reduce only every `averaging_period` iterations
  // (those with iteration % H == H - 1) and otherwise update alone. The
  // averaging iteration all-reduces, bucket by bucket as backward produces
  // them, the change of the parameters since the last average (the local
  // updates plus this step's gradient), which is the same volume as the
  // parameters and averages the replicas; H = 1 is plain synchronous data
  // parallelism.
  int averaging_period = 1;
  // Hierarchical averaging (config::AveragingLevel): levels below the
  // global average, by increasing period, each period dividing
  // averaging_period. At iteration it (step k = it + 1) that is not a global
  // one, the level with the largest period dividing k all-reduces, bucket by
  // bucket, within each group of group_size consecutive ranks.
  std::vector<AveragingLevel> averaging_levels;
  // Local SGD asked for with averaging_period 1: ranks still update alone
  // and then average parameters (Sync::averaged), which H > 1 always does.
  // Default false: with H = 1, gradients are averaged before the update.
  bool average_parameters = false;
  // Sync::post_local_steps and Sync::outer of the plan; they do not change
  // its tasks (the simulator prices the synchronous phase as a plan of its
  // own, the outer step as global_update_bytes_per_param). Defaults: none.
  int post_local_steps = 0;
  OuterOptimizer outer;
  // Local SGD's averages: their collectives carry this fraction of the
  // parameters' bytes (compression), and the update of an averaging
  // iteration streams this many more bytes per parameter ((de)quantizing;
  // Task::extra_bytes_per_param), plus `global_update_bytes_per_param` on
  // the global ones (the outer optimizer).
  // Streaming DiLoCo (Douillard et al. 2025, "Streaming DiLoCo with
  // overlapping communication"): the gradient buckets form
  // `streaming_fragments` F groups of consecutive buckets; fragment f
  // averages at the steps k with (k - f H / F) mod H = 0, and its result is
  // merged `streaming_overlap` tau steps later (the all-reduce runs under
  // the compute of those steps; the update of step k + tau waits for it).
  // F = 1: plain local SGD. REQUIRES: H divisible by F, no averaging_levels.
  int streaming_fragments = 1;
  int streaming_overlap = 0;
  // All-reduces summed on the hosts (Collective::via_host).
  bool via_host = false;
  double averaging_bytes_scale = 1;
  double averaging_update_bytes_per_param = 0;
  double global_update_bytes_per_param = 0;
  // Symmetric shortcut (see plan.h): materialize only rank 0's tasks when 1;
  // 0 = all ranks.
  int materialized_ranks = 0;
  // Activation recomputation: these op ranges re-run their forward before
  // their backward (compute_tasks.h); empty = none.
  RecomputeRanges recompute;
  // ZeRO-3 / FSDP (Rajbhandari et al. 2020 §5.3; PyTorch FSDP): parameters
  // are sharded over the ranks, so each gradient bucket is also the unit of
  // parameters gathered: an all-gather of the bucket's parameters before its
  // ops' forward and again before their backward, and a reduce-scatter of
  // its gradients in place of the all-reduce (1.5x the all-reduce's
  // traffic, ZeRO §7.2.2). The gathers are issued ahead of the compute in
  // pass order on the comm stream, the forward's after the previous step's
  // update, as FSDP's prefetching does without its limit on gathers in
  // flight; each op waits for its bucket's gather. Synchronous data
  // parallelism only (averaging_period 1, no levels).
  bool fsdp = false;
};

// The plan's buckets are GradientBuckets(graph, options.bucket_bytes)
// (plan/sync.h), its sync section the options' averaging fields.
// REQUIRES: graph non-empty. With one rank, no collectives are generated.
Plan BuildDataParallelPlan(const models::ModelGraph& graph, const ClusterShape& cluster,
                           const DataParallelOptions& options);

}  // namespace dtsim::plan
