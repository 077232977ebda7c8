#include "validation/deepbench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/report.h"
#include "validation/scatter.h"

namespace dtsim::validation {
namespace {

std::string KindGroup(DeepbenchKernel k) { return DeepbenchKernelGroup(k); }

// rnn.csv's name of a cell.
std::string CellLabel(models::RnnCell c) {
  return c == models::RnnCell::kTanh ? "vanilla" : models::RnnCellName(c);
}

DeepbenchSlice Summarize(const std::string& gpu, const std::string& precision,
                         const std::string& kernel,
                         const std::vector<const DeepbenchResult*>& rows) {
  std::vector<double> shipped, held, roof;
  for (const DeepbenchResult* r : rows) {
    const double m = r->measurement->measured_s;
    shipped.push_back(PercentError(r->shipped.predicted_s, m));
    held.push_back(PercentError(r->held_out_s, m));
    roof.push_back(PercentError(r->roofline_s, m));
  }
  return {gpu,
          precision,
          kernel,
          SummarizeErrors(shipped, 0),
          SummarizeErrors(held, 0),
          SummarizeErrors(roof, 0)};
}

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

std::vector<DeepbenchSlice> SummarizeDeepbench(const std::vector<DeepbenchResult>& results) {
  std::vector<DeepbenchSlice> slices;
  // Keys in order of first appearance.
  std::vector<std::string> keys;
  std::map<std::string, std::vector<const DeepbenchResult*>> groups;
  auto add = [&](const std::string& key, const DeepbenchResult* r) {
    if (!groups.count(key)) keys.push_back(key);
    groups[key].push_back(r);
  };
  for (const DeepbenchResult& r : results) {
    const DeepbenchMeasurement& m = *r.measurement;
    add("A\t" + m.gpu + "\t" + m.precision + "\t" + KindGroup(m.kind), &r);
  }
  for (const DeepbenchResult& r : results) {
    const DeepbenchMeasurement& m = *r.measurement;
    if (m.kind != DeepbenchKernel::kGemm)
      add("B\t" + m.gpu + "\t" + m.precision + "\t" + DeepbenchKernelName(m.kind), &r);
  }
  for (const DeepbenchResult& r : results) {
    add("C\tall\tall\t" + KindGroup(r.measurement->kind), &r);
    if (KindGroup(r.measurement->kind) != "rnn") add("D\tall\tall\tgemm+conv", &r);
  }
  for (const DeepbenchResult& r : results) {
    if (r.measurement->kind != DeepbenchKernel::kGemm)
      add("E\tall\tall\t" + std::string(DeepbenchKernelName(r.measurement->kind)), &r);
  }
  // Recurrent layers per cell, every pass together and each pass.
  for (const DeepbenchResult& r : results) {
    const DeepbenchMeasurement& m = *r.measurement;
    if (KindGroup(m.kind) != "rnn") continue;
    const std::string cell = CellLabel(m.rnn.cell);
    add("F\tall\tall\trnn " + cell, &r);
    add("G\tall\tall\t" + std::string(DeepbenchKernelName(m.kind)) + " " + cell, &r);
  }
  for (const std::string& key : keys) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t tab; (tab = key.find('\t', start)) != std::string::npos; start = tab + 1)
      parts.push_back(key.substr(start, tab - start));
    parts.push_back(key.substr(start));
    slices.push_back(Summarize(parts[1], parts[2], parts[3], groups[key]));
  }
  return slices;
}

