// Runs a user measured, for `dtsim fit` (docs/fit.md): a CSV file with a
// header and one row per run:
//
//   scenario,overrides,step_time
//   runs/resnet50-8gpu.yaml,workload.batch_per_device=64,0.241s
//   runs/resnet50-8gpu.yaml,workload.batch_per_device=32; cluster.nodes=2,131ms
//
//   scenario    a scenario file, relative to the CSV file's folder
//   overrides   optional: "path=value" pairs separated by ';', each setting
//               one scalar of the scenario (dotted keys as in sweeps)
//   step_time   the measured time per training step, with its unit; or
//   throughput  the measured samples per second (one of the two columns)
//
// Columns are found by name; other columns are ignored (notes, dates).
#pragma once

#include <string>
#include <vector>

#include "config/scenario.h"

namespace dtsim::validation {

struct MeasuredRun {
  std::string where;        // "runs.csv:3": the row, for keys and messages
  config::Scenario scenario;
  double measured_step_s = 0;
};

// Parses `text` (the contents of `csv_path`). Throws UserError at
// csv_path:line for a missing column, a row with the wrong number of
// fields, an override that is not path=value, a step time without a unit
// or <= 0, a throughput <= 0, and (located in the scenario file) for a
// scenario that does not load. A throughput becomes a step time with the
// scenario's samples per step (its plan's global batch).
std::vector<MeasuredRun> ParseMeasuredRuns(const std::string& text, const std::string& csv_path);
std::vector<MeasuredRun> LoadMeasuredRuns(const std::string& csv_path);

}  // namespace dtsim::validation
