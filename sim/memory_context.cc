#include <algorithm>

#include "plan/layers.h"
#include "plan/tensor_parallel.h"
#include "sim/memory.h"

namespace dtsim::sim {

double ContextParallelBufferBytes(const models::ModelGraph& graph,
                                  const std::vector<models::OpId>& ops, int tensor_parallel,
                                  const plan::ContextParallel& context) {
  const int c = context.degree;
  if (c <= 1) return 0;
  double largest = 0;
  for (const auto& [b, e] : plan::AttentionCores(graph)) {
    if (std::find(ops.begin(), ops.end(), b) == ops.end()) continue;
    const models::Op& first = graph.op(b);
    const models::Op& last = graph.op(e - 1);
    const auto elements = [](const models::Shape& s) {
      return static_cast<double>(models::NumElements(s));
    };
    // The full graph's q, k, v: all S positions of every head.
    double q = 0, k = 0, v = 0;
    if (first.kind == models::OpKind::kAttention && first.input_shapes.size() == 3) {
      q = elements(first.input_shapes[0]);
      k = elements(first.input_shapes[1]);
      v = elements(first.input_shapes[2]);
    } else if (first.input_shapes.size() >= 2 && last.input_shapes.size() >= 2) {
      q = elements(first.input_shapes[0]);  // scores reads q and k
      k = elements(first.input_shapes[1]);
      v = elements(last.input_shapes[1]);   // context reads v
    }
    const double split = plan::IsTensorParallelSplit(first) ? tensor_parallel : 1;
    const double per_rank = models::DTypeBytes(first.dtype) / (split * c);
    const double bytes = context.kind == plan::ContextParallelKind::kRing
                             ? 4 * (k + v) * per_rank
                             : 2 * (q + k + v) * per_rank;
    largest = std::max(largest, bytes);
  }
  return largest;
}

}  // namespace dtsim::sim
