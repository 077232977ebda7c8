// Reports of a prediction in the formats the field uses: a JSON report, a CSV
// row, a Chrome-trace/Perfetto timeline, and the seeds' step log for people.
// Reports hold no wall-clock values, so the same scenario gives byte-identical
// files.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "sim/simulator.h"

namespace dtsim::sim {

// The figures users compare across tools (Megatron-LM's and PaLM's
// definitions, Narayanan et al. 2021 and Chowdhery et al. 2022, appendix B):
//   model FLOPs per sample = forward + backward FLOPs of the whole model
//     graph (input and weight gradients), without recomputation: what the
//     model needs, not what the plan runs;
//   model TFLOP/s per device = model FLOPs per sample x samples/s / devices;
//   MFU = that / the device's dense peak at the scenario's precision; in
//     fp8 the bf16 peak, as MLPerf submitters and Megatron-LM state it for
//     FP8 training, with mfu_fp8_peak against the FP8 peak beside it;
//   tokens/s = samples/s x tokens per sample (language models; 0 otherwise).
struct ModelFigures {
  double model_flops_per_sample = 0;
  double model_flops_per_device_per_s = 0;
  double mfu = 0;
  double mfu_fp8_peak = 0;  // fp8 only: against the FP8 tensor-core peak
  double tokens_per_s = 0;
};
ModelFigures ComputeModelFigures(const config::Scenario& scenario, const Prediction& p);

// Top-level keys include throughput_samples_per_s, step_time_s,
// scaling_efficiency and breakdown {compute_s, exposed_comm_s, idle_s}; in
// fp8 also mfu_fp8_peak and breakdown.compute_parts {fp8_gemm_s,
// fp8_cast_s, bf16_s}: compute_s split in the proportions of the priced
// compute (TaskCosts).
nlohmann::ordered_json ReportJson(const config::Scenario& scenario, const Prediction& p);

// Where the priced compute came from when the scenario names an op-cost
// table (sim/cost/measured_costs.h): {cost_table, measured_s, measured_share,
// interpolated_s, interpolated_share, modelled_s, modelled_share,
// modelled_ops}; null without a table.
nlohmann::ordered_json CostSourcesJson(const config::Scenario& scenario, const Prediction& p);

// One CSV header line and the matching row (no trailing newline).
std::string CsvHeader();
std::string CsvRow(const config::Scenario& scenario, const Prediction& p);
// `text` as one CSV field (RFC 4180): quoted when it holds a comma, a
// quote, a line break or edge spaces.
std::string CsvField(const std::string& text);

// Chrome trace event format (JSON object with traceEvents); opens in
// ui.perfetto.dev and chrome://tracing. One process per rank, one thread per
// stream; only ranks < max_ranks are written. `link_counters` > 0 adds
// that many busiest links' bandwidth as counter tracks of a "network links"
// process after the ranks' (sim/link_traffic.h).
void WriteChromeTrace(std::ostream& out, const Prediction& p, int max_ranks,
                      int link_counters = 0);

// The "repeats" section of a report: N seeds from `first_seed`, and for
// throughput and step time the mean, 95% confidence half-width (Student's t),
// min and max over the seeds.
nlohmann::ordered_json RepeatsJson(std::uint64_t first_seed, const std::vector<double>& throughput,
                                   const std::vector<double>& step_time);
// One line each for throughput and step time: "mean +- half-width (95% CI, N seeds)".
std::string RepeatsLog(const std::vector<double>& throughput, const std::vector<double>& step_time);

// Human summary in the style of TensorFlow's tutorial logs:
//   step 1, loss = n/a (6043.4 examples/sec; 0.021 sec/batch)
// followed by throughput, scaling efficiency, breakdown and utilization.
std::string StepLog(const config::Scenario& scenario, const Prediction& p);

}  // namespace dtsim::sim
