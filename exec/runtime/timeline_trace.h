// The measured timeline of a real run as a Chrome/Perfetto trace, laid out
// like the simulator's trace.json (one process per rank, a compute and a
// comm thread, tasks named by plan::TaskLabel), so that the prediction's and
// the measurement's timelines can be opened side by side.
#pragma once

#include <ostream>
#include <vector>

#include "exec/runtime/plan_executor.h"
#include "models/graph.h"
#include "plan/plan.h"

namespace dtsim::exec {

// Writes {"traceEvents": [...]} with complete ("X") events in microseconds;
// receives are on the comm thread, named "recv from <rank> (mb <k>)".
void WriteTimelineTrace(std::ostream& out, const plan::Plan& plan,
                        const models::ModelGraph& graph,
                        const std::vector<TimelineEvent>& events);

}  // namespace dtsim::exec
