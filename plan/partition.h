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
