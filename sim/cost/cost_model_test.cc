#include "sim/cost/cost_model.h"

#include <gtest/gtest.h>

namespace dtsim::sim {
namespace {

hw::DeviceSpec Device() {
  hw::DeviceSpec d;
  d.name = "test";
  d.fp32_flop_per_s = 10e12;
  d.fp16_flop_per_s = 100e12;
  d.memory_bytes = 16e9;
  d.memory_bw_bytes_per_s = 1e12;
  return d;
}

TEST(CostModel, ComputeBoundOpIsFlopsOverEfficientPeak) {
  CostModelOptions o;
  o.kernel_launch_s = 1e-6;
  o.compute_efficiency[models::OpKind::kDense] = 0.5;
  CostModel cm(Device(), hw::Precision::kFp32, o);
  models::Op op;
  op.kind = models::OpKind::kDense;
  op.fwd_flops = 1e9;  // per sample
  op.params = 1000;
  // 32 GFLOP at 5 TFLOP/s = 6.4 ms, far above the memory time; plus launch.
  EXPECT_NEAR(cm.ComputeSeconds(op, plan::TaskKind::kForward, 32), 6.4e-3 + 1e-6, 1e-12);
}

TEST(CostModel, DenseEfficiencyFollowsTheRowsOfItsGemm) {
  // Points (8, 0.2) and (512, 0.8): log2 rows 3 and 9, so 64 rows (log2 6)
  // sit halfway: 0.5; below 8 and above 512 the end values hold.
  const std::map<std::int64_t, double> points = {{8, 0.2}, {512, 0.8}};
  EXPECT_DOUBLE_EQ(EfficiencyAtRows(points, 64), 0.5);
  EXPECT_DOUBLE_EQ(EfficiencyAtRows(points, 2), 0.2);
  EXPECT_DOUBLE_EQ(EfficiencyAtRows(points, 4096), 0.8);
  CostModelOptions o;
  o.kernel_launch_s = 0;
  o.compute_efficiency[models::OpKind::kDense] = 0.9;  // replaced for dense
  o.dense_efficiency_by_rows = points;
  CostModel cm(Device(), hw::Precision::kFp32, o);
  models::Op op;
  op.kind = models::OpKind::kDense;
  op.input_shapes = {{16, 1024}};  // 16 rows per sample
  op.fwd_flops = 1e9;
  // 4 samples x 16 rows = 64 rows: efficiency 0.5; 4 GFLOP at 5 TFLOP/s = 0.8 ms.
  EXPECT_NEAR(cm.ComputeSeconds(op, plan::TaskKind::kForward, 4), 0.8e-3, 1e-12);
}

TEST(CostModel, ConvolutionEfficiencyFollowsItsSize) {
  // Points (1 MFLOP, 0.2) and (64 MFLOP, 0.8) per sample forward: log2 20
  // and 26, so 8 MFLOP (log2 23) sits halfway: 0.5.
  CostModelOptions o;
  o.kernel_launch_s = 0;
  o.compute_efficiency[models::OpKind::kConv2d] = 0.9;  // replaced by the table
  o.conv_efficiency_by_flops = {{std::int64_t{1} << 20, 0.2}, {std::int64_t{1} << 26, 0.8}};
  CostModel cm(Device(), hw::Precision::kFp32, o);
  models::Op op;
  op.kind = models::OpKind::kConv2d;
  op.fwd_flops = 8.0 * (1 << 20);
  // 10 samples x 8 MiFLOP at 0.5 x 10 TFLOP/s.
  EXPECT_NEAR(cm.ComputeSeconds(op, plan::TaskKind::kForward, 10),
              10 * 8.0 * (1 << 20) / (0.5 * 10e12), 1e-15);
  // Other kinds keep compute_efficiency.
  op.kind = models::OpKind::kDense;
  o.compute_efficiency[models::OpKind::kDense] = 0.25;
  EXPECT_NEAR(CostModel(Device(), hw::Precision::kFp32, o)
                  .ComputeSeconds(op, plan::TaskKind::kForward, 10),
              10 * 8.0 * (1 << 20) / (0.25 * 10e12), 1e-15);
}

TEST(CostModel, MemoryBoundOpIsBytesOverBandwidth) {
  CostModelOptions o;
  o.kernel_launch_s = 0;
  o.memory_efficiency = 0.5;
  CostModel cm(Device(), hw::Precision::kFp32, o);
  models::Op op;
  op.kind = models::OpKind::kRelu;
  op.fwd_flops = 1e3;
  op.read_elements_per_sample = 1e6;
  op.written_elements_per_sample = 1e6;
  // 2e6 elements x 4 B x 10 samples = 80 MB at 0.5 TB/s = 160 us.
  EXPECT_NEAR(cm.ComputeSeconds(op, plan::TaskKind::kForward, 10), 160e-6, 1e-12);
}

TEST(CostModel, PrecisionPicksThePeak) {
  CostModelOptions o;
  o.kernel_launch_s = 0;
  o.compute_efficiency[models::OpKind::kDense] = 1.0;
  models::Op op;
  op.kind = models::OpKind::kDense;
  op.fwd_flops = 1e12;
  const double fp32 = CostModel(Device(), hw::Precision::kFp32, o)
                          .ComputeSeconds(op, plan::TaskKind::kForward, 1);
  const double fp16 = CostModel(Device(), hw::Precision::kFp16, o)
                          .ComputeSeconds(op, plan::TaskKind::kForward, 1);
  EXPECT_DOUBLE_EQ(fp32, 0.1);   // 1 TFLOP / 10 TFLOP/s
  EXPECT_DOUBLE_EQ(fp16, 0.01);  // 1 TFLOP / 100 TFLOP/s
}

TEST(CostModel, OptimizerStreamsItsBytes) {
  CostModelOptions o;
  o.kernel_launch_s = 0;
  o.memory_efficiency = 1.0;
  o.optimizer_bytes_per_param = 20;
  CostModel cm(Device(), hw::Precision::kFp32, o);
  EXPECT_DOUBLE_EQ(cm.OptimizerSeconds(50'000'000), 1e-3);  // 1 GB at 1 TB/s
}

}  // namespace
}  // namespace dtsim::sim
