#include "plan/sync.h"

#include "models/graph.h"

namespace dtsim::plan {

const char* StrategyName(Strategy s) {
  switch (s) {
    case Strategy::kData: return "data";
    case Strategy::kLocalSgd: return "local_sgd";
    case Strategy::kParameterServer: return "parameter_server";
    case Strategy::kModel: return "model";
    case Strategy::kHybrid: return "hybrid";
    case Strategy::kChakra: return "chakra";
  }
  return "?";
}

const char* AveragedName(Averaged a) {
  return a == Averaged::kGradients ? "gradients" : "parameters";
}

std::vector<GradientBucket> GradientBuckets(const models::ModelGraph& graph, double bucket_bytes) {
  std::vector<GradientBucket> buckets;
  GradientBucket current;
  bool open = false;
  for (models::OpId v = graph.num_ops(); v-- > 0;) {  // backward order
    const models::Op& op = graph.op(v);
    if (!op.HasParams()) continue;
    if (!open) current = {static_cast<std::int32_t>(v), static_cast<std::int32_t>(v) + 1, 0};
    open = true;
    current.first_op = static_cast<std::int32_t>(v);
    current.bytes += op.ParamBytes();
    if (current.bytes >= bucket_bytes) {
      buckets.push_back(current);
      open = false;
    }
  }
  if (open) buckets.push_back(current);
  return buckets;
}

}  // namespace dtsim::plan
