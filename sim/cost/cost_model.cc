#include "sim/cost/cost_model.h"

#include "sim/cost/slowest_gpu.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "common/error.h"
#include "sim/cost/op_kernels.h"

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
  if (options_.kernel_model && device_.HasMicroarchitecture())
    kernels_.emplace(device_, options_.kernel_params);
  pace_ = SlowestGpuPace(options_.gpu_speed_spread.value_or(DefaultGpuSpeedSpread(device_.arch)),
                         options_.synchronised_gpus);
}

double EfficiencyAtRows(const std::map<std::int64_t, double>& points, double rows) {
  DTSIM_CHECK(!points.empty(), "no efficiency points");
  if (rows <= static_cast<double>(points.begin()->first)) return points.begin()->second;
  if (rows >= static_cast<double>(points.rbegin()->first)) return points.rbegin()->second;
  auto hi = points.upper_bound(static_cast<std::int64_t>(rows));
  auto lo = std::prev(hi);
  const double x0 = std::log2(static_cast<double>(lo->first));
  const double x1 = std::log2(static_cast<double>(hi->first));
  const double f = (std::log2(rows) - x0) / (x1 - x0);
  return lo->second + f * (hi->second - lo->second);
}

double CostModel::ComputeSeconds(const models::Op& op, plan::TaskKind kind, int batch) const {
  return ComputeTime(op, kind, batch).Total();
}

ComputeParts CostModel::ComputeTime(const models::Op& op, plan::TaskKind kind, int batch,
                                    CostSource* source) const {
  const ComputeParts t = TypicalGpuTime(op, kind, batch, source);
  return ComputeParts{t.fp8_gemm_s * pace_, t.fp8_cast_s * pace_, t.other_s * pace_};
}

ComputeParts CostModel::TypicalGpuTime(const models::Op& op, plan::TaskKind kind, int batch,
                                       CostSource* source) const {
  CostSource unused;
  CostSource& src = source != nullptr ? *source : unused;
  src = CostSource::kModelled;
  if (options_.measured == nullptr) return ModelledTime(op, kind, batch);
  if (kind == plan::TaskKind::kForward) {
    if (auto m = options_.measured->Seconds(op, MeasuredPass::kForward, batch)) {
      src = m->source;
      return ComputeParts{0, 0, m->seconds};
    }
    return ModelledTime(op, kind, batch);
  }
  const bool input = kind == plan::TaskKind::kBackwardInput;
  DTSIM_CHECK(input || kind == plan::TaskKind::kBackwardWeight, "not a compute task kind");
  const std::optional<MeasuredTime> m = options_.measured->Seconds(op, MeasuredPass::kBackward, batch);
  if (!m) return ModelledTime(op, kind, batch);
  double share;
  if (!m->backward_input) {
    // The measured backward computed no input gradient: it is all weight
    // gradient, and an input gradient asked for is the model's.
    if (input) return ModelledTime(op, kind, batch);
    share = 1;
  } else {
    const double in = ModelledTime(op, plan::TaskKind::kBackwardInput, batch).Total();
    const double w = op.HasParams()
                         ? ModelledTime(op, plan::TaskKind::kBackwardWeight, batch).Total()
                         : 0;
    share = in + w > 0 ? (input ? in : w) / (in + w) : (input ? 1 : 0);
  }
  src = m->source;
  return ComputeParts{0, 0, m->seconds * share};
}

