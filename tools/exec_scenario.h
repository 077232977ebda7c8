// What running a scenario for real needs from it, shared by `dtsim exec`,
// `validate` and `profile` (tools/exec_command.cc).
#pragma once

#include "config/scenario.h"
#include "exec/runtime/optimizer.h"

namespace dtsim::tools {

// The optimizer exec runs for the scenario's parallelism.optimizer, at
// learning rate `lr` (<= 0: 0.01, Adam 1e-3).
exec::OptimizerOptions OptimizerFor(const config::Scenario& s, double lr);
// Throws UserError for what real execution does not do (tensor
// parallelism, ...), before any work.
void CheckExecutable(const config::Scenario& s);

}  // namespace dtsim::tools
