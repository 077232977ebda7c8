#include "exec/runtime/timeline_trace.h"

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "plan/plan_export.h"

namespace dtsim::exec {

void WriteTimelineTrace(std::ostream& out, const plan::Plan& plan,
                        const models::ModelGraph& graph,
                        const std::vector<TimelineEvent>& events) {
  nlohmann::ordered_json trace = nlohmann::ordered_json::array();
  std::set<int> ranks;
  for (const TimelineEvent& e : events) ranks.insert(e.rank);
  for (int r : ranks) {
    trace.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
                     {"args", {{"name", "rank " + std::to_string(r) + " (measured)"}}}});
    for (int s = 0; s < plan::kNumStreams; ++s)
      trace.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", s},
                       {"args", {{"name", plan::StreamKindName(static_cast<plan::StreamKind>(s))}}}});
  }
  for (const TimelineEvent& e : events) {
    const plan::Task& t = plan.task(e.task);
    const int tid = e.receive ? static_cast<int>(plan::StreamKind::kComm) : static_cast<int>(t.stream);
    // A receive's task is the sender's kSend.
    const std::string name =
        e.receive ? "recv from " + std::to_string(t.rank) + " (mb " + std::to_string(t.micro_batch) + ")"
                  : plan::TaskLabel(plan, graph, t);
    trace.push_back({{"name", name},
                     {"cat", plan::TaskKindName(t.kind)},
                     {"ph", "X"},
                     {"pid", e.rank},
                     {"tid", tid},
                     {"ts", e.start_us},
                     {"dur", e.end_us - e.start_us},
                     {"args", {{"iteration", e.iteration}, {"task", e.task}}}});
  }
  out << nlohmann::ordered_json{{"traceEvents", trace}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

}  // namespace dtsim::exec
