#include "validation/vtrain_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/units.h"
#include "report/svg_plot.h"
#include "sim/report.h"
#include "validation/scatter.h"

namespace dtsim::validation {
namespace {

using Json = nlohmann::ordered_json;

std::string Format(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A value of a slice: its label and a key that sorts the labels.
struct SliceValue {
  double key = 0;
  std::string label;
};

struct Parameter {
  const char* name;
  std::function<SliceValue(const VtrainRow&)> value;
};

SliceValue Count(int v) { return {static_cast<double>(v), std::to_string(v)}; }

// Multi-node rows name their model by size ("39.1B"), single-node rows by
// hidden size and layers ("h1024 L24"), sorted by hidden size, then layers.
SliceValue ModelValue(const VtrainRow& r) {
  if (r.params_billion > 0) return {r.params_billion, Format("%gB", r.params_billion)};
  // Built by appending: GCC 12 warns falsely (-Wrestrict) on
  // "h" + std::to_string(...) once this file is inlined differently.
  std::string label = "h";
  label += std::to_string(r.hidden);
  label += " L";
  label += std::to_string(r.layers);
  return {r.hidden * 1e4 + r.layers, label};
}

const std::vector<Parameter>& Parameters() {
  static const std::vector<Parameter> kParameters = {
      {"tensor_parallel", [](const VtrainRow& r) { return Count(r.tensor_parallel); }},
      {"pipeline_parallel", [](const VtrainRow& r) { return Count(r.pipeline_parallel); }},
      {"data_parallel", [](const VtrainRow& r) { return Count(r.data_parallel); }},
      {"micro_batch", [](const VtrainRow& r) { return Count(r.micro_batch); }},
      {"model", ModelValue},
      {"gpus", [](const VtrainRow& r) { return Count(r.gpus); }},
  };
  return kParameters;
}

Json ErrorsJson(const ErrorSummary& e) {
  Json j;
  j["runs"] = e.runs;
  j["predicted"] = e.predicted;
  j["failed"] = e.failed;
  j["mape_percent"] = e.mean_ape;
  j["median_ape_percent"] = e.median_ape;
  j["max_ape_percent"] = e.max_ape;
  j["mean_signed_error_percent"] = e.mean_signed_pe;
  return j;
}

std::string IntraNodeLink(const VtrainSetup& s) {
  if (!s.intra_node_link.empty()) return s.intra_node_link + " (catalog)";
  return std::string(kVtrainNvlink) + " (" + Format("%g", s.intra_node_bw_bytes_per_s / 1e9) +
         " GB/s per direction)";
}

// How compute is priced for every row, in words.
std::string CostModelLabel(const VtrainSetup& setup) {
  if (setup.cost_model == config::CostModelKind::kRoofline || setup.kernel_launch_s > 0) {
    char launch[64];
    std::snprintf(launch, sizeof launch, "%.0f us",
                  (setup.kernel_launch_s > 0 ? setup.kernel_launch_s : 5e-6) * 1e6);
    return std::string("roofline (") + launch + " per kernel)";
  }
  return "kernels (sim/cost/gpu_kernel_model.h)";
}

Json SetupJson(const VtrainSetup& s) {
  Json j;
  j["device"] = s.device;
  j["devices_per_node"] = s.devices_per_node;
  j["intra_node_link"] = s.intra_node_link.empty() ? kVtrainNvlink : s.intra_node_link;
  if (s.intra_node_link.empty()) j["intra_node_bw_bytes_per_s"] = s.intra_node_bw_bytes_per_s;
  if (s.framework.name != "none") {
    j["framework"] = s.framework.name;
    j["framework_source"] = s.framework.source;
    j["framework_per_op_s"] = s.framework.per_op_s;
    j["framework_per_kernel_s"] = s.framework.per_kernel_s;
    j["framework_per_step_s"] = s.framework.per_step_s;
  }
  if (s.protocols != "ideal") j["protocols"] = s.protocols;
  if (!s.transport.IsNative()) j["transport"] = config::DescribeTransport(s.transport);
  if (!s.intra_node_transport.IsNative())
    j["intra_node_transport"] = config::DescribeTransport(s.intra_node_transport);
  j["network_link"] = s.network_link;
  j["nics_per_node"] = s.nics_per_node;
  j["vocab"] = s.vocab;
  j["precision"] = hw::PrecisionName(s.precision);
  j["schedule"] = config::PipelineScheduleName(s.schedule);
  j["recompute"] = s.recompute;
  j["overlap_gradient_all_reduce"] = s.overlap;
  j["cost_model"] = CostModelLabel(s);
  j["bucket_bytes"] = s.bucket_bytes;
  j["iterations"] = s.iterations;
  return j;
}

Json RowJson(const RowResult& r) {
  const VtrainRow& row = *r.row;
  Json j;
  j["where"] = row.Where();
  j["group"] = VtrainGroupName(row.group);
  if (row.params_billion > 0) j["params_billion"] = row.params_billion;
  j["gpus"] = row.gpus;
  j["tensor_parallel"] = row.tensor_parallel;
  j["pipeline_parallel"] = row.pipeline_parallel;
  j["data_parallel"] = row.data_parallel;
  j["micro_batch"] = row.micro_batch;
  j["global_batch"] = row.global_batch;
  j["hidden"] = row.hidden;
  j["layers"] = row.layers;
  j["measured_ms"] = row.measured_ms;
  j["predicted_ms"] = r.prediction->predicted_ms;
  j["percent_error"] = r.percent_error;
  return j;
}

// "| 12.3 | ..." cells of an ErrorSummary: runs, failed, median, mean (MAPE), max, signed.
std::string ErrorCells(const ErrorSummary& e) {
  if (e.predicted == 0) {
    return "| " + std::to_string(e.runs) + " | " + std::to_string(e.failed) +
           " | - | - | - | - |";
  }
  return "| " + std::to_string(e.runs) + " | " + std::to_string(e.failed) + " | " +
         Format("%.1f", e.median_ape) + " | " + Format("%.1f", e.mean_ape) + " | " +
         Format("%.1f", e.max_ape) + " | " + Format("%+.1f", e.mean_signed_pe) + " |";
}

constexpr const char* kErrorHeader =
    "| runs | failed | median APE % | MAPE % | max APE % | mean signed error % |";
constexpr const char* kErrorRule = "|---:|---:|---:|---:|---:|---:|";

// `s` on one line, for table cells and CSV fields.
std::string OneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

VtrainSummary SummarizeVtrain(const std::vector<RowResult>& results, std::size_t worst) {
  VtrainSummary s;
  auto in_group = [](VtrainGroup g) {
    return [g](const RowResult& r) { return r.row->group == g; };
  };
  s.overall = SummarizeResults(results);
  s.single_node = SummarizeResults(results, in_group(VtrainGroup::kSingleNode));
  s.multi_node = SummarizeResults(results, in_group(VtrainGroup::kMultiNode));

  std::vector<std::size_t> predicted;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].prediction->ok()) predicted.push_back(i);
  }
  std::stable_sort(predicted.begin(), predicted.end(), [&](std::size_t a, std::size_t b) {
    return results[a].ape > results[b].ape;
  });
  predicted.resize(std::min(predicted.size(), worst));
  s.worst = predicted;

