// Time of compute tasks on a device, by one of two models:
//  - kernels (GPUs whose microarchitecture the catalog knows): the sum of
//    the op's kernels (sim/cost/op_kernels.h) priced from their structure
//    (sim/cost/gpu_kernel_model.h);
//  - roofline (CPUs, devices without an SM count, device profiles, or
//    workload.cost_model: roofline): per-op-kind efficiency plus a fixed
//    kernel-launch overhead,
//   t = max(flops / (peak(precision) x eff(kind)), bytes / (mem_bw x mem_eff)) + launch
// With an op-cost table (workload.cost_model: measured), ops the table
// prices (sim/cost/measured_costs.h) take its times and the rest one of the two.
#pragma once

#include <map>
#include <memory>
#include <optional>

#include "sim/cost/gpu_kernel_model.h"
#include "sim/cost/measured_costs.h"

#include "hw/catalog.h"
#include "models/op.h"
#include "plan/plan.h"

namespace dtsim::sim {

struct CostModelOptions {
  // Fraction of peak flop/s reached, per op kind. Kinds not listed use
  // DefaultComputeEfficiency(kind).
  std::map<models::OpKind, double> compute_efficiency;
  // Dense ops: efficiency by GEMM rows (batch x rows per sample),
  // interpolated linearly in log2(rows) between the points and held flat
  // beyond them; empty = compute_efficiency. A measured device profile
  // fills it: small-row GEMMs run well below the large-GEMM rate.
  std::map<std::int64_t, double> dense_efficiency_by_rows;
  // Convolutions: efficiency by forward FLOPs per sample, interpolated the
  // same way (EfficiencyAtRows); empty = compute_efficiency. A measured
  // device profile fills it: small convolutions run below the large ones.
  std::map<std::int64_t, double> conv_efficiency_by_flops;
  // Fraction of peak memory bandwidth reached by streaming kernels. 0.7 is
  // what STREAM-like kernels reach on HBM2 GPUs (V100: ~800 of 900 GB/s,
  // framework kernels less).
  double memory_efficiency = 0.7;
  // Fixed overhead per kernel (launch + framework), seconds. CUDA launch
  // latency is ~5 us (NVIDIA CUDA C++ Best Practices Guide, "kernel launch
  // overhead ... in the order of microseconds").
  double kernel_launch_s = 5e-6;
  // Optimizer memory traffic per parameter, bytes. Default: SGD with
  // momentum in fp32 reads param, grad, momentum and writes param, momentum
  // (5 x 4 bytes).
  double optimizer_bytes_per_param = 20;
  // Price ops by their kernels where the device allows it (above).
  bool kernel_model = true;
  GpuKernelParams kernel_params;
  // The share of the kernel model's speed sustained in a training loop
  // (config::FrameworkProfile::kernel_efficiency): kernel-model times are
  // divided by it. Measured op times are taken as they are.
  double kernel_efficiency = 1.0;
  // GPUs that wait for each other every step (sim/cost/slowest_gpu.h): all
  // compute, modelled or measured, runs at the pace of the slowest of them,
  // SlowestGpuPace(spread, synchronised_gpus). 1 = a GPU alone (pace 1).
  std::int64_t synchronised_gpus = 1;
  // Their speed spread (cluster.gpu_speed_spread); unset = the device's
  // generation's default (DefaultGpuSpeedSpread).
  std::optional<double> gpu_speed_spread;
  // Measured op times (workload.cost_model: measured); null = none. The
  // kernel or roofline model above prices what the table lacks.
  std::shared_ptr<const MeasuredCosts> measured;
};

// Default fraction of peak per kind: dense GEMMs 0.75, convolutions 0.55,
// batched attention matmuls 0.6; the rest are memory-bound and 0.5 only
// matters if they were not.
double DefaultComputeEfficiency(models::OpKind kind);

// Efficiency at `rows` from (rows, efficiency) points: linear in log2(rows)
// between neighbours, the end values beyond them. REQUIRES: points non-empty.
double EfficiencyAtRows(const std::map<std::int64_t, double>& points, double rows);

// A compute time split by what runs: fp8's FP8 GEMMs, its casts and
// amax/scale updates, and the rest (every kernel of other precisions).
struct ComputeParts {
  double fp8_gemm_s = 0;
  double fp8_cast_s = 0;
  double other_s = 0;  // bf16/fp32 (or the scenario precision's) kernels
  double Total() const { return fp8_gemm_s + fp8_cast_s + other_s; }
  ComputeParts& operator+=(const ComputeParts& o) {
    fp8_gemm_s += o.fp8_gemm_s;
    fp8_cast_s += o.fp8_cast_s;
    other_s += o.other_s;
    return *this;
  }
};

class CostModel {
 public:
  CostModel(hw::DeviceSpec device, hw::Precision precision, CostModelOptions options);

