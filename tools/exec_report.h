// What `dtsim exec` and `validate SCENARIO` report after a real run: the
// step log's summary on `out`, and in the output folder exec.json (or, for
// validate, validation.json with the prediction beside the measurement,
// validation.md and validation.svg), exec_trace.json, TensorBoard events
// and eval.csv. Sees both sim/ (the prediction) and exec/ (the run).
#pragma once

#include <iosfwd>
#include <optional>

#include "config/scenario.h"
#include "exec/runtime/plan_executor.h"
#include "exec/train/lr_schedule.h"
#include "models/graph.h"
#include "plan/plan.h"
#include "tools/exec_command.h"
#include "tools/local_run.h"

namespace dtsim::tools {

// Rank 0 calls it once the run `r` of `plan` has ended; `net` is the
// emulated network the ranks ran in (nullopt: none), `lr` the schedule they
// trained with. All files are written or none (OutputSet); prints each path.
void ReportExecRun(const ExecCommandOptions& o, const config::Scenario& s, const plan::Plan& plan,
                   const models::ModelGraph& graph, const exec::ExecResult& r,
                   const std::optional<NetworkSetting>& net, const exec::LrScheduleOptions& lr,
                   std::ostream& out);

}  // namespace dtsim::tools
