// `dtsim search`: the fastest plans for a model on a cluster at a given
// global batch. The search enumerates, for each device count,
//   data x tensor x pipeline degrees (d t p = devices; t divides a node's
//   devices and, for transformers, their heads and widths; p at most the
//   model's layer units),
//   micro-batch sizes (d m divides the global batch),
//   pipeline schedules (1F1B, GPipe, interleaved with 2 chunks per device),
//   ZeRO stages and activation recomputation (none, selective where the
//   model has attention, full),
//   and for long sequences context parallelism (ring attention; see
//   SearchSpace::context_min_sequence),
// drops the candidates that cannot fit by a lower bound on their memory
// (the device's share of the parameters, gradients and optimizer state:
// the largest stage holds at least the mean), and simulates the rest as
// sweep points (study/sweep.h): the same loader-free scenarios, the fast path
// for plain data parallelism, infeasible rows with their reason. Ranked by
// throughput; the Pareto front is the best throughput per device count that
// beats every smaller count's.
//
// Not searched: parameter servers and local SGD (their trade-off is
// statistical: dtsim tta), sequence parallelism, PipeDream, stragglers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "models/graph.h"
#include "study/sweep.h"

namespace dtsim::study {

struct SearchSpace {
  // Device counts; empty = the cluster's, halved while it stays whole
  // nodes (128 nodes: 128, 64, ..., 1 node).
  std::vector<int> devices;
  // Micro-batch sizes; empty = the powers of two dividing the replica's
  // batch (global / d), and that batch itself (one micro-batch: no
  // accumulation).
  std::vector<int> micro_batch_sizes;
  std::vector<int> zero_stages = {0, 1};
  std::vector<int> tensor_parallel = {1, 2, 4, 8};  // those dividing a node's devices
  // Context parallelism (ring attention), searched for models with
  // attention whose sequence is at least `context_min_sequence` tokens:
  // the degrees that split the sequence (plan::ContextParallelProblem) and
  // the devices left after t. 32,768: below it activations rarely bind
  // (Llama 3 405B: CP 1 at 8,192 tokens, 16 at 131,072; Llama Team 2024,
  // Table 4).
  std::vector<int> context_parallel = {1, 2, 4, 8};
  std::int64_t context_min_sequence = 32768;
};

struct SearchCounts {
  std::int64_t candidates = 0;        // enumerated
  // Whose static memory alone exceeds the device: points with their
  // SweepPoint::infeasible set (rows of search.csv with the bound), not
  // simulated.
  std::int64_t pruned_by_memory = 0;
  // The least lower bound on a device's memory among the candidates (bytes).
  double least_static_bytes = std::numeric_limits<double>::infinity();
};

struct Search {
  // One point per candidate kept; axes (in this order): search.devices,
  // search.data_parallel, search.tensor_parallel, search.pipeline_parallel,
  // search.micro_batch_size, search.schedule ("none" without a pipeline),
  // search.zero_stage, search.recompute, and search.context_parallel
  // where the space has context parallelism. Each point's scenario is the base one
  // with strategy hybrid (data when t = p = 1 with one micro-batch), the
  // analytic engine and no trace.
  Sweep sweep;
  std::int64_t global_batch = 0;
  SearchCounts counts;
};

// The largest global batch the search splits (the largest published
// data-parallel batches are about 10^5 samples).
inline constexpr std::int64_t kMaxSearchGlobalBatch = std::int64_t{1} << 24;

// The search space of `base` (its model built as `graph`). The global
// batch is parallelism.global_batch, else batch_per_device x the cluster's
// devices. Throws UserError at the scenario for what the search cannot
// vary (stragglers, parameter servers, local SGD), a global batch above
// kMaxSearchGlobalBatch (before any plan is enumerated) or an empty space.
Search BuildSearch(const config::Scenario& base, const models::ModelGraph& graph,
                   const SearchSpace& space);

// Makes the rows a search recommends full simulations: re-simulates
// without shortcuts (SweepRunOptions::fast off) every point among the first
// `top` ranked and on the Pareto front whose figures were extrapolated,
// until those rows all come from full simulations (a corrected row can move
// others up). Marks infeasible, so that they are never ranked, the rows
// whose breakdown contradicts their step time (negative idle time, or
// compute + exposed communication + idle other than the step). `options`:
// jobs and progress (shard and `only` are set here). Returns the number of
// points re-simulated.
std::size_t RecheckSearch(const Search& search, std::vector<PointResult>* results, std::size_t top,
                          SweepRunOptions options = {});

// Why a feasible row's breakdown contradicts its step time; "" when it adds
// up (within 1e-6 of the step).
std::string BreakdownProblem(const PointResult& row);

// When no plan fits: what would. The least memory per device a plan
// needs (the simulated plans', else the memory bound's), against the
// device's, and the smallest device count (doubling the largest searched,
// up to 2^16 times) at which the memory bound admits a plan; "" when some
// plan fits.
std::string WhatWouldFit(const config::Scenario& base, const models::ModelGraph& graph,
                         const SearchSpace& space, const Search& search,
                         const std::vector<PointResult>& results);

// The feasible points, fastest first (ties: fewer devices, then less
// memory per device, then point order).
std::vector<std::size_t> RankSearch(const std::vector<PointResult>& results);

// The Pareto front of throughput against devices: for each device count in
// increasing order, its fastest feasible point when faster than every point
// with fewer devices. In increasing device count.
std::vector<std::size_t> ParetoFront(const std::vector<PointResult>& results);

}  // namespace dtsim::study
