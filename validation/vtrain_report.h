// The files of `dtsim validate vtrain`: every row's prediction (CSV), the
// errors overall, per group and per parallelization parameter (JSON and
// Markdown), and predicted against measured time (SVG). The same results
// give the same bytes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "validation/accuracy.h"
#include "validation/vtrain.h"
#include "validation/vtrain_predict.h"

namespace dtsim::validation {

struct VtrainSummary {
  ErrorSummary overall;
  ErrorSummary single_node;
  ErrorSummary multi_node;
  // Indices into the results of the predicted rows with the largest APE,
  // largest first (ties in row order); at most the `worst` asked for.
  std::vector<std::size_t> worst;
  // Where the errors are: per group, per parameter (tensor_parallel,
  // pipeline_parallel, data_parallel, micro_batch, model, gpus) and value,
  // in that order, values ascending.
  struct Slice {
    std::string group;      // VtrainGroupName
    std::string parameter;  // "tensor_parallel", ..., "model", "gpus"
    std::string value;      // "4"; models: "3.6B" (multi-node) or "h1024 L24" (single-node)
    ErrorSummary errors;
  };
  std::vector<Slice> slices;
  // Distinct failure messages, with how many rows and the first row each.
  struct Failure {
    std::string message;
    int rows = 0;
    std::string first;  // VtrainRow::Where()
  };
  std::vector<Failure> failures;  // in order of first appearance
};

VtrainSummary SummarizeVtrain(const std::vector<RowResult>& results, std::size_t worst = 10);

// One line per row: group, file, line, the row's inputs, measured_ms,
// predicted_ms, percent_error, ape_percent, error (empty fields for a
// failed row's prediction). Ends with '\n'.
std::string PredictionsCsv(const std::vector<RowResult>& results);

// summary.json: the setup, the three ErrorSummary, the worst rows, the
// slices and the failures.
std::string SummaryJson(const VtrainSummary& summary, const std::vector<RowResult>& results,
                        const VtrainSetup& setup);
// summary.md: the same as tables.
std::string SummaryMarkdown(const VtrainSummary& summary, const std::vector<RowResult>& results,
                            const VtrainSetup& setup);
// scatter.svg: predicted against measured iteration time, log-log, one
// colour per group, and the line y = x.
std::string ScatterSvg(const std::vector<RowResult>& results);

}  // namespace dtsim::validation
