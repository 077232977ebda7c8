// Op times from an op-cost table (config/op_cost_table.h), for
// `workload.cost_model: measured`. An op's pass is priced, in this order:
//
//  1. measured: the table holds the op's signature at the batch asked;
//     its expected time (config::OpTiming::Expected: the mean of its calls).
//  2. interpolated by batch: the table holds the signature at other
//     batches. Between two measured batches b0 < b < b1, linear in the batch:
//       t = t0 + (t1 - t0) (b - b0) / (b1 - b0);
//     beyond them, the line through the two nearest measured batches, or,
//     with one batch measured (or a line that gives t <= 0), proportional
//     to the batch: t = t0 b / b0 (the same time per sample).
//  3. interpolated by kind: the table holds other signatures of the op's
//     kind. Their achieved rates r = work / t, work the pass's FLOPs (or,
//     for kinds without FLOPs, its bytes) at their batch, are interpolated
//     linearly in log2(work) between the two neighbouring works and held
//     flat beyond them (the mean rate where several entries share a
//     work); t = work / r.
//  4. modelled: nothing of the kind is in the table; the caller prices the
//     op with the kernel or roofline model.
//
// Tables time the backward as one piece (input and weight gradients
// together); CostModel splits it between the plan's two backward tasks in
// the proportion the fallback model gives them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/op_cost_table.h"
#include "config/scenario.h"
#include "models/graph.h"
#include "models/op.h"

namespace dtsim::sim {

enum class CostSource : std::uint8_t { kMeasured, kInterpolated, kModelled };
inline constexpr int kNumCostSources = 3;
const char* CostSourceName(CostSource s);  // "measured", "interpolated", "modelled"

enum class MeasuredPass : std::uint8_t { kForward, kBackward };

struct MeasuredTime {
  double seconds = 0;
  CostSource source = CostSource::kMeasured;  // never kModelled
  // False when the entry priced from measured no input gradient (the op
  // read only graph inputs): the backward is all weight gradient.
  bool backward_input = true;
};

class MeasuredCosts {
 public:
  explicit MeasuredCosts(config::OpCostTable table);

  // The time of `pass` of `op` on `batch` samples by rules 1-3, or nullopt
  // (rule 4). REQUIRES: batch >= 1.
  std::optional<MeasuredTime> Seconds(const models::Op& op, MeasuredPass pass,
                                      std::int64_t batch) const;
  // The measured optimizer step's seconds per parameter, or nullopt.
  std::optional<double> OptimizerSecondsPerParam() const;

  const config::OpCostTable& table() const { return table_; }

 private:
  struct Point {
    double x = 0;  // batch (rule 2) or log2(work) (rule 3)
    double seconds = 0;
    double rate = 0;  // rule 3: work / seconds
    bool backward_input = true;
  };
  // Per signature and pass: measured points sorted by batch.
  std::map<std::pair<std::string, int>, std::vector<Point>> by_signature_;
  // Per kind, pass and work basis (0 FLOPs, 1 bytes): points by log2(work).
  std::map<std::tuple<models::OpKind, int, int>, std::vector<Point>> by_kind_;
  config::OpCostTable table_;
};

// The measured costs a workload names (workload.cost_table): its table, or
// its torch.profiler trace imported against `graph`; null unless
// cost_model is measured. Throws UserError for a trace that cannot be read.
std::shared_ptr<const MeasuredCosts> WorkloadMeasuredCosts(const config::WorkloadConfig& w,
                                                           const models::ModelGraph& graph);

}  // namespace dtsim::sim
