#include "sim/cost_model.h"

#include <algorithm>

#include "common/error.h"

namespace dtsim::sim {

double DefaultComputeEfficiency(models::OpKind kind) {
  switch (kind) {
    case models::OpKind::kDense: return 0.75;
    case models::OpKind::kConv2d: return 0.55;
    case models::OpKind::kMatMul: return 0.6;
    default: return 0.5;
  }
}

CostModel::CostModel(hw::DeviceSpec device, hw::Precision precision, CostModelOptions options)
    : device_(std::move(device)), precision_(precision), options_(std::move(options)) {
  peak_ = device_.PeakFlopRate(precision_);
  DTSIM_CHECK(peak_ > 0, "device '" + device_.name + "' has no peak flop rate");
  DTSIM_CHECK(device_.memory_bw_bytes_per_s > 0, "device has no memory bandwidth");
}

double CostModel::ComputeSeconds(const models::Op& op, plan::TaskKind kind, int batch) const {
  double flops = 0, bytes = 0;
  switch (kind) {
    case plan::TaskKind::kForward:
      flops = op.fwd_flops * batch;
      bytes = op.FwdBytes(batch);
      break;
    case plan::TaskKind::kBackwardInput:
      flops = op.bwd_input_flops * batch;
      bytes = op.BwdBytes(batch) - op.ParamBytes();  // no weight gradient written
      break;
    case plan::TaskKind::kBackwardWeight:
      flops = op.bwd_weight_flops * batch;
      bytes = op.BwdBytes(batch);
      break;
    default:
      DTSIM_CHECK(false, "not a compute task kind");
  }
  if (flops == 0 && bytes == 0) return 0;
  auto it = options_.compute_efficiency.find(op.kind);
  const double eff =
      it != options_.compute_efficiency.end() ? it->second : DefaultComputeEfficiency(op.kind);
  const double t_compute = flops / (peak_ * eff);
  const double t_memory = bytes / (device_.memory_bw_bytes_per_s * options_.memory_efficiency);
  return std::max(t_compute, t_memory) + options_.kernel_launch_s;
}

double CostModel::OptimizerSeconds(std::int64_t params, int contributions) const {
  if (params <= 0) return 0;
  const double bytes = static_cast<double>(params) *
                       (options_.optimizer_bytes_per_param + 4.0 * std::max(0, contributions - 1));
  return bytes / (device_.memory_bw_bytes_per_s * options_.memory_efficiency) +
         options_.kernel_launch_s;
}

}  // namespace dtsim::sim
