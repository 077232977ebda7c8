#include "validation/allreduce_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "validation/fit.h"

namespace dtsim::validation {
namespace {

// The constants in AllreduceConstants::AsVector order, with their bounds.
// Plausible ranges: efficiencies from the protocol overheads named in
// allreduce.h; NCCL's per-step latencies from its tuning model (hwLat PCI
// 1 us, NET 2.7-14 us per hop, NCCL 2.20.3 src/graph/tuning.cc).
std::vector<FitConstant> Constants() {
  const AllreduceConstants d;
  return {
      {"pcie_efficiency", d.pcie_efficiency, 0.2, 1.0, false, 0.6, 0.92,
       "PCIe 3.0 TLP overheads (PCIe Base Specification 3.0)"},
      {"qpi_efficiency", d.qpi_efficiency, 0.1, 1.0, false, 0.3, 0.9, "QPI link rate"},
      {"network_efficiency", d.network_efficiency, 0.2, 1.0, false, 0.6, 0.95,
       "InfiniBand FDR data rate"},
      {"intra_step_s", d.intra_step_s, 1e-7, 1e-3, true, 1e-6, 2e-5, "NCCL hwLat PCI"},
      {"net_step_s", d.net_step_s, 1e-7, 1e-3, true, 2e-6, 5e-5, "NCCL hwLat NET"},
      {"launch_s", d.launch_s, 1e-7, 1e-3, true, 3e-6, 5e-5, "CUDA launch + NCCL setup"},
      {"baidu_step_s", d.baidu_step_s, 1e-6, 1e-2, true, 0, 0, ""},
  };
}

AllreduceConstants Fit(const std::vector<AllreduceMeasurement>& rows,
                       const std::vector<std::size_t>& train, const AllreducePricing& pricing,
                       int jobs) {
  std::vector<double> measured;
  for (const AllreduceMeasurement& m : rows) measured.push_back(m.measured_s);
  const RowPredictor predict = [&](std::size_t row, const std::vector<double>& values) {
    return PredictAllreduce(rows[row], AllreduceConstants::FromVector(values), pricing).seconds;
  };
  FitOptions options;
  options.jobs = jobs;
  return AllreduceConstants::FromVector(
      FitConstants(Constants(), train, measured, predict, options).values);
}

nlohmann::ordered_json ConstantsJson(const AllreduceConstants& c) {
  nlohmann::ordered_json j;
  const std::vector<FitConstant> names = Constants();
  const std::vector<double> v = c.AsVector();
  for (std::size_t i = 0; i < v.size(); ++i) j[names[i].name] = v[i];
  return j;
}

nlohmann::ordered_json SlicesJson(const std::vector<AllreduceMeasurement>& rows,
                                  const std::vector<double>& predicted_s) {
  nlohmann::ordered_json j;
  for (const auto& [key, e] : AllreduceSlices(rows, predicted_s)) j[key] = FitErrorsJson(e);
  return j;
}

std::string Row(const std::string& name, const ErrorSummary& e) {
  char line[200];
  std::snprintf(line, sizeof line, "| %s | %d | %.1f | %.1f | %.1f | %+.1f |\n", name.c_str(),
                e.predicted, e.median_ape, e.mean_ape, e.max_ape, e.mean_signed_pe);
  return line;
}

constexpr const char* kTableHead =
    "| rows | n | median % | mean % | max % | signed mean % |\n|---|---:|---:|---:|---:|---:|\n";

}  // namespace

AllreduceValidation ValidateAllreduce(std::vector<AllreduceMeasurement> rows, int jobs) {
  AllreduceValidation v;
  v.rows = std::move(rows);
  std::set<std::string> gpus;
  for (const AllreduceMeasurement& m : v.rows) gpus.insert(m.gpu);
  const std::pair<const char*, AllreducePricing> pricings[] = {
      {"ideal", {false, false}},
      {"nccl-protocols", {true, false}},
      {"all-peer-to-peer", {false, true}},
  };
  for (const auto& [name, pricing] : pricings) {
    AllreduceVariant var;
    var.name = name;
    var.pricing = pricing;
    std::vector<std::size_t> all;
    for (std::size_t i = 0; i < v.rows.size(); ++i) all.push_back(i);
    var.all_rows = Fit(v.rows, all, pricing, jobs);
    for (const std::string& gpu : gpus) {
      std::vector<std::size_t> train;
      for (std::size_t i = 0; i < v.rows.size(); ++i)
        if (v.rows[i].gpu != gpu) train.push_back(i);
      var.without[gpu] = Fit(v.rows, train, pricing, jobs);
    }
    for (const AllreduceMeasurement& m : v.rows) {
      var.fitted_s.push_back(PredictAllreduce(m, var.all_rows, pricing).seconds);
      var.held_out_s.push_back(PredictAllreduce(m, var.without.at(m.gpu), pricing).seconds);
    }
    v.variants.push_back(std::move(var));
  }
  return v;
}

std::vector<std::pair<std::string, ErrorSummary>> AllreduceSlices(
    const std::vector<AllreduceMeasurement>& rows, const std::vector<double>& predicted_s) {
  std::map<std::string, std::vector<double>> by_gpu, by_ranks, by_alg;
  std::vector<double> all;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double e = PercentError(predicted_s[i], rows[i].measured_s);
    all.push_back(e);
    by_gpu["gpu=" + rows[i].gpu].push_back(e);
    char ranks[32];
    std::snprintf(ranks, sizeof ranks, "ranks=%02d", rows[i].ranks);
    by_ranks[ranks].push_back(e);
    by_alg[std::string("algorithm=") + AllreduceAlgorithmName(rows[i].algorithm)].push_back(e);
  }
  std::vector<std::pair<std::string, ErrorSummary>> out;
  out.emplace_back("all", SummarizeErrors(all, 0));
  for (const auto* group : {&by_gpu, &by_ranks, &by_alg})
    for (const auto& [key, errors] : *group) out.emplace_back(key, SummarizeErrors(errors, 0));
  return out;
}

