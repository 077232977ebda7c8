// `dtsim profile SCENARIO`: times every op of the scenario's per-device
// training step on this machine's device through the exec backend and
// writes an op-cost table (config/op_cost_table.h) that `workload.cost_model:
// measured` prices from (docs/measured_costs.md).
#pragma once

#include <iosfwd>
#include <string>

namespace dtsim::tools {

struct ProfileCommandOptions {
  std::string scenario_path;
  std::string out_path;      // default results/profile/<scenario name>.json
  std::string backend = "cpu";
  int threads = 1;           // CPU kernel threads (as exec --threads)
  bool portable = false;     // the portable CPU kernels (as exec --portable)
  int warmup_steps = 1;
  int timed_steps = 5;           // at least; more until 2 s are timed (at most 50)
  int concurrent = 0;        // copies of the step at once; 0 = the ranks on a node, at most the cores
  bool quiet = false;
  // A torch.profiler trace of the scenario's model to turn into the table
  // instead of running the ops here (config/torch_trace.h).
  std::string torch_trace;
};

void ProfileCommand(const ProfileCommandOptions& o, std::ostream& out, std::ostream& err);

}  // namespace dtsim::tools