  for (VtrainGroup g : {VtrainGroup::kSingleNode, VtrainGroup::kMultiNode}) {
    for (const Parameter& p : Parameters()) {
      std::map<double, std::string> values;  // key -> label, ascending
      for (const RowResult& r : results) {
        if (r.row->group != g) continue;
        const SliceValue v = p.value(*r.row);
        values.emplace(v.key, v.label);
      }
      for (const auto& [key, label] : values) {
        const double k = key;
        VtrainSummary::Slice slice{VtrainGroupName(g), p.name, label, {}};
        slice.errors = SummarizeResults(results, [&](const RowResult& r) {
          return r.row->group == g && p.value(*r.row).key == k;
        });
        s.slices.push_back(std::move(slice));
      }
    }
  }

  for (const RowResult& r : results) {
    if (r.prediction->ok()) continue;
    auto it = std::find_if(s.failures.begin(), s.failures.end(), [&](const auto& f) {
      return f.message == r.prediction->error;
    });
    if (it == s.failures.end()) {
      s.failures.push_back({r.prediction->error, 1, r.row->Where()});
    } else {
      ++it->rows;
    }
  }
  return s;
}

std::string PredictionsCsv(const std::vector<RowResult>& results) {
  std::ostringstream o;
  o << "group,file,line,params_billion,gpus,global_batch,micro_batch,hidden,heads,layers,"
       "sequence,tensor_parallel,data_parallel,pipeline_parallel,measured_ms,predicted_ms,"
       "percent_error,ape_percent,error\n";
  for (const RowResult& r : results) {
    const VtrainRow& row = *r.row;
    o << VtrainGroupName(row.group) << ',' << sim::CsvField(row.file) << ',' << row.line << ','
      << (row.params_billion > 0 ? Format("%g", row.params_billion) : "") << ',' << row.gpus
      << ',' << row.global_batch << ',' << row.micro_batch << ',' << row.hidden << ','
      << row.heads << ',' << row.layers << ',' << row.sequence << ',' << row.tensor_parallel
      << ',' << row.data_parallel << ',' << row.pipeline_parallel << ','
      << Format("%.9g", row.measured_ms) << ',';
    if (r.prediction->ok()) {
      o << Format("%.4f", r.prediction->predicted_ms) << ',' << Format("%.3f", r.percent_error)
        << ',' << Format("%.3f", r.ape) << ",\n";
    } else {
      o << ",,," << sim::CsvField(OneLine(r.prediction->error)) << '\n';
    }
  }
  return o.str();
}