ComputeParts CostModel::ModelledTime(const models::Op& op, plan::TaskKind kind, int batch) const {
  ComputeParts parts;
  if (kernels_) {
    for (const KernelCall& k : OpKernels(op, kind, batch, precision_)) {
      bool cast = false;
      const double s = KernelSeconds(*kernels_, k);
      if (!IsFp8Kernel(k, &cast)) {
        parts.other_s += s;
      } else if (cast) {
        parts.fp8_cast_s += s;
      } else {
        parts.fp8_gemm_s += s;
      }
    }
    const double e = options_.kernel_efficiency * SustainedFraction(device_.arch);
    return ComputeParts{parts.fp8_gemm_s / e, parts.fp8_cast_s / e, parts.other_s / e};
  }
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
  if (flops == 0 && bytes == 0) return parts;
  auto it = options_.compute_efficiency.find(op.kind);
  double eff =
      it != options_.compute_efficiency.end() ? it->second : DefaultComputeEfficiency(op.kind);
  if (op.kind == models::OpKind::kDense && !options_.dense_efficiency_by_rows.empty() &&
      !op.input_shapes.empty() && !op.input_shapes[0].empty()) {
    const models::Shape& in = op.input_shapes[0];
    const double rows = static_cast<double>(batch) *
                        static_cast<double>(models::NumElements(in) / in.back());
    eff = EfficiencyAtRows(options_.dense_efficiency_by_rows, rows);
  }
  if (op.kind == models::OpKind::kConv2d && !options_.conv_efficiency_by_flops.empty() &&
      op.fwd_flops > 0) {
    eff = EfficiencyAtRows(options_.conv_efficiency_by_flops, static_cast<double>(op.fwd_flops));
  }
  const bool fp8_gemm = precision_ == hw::Precision::kFp8 && op.kind == models::OpKind::kDense;
  const double peak = precision_ == hw::Precision::kFp8 && !fp8_gemm
                          ? device_.PeakFlopRate(hw::Precision::kBf16)
                          : peak_;
  const double t_compute = flops / (peak * eff);
  const double t_memory = bytes / (device_.memory_bw_bytes_per_s * options_.memory_efficiency);
  (fp8_gemm ? parts.fp8_gemm_s : parts.other_s) =
      std::max(t_compute, t_memory) + options_.kernel_launch_s;
  return parts;
}

double CostModel::Fp8WeightCastSeconds(const models::Op& op) const {
  double seconds = 0;
  for (const KernelCall& k : Fp8WeightCastKernels(op, precision_))
    seconds += kernels_ ? KernelSeconds(*kernels_, k)
                        : TypicalStreamSeconds(k.bytes) + options_.kernel_launch_s;
  return seconds * pace_;
}

double CostModel::Fp8ScaleUpdateSeconds(int fp8_tensors) const {
  if (precision_ != hw::Precision::kFp8 || fp8_tensors <= 0) return 0;
  const KernelCall k = Fp8ScaleUpdateKernel(fp8_tensors);
  return pace_ * (kernels_ ? KernelSeconds(*kernels_, k)
                           : TypicalStreamSeconds(k.bytes) + options_.kernel_launch_s);
}

double CostModel::OptimizerSeconds(std::int64_t params, int contributions,
                                   CostSource* source) const {
  if (source != nullptr) *source = CostSource::kModelled;
  if (params <= 0) return 0;
  if (options_.measured != nullptr) {
    if (const std::optional<double> per_param = options_.measured->OptimizerSecondsPerParam()) {
      if (source != nullptr) *source = CostSource::kMeasured;
      // The aggregation's extra reads are the model's (the table measured one update).
      return pace_ * (*per_param * static_cast<double>(params) +
                      TypicalStreamSeconds(static_cast<double>(params) * 4.0 *
                                           std::max(0, contributions - 1)));
    }
  }
  const double bytes = static_cast<double>(params) *
                       (options_.optimizer_bytes_per_param + 4.0 * std::max(0, contributions - 1));
  if (kernels_) return pace_ * kernels_->StreamSeconds(bytes);
  return pace_ * (bytes / (device_.memory_bw_bytes_per_s * options_.memory_efficiency) +
                  options_.kernel_launch_s);
}

double CostModel::StreamSeconds(double bytes) const { return pace_ * TypicalStreamSeconds(bytes); }

double CostModel::TypicalStreamSeconds(double bytes) const {
  if (bytes <= 0) return 0;
  if (kernels_) return kernels_->StreamSeconds(bytes);
  return bytes / (device_.memory_bw_bytes_per_s * options_.memory_efficiency);
}

}  // namespace dtsim::sim