std::string DeepbenchPredictionsCsv(const std::vector<DeepbenchResult>& results) {
  std::string out =
      "file,line,gpu,precision,kernel,shape,measured_ms,predicted_ms,percent_error,"
      "held_out_ms,held_out_percent_error,roofline_ms,roofline_percent_error,algorithm,"
      "sheet_algorithm,unit,tile,split_k\n";
  for (const DeepbenchResult& r : results) {
    const DeepbenchMeasurement& m = *r.measurement;
    const double ms = m.measured_s * 1e3;
    out += m.file + "," + std::to_string(m.line) + "," + sim::CsvField(m.gpu) + "," + sim::CsvField(m.precision) + "," +
           DeepbenchKernelName(m.kind) + "," + sim::CsvField(m.Shape()) + "," + Fmt("%.6g", ms) + "," +
           Fmt("%.6g", r.shipped.predicted_s * 1e3) + "," +
           Fmt("%.2f", PercentError(r.shipped.predicted_s, m.measured_s)) + "," +
           Fmt("%.6g", r.held_out_s * 1e3) + "," +
           Fmt("%.2f", PercentError(r.held_out_s, m.measured_s)) + "," +
           Fmt("%.6g", r.roofline_s * 1e3) + "," +
           Fmt("%.2f", PercentError(r.roofline_s, m.measured_s)) + "," + r.shipped.algorithm + "," +
           sim::CsvField(m.sheet_algorithm) + "," + r.shipped.unit + "," + std::to_string(r.shipped.tile_m) +
           "x" + std::to_string(r.shipped.tile_n) + "," + std::to_string(r.shipped.split_k) + "\n";
  }
  return out;
}

std::string DeepbenchSummaryMarkdown(const std::vector<DeepbenchSlice>& slices,
                                     const std::vector<DeepbenchResult>& results,
                                     const std::string& fitted) {
  std::string md =
      "# dtsim's GPU kernel model against Baidu DeepBench\n\n"
      "Every GEMM, convolution and recurrent-layer time of DeepBench's NVIDIA training sheets "
      "(shared/validation/deepbench), predicted by `dtsim validate deepbench` with the kernel "
      "model of sim/cost/gpu_kernel_model.h (recurrent layers: the kernels of sim/cost/rnn_kernels.h, "
      "as the simulator prices them).\n\n"
      "- **held out**: for each GPU, constants fitted to the other GPUs' rows only "
      "(leave-one-GPU-out): what to expect on a GPU the fit has not seen.\n"
      "- **model**: the shipped constants (GpuKernelParams), fitted to all rows by the procedure "
      "of validation/deepbench_fit.h.\n"
      "- **roofline**: the cost model before this one (peak x 0.75 for GEMMs, 0.55 for "
      "convolutions, 0.5 for recurrent layers, 70% of memory bandwidth, 5 us per kernel).\n\n"
      "APE = |predicted - measured| / measured (median, mean, max); signed error > 0: "
      "predicted too slow.\n\n";
  auto table = [&](const std::string& title, auto keep) {
    md += "## " + title +
          "\n\n| GPU | precision | kernel | rows | held-out median % | held-out mean % | "
          "held-out max % | model median % | model mean % | model max % | model signed % | "
          "roofline median % | roofline mean % | roofline max % |\n"
          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const DeepbenchSlice& s : slices) {
      if (!keep(s)) continue;
      md += "| " + s.gpu + " | " + s.precision + " | " + s.kernel + " | " +
            std::to_string(s.shipped.predicted) + " | " + Fmt("%.1f", s.held_out.median_ape) +
            " | " + Fmt("%.1f", s.held_out.mean_ape) + " | " + Fmt("%.0f", s.held_out.max_ape) +
            " | " + Fmt("%.1f", s.shipped.median_ape) + " | " + Fmt("%.1f", s.shipped.mean_ape) +
            " | " + Fmt("%.0f", s.shipped.max_ape) + " | " + Fmt("%+.1f", s.shipped.mean_signed_pe) +
            " | " + Fmt("%.1f", s.roofline.median_ape) + " | " + Fmt("%.1f", s.roofline.mean_ape) +
            " | " + Fmt("%.0f", s.roofline.max_ape) + " |\n";
    }
    md += "\n";
  };
  auto rnn_kernel = [](const DeepbenchSlice& s) { return s.kernel.starts_with("rnn"); };
  table("Overall", [](const DeepbenchSlice& s) {
    return s.gpu == "all" && s.kernel.find(' ') == std::string::npos;
  });
  table("Per GPU and precision", [](const DeepbenchSlice& s) {
    return s.gpu != "all" && (s.kernel == "gemm" || s.kernel == "conv" || s.kernel == "rnn");
  });
  table("Convolution passes",
        [](const DeepbenchSlice& s) { return s.gpu != "all" && s.kernel.starts_with("conv_"); });
  table("Recurrent layers per cell and pass", [&](const DeepbenchSlice& s) {
    return s.gpu == "all" && rnn_kernel(s) && s.kernel.find(' ') != std::string::npos;
  });
  table("Recurrent layers per GPU and pass",
        [](const DeepbenchSlice& s) { return s.gpu != "all" && s.kernel.starts_with("rnn_"); });

  std::vector<const DeepbenchResult*> worst;
  for (const DeepbenchResult& r : results) worst.push_back(&r);
  std::stable_sort(worst.begin(), worst.end(), [](const auto* a, const auto* b) {
    return AbsPercentError(a->shipped.predicted_s, a->measurement->measured_s) >
           AbsPercentError(b->shipped.predicted_s, b->measurement->measured_s);
  });
  if (worst.size() > 15) worst.resize(15);
  md +=
      "## Worst rows (model)\n\n| row | GPU | precision | shape | measured ms | predicted ms "
      "| error % | algorithm | cuDNN's forward algorithm "
      "|\n|---|---|---|---|---:|---:|---:|---|---|\n";
  for (const DeepbenchResult* r : worst) {
    const DeepbenchMeasurement& m = *r->measurement;
    md += "| " + m.Where() + " | " + m.gpu + " | " + m.precision + " | " + m.Shape() + " | " +
          Fmt("%.3f", m.measured_s * 1e3) + " | " + Fmt("%.3f", r->shipped.predicted_s * 1e3) +
          " | " + Fmt("%+.0f", PercentError(r->shipped.predicted_s, m.measured_s)) + " | " +
          r->shipped.algorithm + " | " + m.sheet_algorithm + " |\n";
  }
  md += "\n## Constants\n\n```\n" + fitted + "```\n";
  return md;
}

