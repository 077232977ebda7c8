// An op-cost table: measured times of a model's ops on one device, keyed by
// what an op computes (its kind and per-sample shapes) and the batch it ran
// at. `dtsim profile` writes one from the exec backend; the torch.profiler
// trace importer (config/torch_trace.h) makes one from a PyTorch trace; a
// scenario's `workload.cost_model: measured` with `cost_table: FILE` prices
// its ops from it (sim/cost/measured_costs.h). Format: docs/measured_costs.md.
//
// The file is JSON:
//   {"format": "dtsim-op-costs", "version": 1,
//    "source": "dtsim profile" | "torch.profiler", "device": "...",
//    "backend": "cpu-avx512", "threads": 1, "concurrent": 2, "precision": "fp32",
//    "host": "...", "date": "2026-11-28T01:02:03Z", "dtsim_version": "...",
//    "libraries": {"eigen": "3.4.0", ...},
//    "ops": [{"signature": "...", "kind": "conv2d", "batch": 32, "name": "conv1",
//             "occurrences": 2, "backward_input": true,
//             "forward_flops": ..., "backward_flops": ..., "forward_bytes": ..., "backward_bytes": ...,
//             "forward": {"median_s": ..., "mean_s": ..., "min_s": ..., "max_s": ..., "runs": 15},
//             "backward": {...}}, ...],
//    "optimizer": {"name": "momentum", "params": 1068298, "seconds": {...}},
//    "communication": [{"name": "gloo:all_reduce", "bytes": 4.2e6, "seconds": {...}}]}
// Times are seconds per call of the op at `batch` samples.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/op.h"

namespace dtsim::config {

// Version of the format this build writes and reads.
inline constexpr int kOpCostTableVersion = 1;

// What an op computes, as one line: its kind, per-sample input and output
// shapes, parameters, dtype and the attributes that change its kernels
// (window, groups, bias, causal mask, transpose, tensor-parallel split...).
// Two ops with the same signature run the same kernels at the same batch,
// e.g. "conv2d in=64x56x56 out=64x56x56 params=36864 k=3x3 s=1x1 p=1x1 g=1".
std::string OpSignature(const models::Op& op);

// Repeated timings of one piece of work, seconds per call.
struct OpTiming {
  double median_s = 0;  // > 0
  double min_s = 0;     // 0 < min <= median <= max
  double max_s = 0;
  int runs = 1;         // timed calls the statistics are over, >= 1
  double mean_s = 0;    // min <= mean <= max; 0 = not known
  // What pricing uses: the mean, or the median when the mean is not known.
  // A step's expected time is the sum of its calls' expected times, and a
  // measured step time is a mean over steps; noise (preemption, page
  // faults) only ever lengthens a call, so the median of a call falls short.
  double Expected() const { return mean_s > 0 ? mean_s : median_s; }
};
// The statistics of `seconds` (non-empty, every value > 0).
OpTiming TimingOf(std::vector<double> seconds);

struct OpCostEntry {
  std::string signature;  // OpSignature
  models::OpKind kind = models::OpKind::kInput;
  std::int64_t batch = 1;  // samples per call, >= 1
  std::string name;        // an op of the profiled model with this signature
  int occurrences = 1;     // ops of the profiled model with this signature
  // False when the backward computed no input gradient (the op reads only
  // graph inputs): `backward` is then all weight gradient.
  bool backward_input = true;
  // Work of one call at `batch` (models::Op's counts): what interpolation
  // between shapes of a kind scales by.
  double forward_flops = 0, backward_flops = 0;
  double forward_bytes = 0, backward_bytes = 0;
  std::optional<OpTiming> forward;
  std::optional<OpTiming> backward;  // input and weight gradients together
};

// The optimizer step, measured over `params` parameters.
struct OptimizerCost {
  std::string name;  // "sgd", "momentum", "adam", ...
  std::int64_t params = 0;  // > 0
  OpTiming seconds;
};

// A collective found in a trace: kept apart as communication, never used
// as a compute cost.
struct CommunicationCost {
  std::string name;  // e.g. "gloo:all_reduce", "nccl:all_reduce"
  double bytes = 0;  // payload, >= 0 (0 when the trace does not say)
  OpTiming seconds;
};

struct OpCostTable {
  std::string source;     // "dtsim profile", "torch.profiler"
  std::string device;     // what was measured, e.g. "cpu (AMD EPYC 7B13)"
  std::string backend;    // exec backend build or framework, e.g. "cpu-avx512", "pytorch 1.13.1"
  int threads = 1;        // threads the kernels ran on, >= 1
  int concurrent = 1;     // copies of the step that ran at once (ranks sharing the machine), >= 1
  std::string precision = "fp32";  // hw::PrecisionName of the runs
  std::string host, date, dtsim_version;
  std::map<std::string, std::string> libraries;  // library -> version
  std::string scenario;   // the scenario profiled, "" for traces
  std::vector<OpCostEntry> entries;  // at most one per (signature, batch)
  std::optional<OptimizerCost> optimizer;
  std::vector<CommunicationCost> communication;
};

// "" when `t` can be written and read back: every entry with a signature,
// batch >= 1, at least one timing, timings with 0 < min <= median <= max
// and runs >= 1, finite work >= 0, no two entries with the same
// (signature, batch), threads and concurrent >= 1; otherwise the first
// problem.
std::string OpCostTableProblem(const OpCostTable& t);

// The table as JSON text (entries in the order given, numbers with 17
// significant digits so that a round trip is exact).
// REQUIRES: OpCostTableProblem(t) is empty (DTSIM_CHECK).
std::string OpCostTableJson(const OpCostTable& t);

// Parses a table; `filename` names the source in errors. Throws UserError
// naming the file and the place ("ops[3].forward.median_s") on malformed
// JSON, a wrong format or version, unknown or missing keys and
// out-of-range values.
OpCostTable ParseOpCostTable(const std::string& json_text, const std::string& filename);
// Same from a file; a missing or unreadable file is a UserError naming it.
OpCostTable LoadOpCostTable(const std::string& path);
// Multiplies every time of `t` (ops, optimizer, communication) by
// `factor` > 0: a table measured alone, for processes that share the cores.
void ScaleOpCostTable(double factor, OpCostTable* t);
// True when `json_text` is a Chrome trace (a JSON object with traceEvents),
// such as torch.profiler's export_chrome_trace writes, not a table.
bool IsChromeTrace(const std::string& json_text);
// True when the file at `path` is a trace rather than a table: gzipped
// (".gz", as torch.profiler traces are often kept) or a Chrome trace.
// Throws UserError when it cannot be read.
bool IsTraceFile(const std::string& path);
// The text of a file; a missing or unreadable file is a UserError naming it.
std::string ReadCostFile(const std::string& path);

}  // namespace dtsim::config
