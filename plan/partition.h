// Splitting a model's layer units (plan/layers.h) into pipeline chunks.
#pragma once

#include <utility>
#include <vector>

#include "models/graph.h"
#include "plan/layers.h"

namespace dtsim::plan {

using OpRange = std::pair<models::OpId, models::OpId>;  // [begin, end)

// Contiguous, non-empty chunks of units that minimize the largest chunk's
// cost (the pipeline's slowest stage); ties go to the earliest split.
// Exact: dynamic programming over (units, parts), O(units^2 x parts).
// REQUIRES: 1 <= parts <= units.size(), unit_cost.size() == units.size().
std::vector<OpRange> BalancedChunks(const std::vector<LayerUnit>& units,
                                    const std::vector<double>& unit_cost, int parts);

// The same within a memory limit: chunk k made of units [a, b) needs
// static_bytes[a..b) + in_flight[k] x activation_bytes[a..b) +
// max(working_bytes[a..b)) (per-unit parameters, gradients and optimizer
// state; activations one micro-batch keeps; micro-batches the chunk's stage
// holds at its peak; what recomputing one unit for one micro-batch holds
// meanwhile, once per chunk as units are recomputed one at a time; empty
// working_bytes = none). Splits that exceed `capacity_bytes` are not
// considered; when none fits, the unconstrained split is returned and
// `*fits` is set to false.
std::vector<OpRange> BalancedChunksWithinMemory(const std::vector<LayerUnit>& units,
                                                const std::vector<double>& unit_cost,
                                                const std::vector<double>& static_bytes,
                                                const std::vector<double>& activation_bytes,
                                                const std::vector<int>& in_flight,
                                                double capacity_bytes, int parts, bool* fits,
                                                const std::vector<double>& working_bytes = {});

// Megatron-LM's split: the repeated blocks ("layer0", "layer1", ...) evenly
// over the chunks, the units before the first block (embeddings) with the
// first chunk and those after the last block (final norm, head, loss) with
// the last. Throws UserError when the blocks do not divide evenly.
std::vector<OpRange> EvenLayerChunks(const std::vector<LayerUnit>& units, int parts);

// Chunks of `counts[i]` consecutive units each. Throws UserError unless
// every count is >= 1 and they add up to units.size().
std::vector<OpRange> ChunksFromCounts(const std::vector<LayerUnit>& units,
                                      const std::vector<int>& counts);

}  // namespace dtsim::plan
