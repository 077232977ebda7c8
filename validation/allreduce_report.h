// `dtsim validate allreduce`: DeepBench's all-reduce rows predicted by
// validation/allreduce.h, with the constants fitted (validation/fit.h:
// MAPE over log-scaled constants) on every row and, for the held-out
// figures, on the other GPUs' rows only (leave one GPU out), under three
// pricings: the ideal ring, NCCL's protocols (sim/cost/nccl_protocols.h), and
// every sheet peer to peer (what the topology alone implies).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "validation/accuracy.h"
#include "validation/allreduce.h"

namespace dtsim::validation {

struct AllreduceVariant {
  std::string name;  // "ideal", "nccl-protocols", "all-peer-to-peer"
  AllreducePricing pricing;
  AllreduceConstants all_rows;                        // fitted on every row
  std::map<std::string, AllreduceConstants> without;  // fitted without each GPU's rows
  std::vector<double> fitted_s;    // per row, with all_rows
  std::vector<double> held_out_s;  // per row, with without[its GPU]
};

struct AllreduceValidation {
  std::vector<AllreduceMeasurement> rows;
  std::vector<AllreduceVariant> variants;  // ideal first
};

// Fits and predicts every variant. Throws UserError when a GPU's held-out
// training set is too small to fit (validation/fit.h MinRowsToFit).
AllreduceValidation ValidateAllreduce(std::vector<AllreduceMeasurement> rows, int jobs);

// Error summaries of `predicted_s` against the rows, grouped: "all", then
// "gpu=..." , "ranks=...", "algorithm=..." (in that order, keys sorted).
std::vector<std::pair<std::string, ErrorSummary>> AllreduceSlices(
    const std::vector<AllreduceMeasurement>& rows, const std::vector<double>& predicted_s);

std::string AllreduceJson(const AllreduceValidation& v);
std::string AllreduceMarkdown(const AllreduceValidation& v);
// A few lines for the terminal: each variant's held-out and in-sample errors.
std::string AllreduceSummaryText(const AllreduceValidation& v);

}  // namespace dtsim::validation