std::string AllreduceJson(const AllreduceValidation& v) {
  nlohmann::ordered_json j;
  j["command"] = "dtsim validate allreduce";
  j["rows"] = v.rows.size();
  j["variants"] = nlohmann::ordered_json::array();
  for (const AllreduceVariant& var : v.variants) {
    nlohmann::ordered_json x;
    x["name"] = var.name;
    x["held_out"] = SlicesJson(v.rows, var.held_out_s);
    x["fitted_on_all_rows"] = SlicesJson(v.rows, var.fitted_s);
    x["constants_all_rows"] = ConstantsJson(var.all_rows);
    for (const auto& [gpu, c] : var.without) x["constants_without"][gpu] = ConstantsJson(c);
    j["variants"].push_back(x);
  }
  j["predictions"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < v.rows.size(); ++i) {
    const AllreduceMeasurement& m = v.rows[i];
    const AllreducePrediction p = PredictAllreduce(m, v.variants[0].all_rows);
    nlohmann::ordered_json r;
    r["where"] = m.Where();
    r["gpu"] = m.gpu;
    r["floats"] = m.floats;
    r["ranks"] = m.ranks;
    r["nodes"] = m.nodes;
    r["algorithm"] = AllreduceAlgorithmName(m.algorithm);
    r["measured_ms"] = m.measured_s * 1e3;
    for (const AllreduceVariant& var : v.variants) {
      r[var.name + "_held_out_ms"] = var.held_out_s[i] * 1e3;
      r[var.name + "_fitted_ms"] = var.fitted_s[i] * 1e3;
    }
    r["bottleneck"] = p.bottleneck;
    r["how"] = p.how;
    j["predictions"].push_back(r);
  }
  return j.dump(2) + "\n";
}