  // Seconds for a compute task of kind `kind` (forward, backward input or
  // backward weight) of `op` on `batch` samples.
  double ComputeSeconds(const models::Op& op, plan::TaskKind kind, int batch) const;
  // The same split by ComputeParts. The roofline prices fp8's dense ops at
  // the FP8 peak and the others at the bf16 peak, without casts. Measured
  // times count as other_s. `source` (optional) receives where the time
  // came from: a measured backward is split between kBackwardInput and
  // kBackwardWeight in the proportion the fallback model gives them.
  ComputeParts ComputeTime(const models::Op& op, plan::TaskKind kind, int batch,
                           CostSource* source = nullptr) const;
  // fp8's once-per-step kernels (sim/cost/op_kernels.h): the cast of `op`'s
  // weight (0 unless fp8 and a dense op), and one amax/scale update of
  // `fp8_tensors` tensors (0 unless fp8).
  double Fp8WeightCastSeconds(const models::Op& op) const;
  double Fp8ScaleUpdateSeconds(int fp8_tensors) const;
  // Seconds of the optimizer step over `params` parameters. A parameter
  // server aggregating `contributions` > 1 updates first reads each of them
  // (4 bytes per parameter each) and then applies the step. A table's
  // measured optimizer gives the step's time per parameter; `source`
  // (optional) says whether it did.
  double OptimizerSeconds(std::int64_t params, int contributions = 1,
                          CostSource* source = nullptr) const;
  // Seconds to stream `bytes` through device memory once (an element-wise
  // pass): the kernel model's streaming rate, or the roofline's memory
  // bandwidth x efficiency, without a launch overhead. Like every time
  // here, at the pace of the slowest synchronised GPU (pace()).
  double StreamSeconds(double bytes) const;

  const hw::DeviceSpec& device() const { return device_; }
  hw::Precision precision() const { return precision_; }
  // The factor every compute time carries for the slowest synchronised GPU.
  double pace() const { return pace_; }
  double peak_flop_per_s() const { return peak_; }
  // The kernel model in use, or nullptr for the roofline.
  const GpuKernelModel* kernels() const { return kernels_ ? &*kernels_ : nullptr; }
  // The op-cost table in use, or nullptr.
  const MeasuredCosts* measured() const { return options_.measured.get(); }

 private:
  ComputeParts ModelledTime(const models::Op& op, plan::TaskKind kind, int batch) const;
  // ComputeTime and StreamSeconds on one typical GPU (pace 1).
  ComputeParts TypicalGpuTime(const models::Op& op, plan::TaskKind kind, int batch,
                              CostSource* source) const;
  double TypicalStreamSeconds(double bytes) const;

  hw::DeviceSpec device_;
  hw::Precision precision_;
  CostModelOptions options_;
  double peak_;
  double pace_;  // SlowestGpuPace of the options: multiplies every compute time
  std::optional<GpuKernelModel> kernels_;
};

}  // namespace dtsim::sim