std::string SummaryJson(const VtrainSummary& s, const std::vector<RowResult>& results,
                        const VtrainSetup& setup) {
  Json j;
  j["data"] = "vTrain ground truth: Megatron-DeepSpeed iteration times on A100 clusters";
  j["setup"] = SetupJson(setup);
  j["overall"] = ErrorsJson(s.overall);
  j["single_node"] = ErrorsJson(s.single_node);
  j["multi_node"] = ErrorsJson(s.multi_node);
  Json worst = Json::array();
  for (std::size_t i : s.worst) worst.push_back(RowJson(results[i]));
  j["worst"] = worst;
  Json slices = Json::array();
  for (const VtrainSummary::Slice& slice : s.slices) {
    Json e = ErrorsJson(slice.errors);
    Json x;
    x["group"] = slice.group;
    x["parameter"] = slice.parameter;
    x["value"] = slice.value;
    x.update(e);
    slices.push_back(x);
  }
  j["by_parameter"] = slices;
  Json failures = Json::array();
  for (const VtrainSummary::Failure& f : s.failures) {
    failures.push_back(Json{{"message", f.message}, {"rows", f.rows}, {"first", f.first}});
  }
  j["failures"] = failures;
  return j.dump(2) + "\n";
}

std::string SummaryMarkdown(const VtrainSummary& s, const std::vector<RowResult>& results,
                            const VtrainSetup& setup) {
  std::ostringstream o;
  o << "# dtsim against vTrain's measurements\n\n"
    << "Megatron-DeepSpeed iteration times on A100 clusters (vTrain, MICRO 2024), predicted by "
       "`dtsim validate vtrain` "
    << (setup.framework.name == "none" ? "with every constant at its default"
                                       : "with the framework profile below")
    << ".\n\n"
    << "Setup: " << setup.device << ", " << setup.devices_per_node << " per node; intra-node "
    << IntraNodeLink(setup) << "; " << setup.nics_per_node << " x " << setup.network_link
    << " per node; " << hw::PrecisionName(setup.precision) << "; schedule "
    << config::PipelineScheduleName(setup.schedule) << "; recompute "
    << (setup.recompute ? "on" : "off") << "; gradient all-reduce "
    << (setup.overlap ? "overlapped with backward" : "after backward, one bucket")
    << "; cost model " << CostModelLabel(setup);
  if (setup.framework.name != "none")
    o << "; framework " << setup.framework.name << " (" << setup.framework.source << "): "
      << FormatSeconds(setup.framework.per_op_s) << " per op, "
      << FormatSeconds(setup.framework.per_kernel_s) << " per kernel, "
      << FormatSeconds(setup.framework.per_step_s) << " per step";
  if (setup.protocols != "ideal") o << "; collectives priced with NCCL's protocols";
  if (!setup.transport.IsNative())
    o << "; transport between nodes " << config::DescribeTransport(setup.transport);
  if (!setup.intra_node_transport.IsNative())
    o << "; transport within nodes " << config::DescribeTransport(setup.intra_node_transport);
  o << ".\n\n";

  o << "## Errors\n\n| group " << kErrorHeader << "\n|---" << kErrorRule << "\n";
  o << "| all " << ErrorCells(s.overall) << "\n";
  o << "| single-node " << ErrorCells(s.single_node) << "\n";
  o << "| multi-node " << ErrorCells(s.multi_node) << "\n\n";
  o << "APE = |predicted - measured| / measured; signed error > 0: predicted too slow.\n\n";

  o << "## Worst rows\n\n"
    << "| row | GPUs | t | p | d | micro batch | global batch | model | measured ms | "
       "predicted ms | error % |\n|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n";
  for (std::size_t i : s.worst) {
    const RowResult& r = results[i];
    const VtrainRow& row = *r.row;
    o << "| " << row.Where() << " | " << row.gpus << " | " << row.tensor_parallel << " | "
      << row.pipeline_parallel << " | " << row.data_parallel << " | " << row.micro_batch << " | "
      << row.global_batch << " | " << ModelValue(row).label << " | "
      << Format("%.1f", row.measured_ms) << " | " << Format("%.1f", r.prediction->predicted_ms)
      << " | " << Format("%+.1f", r.percent_error) << " |\n";
  }

  o << "\n## Errors by parameter\n";
  std::string group;
  for (const VtrainSummary::Slice& slice : s.slices) {
    if (slice.group != group) {
      group = slice.group;
      o << "\n### " << group << "\n\n| parameter | value " << kErrorHeader << "\n|---|---"
        << kErrorRule << "\n";
    }
    o << "| " << slice.parameter << " | " << slice.value << " " << ErrorCells(slice.errors)
      << "\n";
  }

  if (!s.failures.empty()) {
    o << "\n## Failed rows\n\n| rows | first | message |\n|---:|---|---|\n";
    for (const VtrainSummary::Failure& f : s.failures) {
      std::string message = OneLine(f.message);
      std::string escaped;
      for (char c : message) {
        if (c == '|') escaped += '\\';
        escaped += c;
      }
      o << "| " << f.rows << " | " << f.first << " | " << escaped << " |\n";
    }
  }
  return o.str();
}

std::string ScatterSvg(const std::vector<RowResult>& results) {
  std::vector<report::Series> series = {{"single-node", {}}, {"multi-node", {}}};
  for (const RowResult& r : results) {
    if (!r.prediction->ok()) continue;
    series[r.row->group == VtrainGroup::kSingleNode ? 0 : 1].points.push_back(
        {r.row->measured_ms, r.prediction->predicted_ms});
  }
  return PredictedVsMeasuredSvg("dtsim against vTrain's measurements (Megatron-DeepSpeed, A100)",
                                "measured iteration time (ms)", "predicted iteration time (ms)",
                                std::move(series));
}

}  // namespace dtsim::validation