std::string DeepbenchSummaryJson(const std::vector<DeepbenchSlice>& slices,
                                 const std::vector<DeepbenchResult>& results) {
  auto errors = [](const ErrorSummary& e) {
    return nlohmann::ordered_json{{"rows", e.predicted},
                                  {"mape_percent", e.mean_ape},
                                  {"median_ape_percent", e.median_ape},
                                  {"max_ape_percent", e.max_ape},
                                  {"mean_signed_percent", e.mean_signed_pe}};
  };
  nlohmann::ordered_json j;
  j["data"] = "shared/validation/deepbench (Baidu DeepBench, NVIDIA training sheets)";
  j["rows"] = results.size();
  j["slices"] = nlohmann::ordered_json::array();
  for (const DeepbenchSlice& s : slices) {
    j["slices"].push_back({{"gpu", s.gpu},
                           {"precision", s.precision},
                           {"kernel", s.kernel},
                           {"model", errors(s.shipped)},
                           {"held_out", errors(s.held_out)},
                           {"roofline", errors(s.roofline)}});
  }
  return j.dump(2) + "\n";
}

std::string DeepbenchScatterSvg(const std::vector<DeepbenchResult>& results) {
  std::vector<std::string> gpus;
  std::vector<report::Series> series;
  for (const DeepbenchResult& r : results) {
    const std::string& gpu = r.measurement->gpu;
    auto it = std::find(gpus.begin(), gpus.end(), gpu);
    if (it == gpus.end()) {
      gpus.push_back(gpu);
      series.push_back({gpu, {}});
      it = gpus.end() - 1;
    }
    series[static_cast<std::size_t>(it - gpus.begin())].points.push_back(
        {r.measurement->measured_s * 1e3, r.shipped.predicted_s * 1e3});
  }
  return PredictedVsMeasuredSvg("GPU kernel model against DeepBench (GEMM, convolution, RNN)",
                                "measured kernel time (ms)", "predicted kernel time (ms)",
                                std::move(series));
}

}  // namespace dtsim::validation