std::string AllreduceMarkdown(const AllreduceValidation& v) {
  std::string md =
      "# DeepBench all-reduce: measured against dtsim's PCIe ring model\n\n"
      "Regenerate: `build/tools/dtsim validate allreduce` (data: "
      "../shared/validation/deepbench/allreduce.csv, " +
      std::to_string(v.rows.size()) +
      " rows). Model: docs/collectives_validation.md. Errors are (predicted - measured) / "
      "measured; held out = the 7 constants fitted on the other GPUs' rows only.\n\n"
      "## Held out (leave one GPU out)\n\n| pricing | n | median % | mean % | max % | signed "
      "mean % |\n|---|---:|---:|---:|---:|---:|\n";
  for (const AllreduceVariant& var : v.variants)
    md += Row(var.name, AllreduceSlices(v.rows, var.held_out_s).front().second);
  md += "\n## Fitted on every row\n\n| pricing | n | median % | mean % | max % | signed mean % "
        "|\n|---|---:|---:|---:|---:|---:|\n";
  for (const AllreduceVariant& var : v.variants)
    md += Row(var.name, AllreduceSlices(v.rows, var.fitted_s).front().second);
  const AllreduceVariant& ideal = v.variants.front();
  md += "\n## By GPU, rank count and algorithm (ideal pricing, held out)\n\n";
  md += kTableHead;
  for (const auto& [key, e] : AllreduceSlices(v.rows, ideal.held_out_s)) md += Row(key, e);
  md += "\n## The same, fitted on every row\n\n";
  md += kTableHead;
  for (const auto& [key, e] : AllreduceSlices(v.rows, ideal.fitted_s)) md += Row(key, e);
  md += "\n## Constants (ideal pricing)\n\n| fitted on | pcie eff. | qpi eff. | network eff. | "
        "intra step us | net step us | launch us | Baidu step us |\n|---|---:|---:|---:|---:|---:|"
        "---:|---:|\n";
  auto constants = [&](const std::string& name, const AllreduceConstants& c) {
    char line[256];
    std::snprintf(line, sizeof line, "| %s | %.3f | %.3f | %.3f | %.2f | %.2f | %.2f | %.1f |\n",
                  name.c_str(), c.pcie_efficiency, c.qpi_efficiency, c.network_efficiency,
                  c.intra_step_s * 1e6, c.net_step_s * 1e6, c.launch_s * 1e6,
                  c.baidu_step_s * 1e6);
    md += line;
  };
  constants("all rows", ideal.all_rows);
  for (const auto& [gpu, c] : ideal.without) constants("all but " + gpu, c);
  md += "\n## Machines\n\n| sheet | board | CPU | copies | evidence |\n|---|---|---|---|---|\n";
  std::set<std::string> seen;
  for (const AllreduceMeasurement& m : v.rows) {
    if (!seen.insert(m.gpu).second) continue;
    const AllreduceMachine a = DeepbenchAllreduceMachine(m.gpu);
    md += "| " + m.gpu + " | " + a.board + " | " + a.cpu + " | " +
          (a.peer_to_peer ? "peer to peer" : "staged in host memory") + " | " + a.evidence +
          " |\n";
  }
  md += "\n## Rows (ideal pricing)\n\n| row | GPU | floats | ranks | nodes | algorithm | "
        "measured ms | held-out ms | error % | busiest link |\n|---|---|---:|---:|---:|---|---:|---:"
        "|---:|---|\n";
  for (std::size_t i = 0; i < v.rows.size(); ++i) {
    const AllreduceMeasurement& m = v.rows[i];
    char line[400];
    std::snprintf(line, sizeof line, "| %s | %s | %lld | %d | %d | %s | %.4g | %.4g | %+.1f | %s |\n",
                  m.Where().c_str(), m.gpu.c_str(), m.floats, m.ranks, m.nodes,
                  AllreduceAlgorithmName(m.algorithm), m.measured_s * 1e3,
                  ideal.held_out_s[i] * 1e3, PercentError(ideal.held_out_s[i], m.measured_s),
                  PredictAllreduce(m, ideal.all_rows).bottleneck.c_str());
    md += line;
  }
  return md;
}

std::string AllreduceSummaryText(const AllreduceValidation& v) {
  std::string s = "pricing            held-out median %  mean %  max %  signed %   all-rows median %  mean %\n";
  for (const AllreduceVariant& var : v.variants) {
    const ErrorSummary h = AllreduceSlices(v.rows, var.held_out_s).front().second;
    const ErrorSummary f = AllreduceSlices(v.rows, var.fitted_s).front().second;
    char line[200];
    std::snprintf(line, sizeof line, "%-18s %17.1f %7.1f %6.1f %+9.1f %19.1f %7.1f\n",
                  var.name.c_str(), h.median_ape, h.mean_ape, h.max_ape, h.mean_signed_pe,
                  f.median_ape, f.mean_ape);
    s += line;
  }
  return s;
}

}  // namespace dtsim::validation
