// Merging plans: several jobs' plans as one plan on a shared cluster, so
// that an engine runs them together (their flows share the links).
//
// Each part is a whole plan (every rank materialized, no servers) built on
// its own sub-cluster; `ranks` maps each of its ranks to a rank of the
// merged cluster. Parts must not share ranks. A part that starts later
// (start_s > 0) gets one delay task per rank, first on the rank's compute
// stream, taking exactly start_s (Task::seconds); every task of the part
// without dependencies waits for its rank's delay task, so the part's work
// begins at start_s.
//
// Task ids: the merged plan holds, for each part in order, its delay tasks
// (ranks in the part's order, only when start_s > 0), then the part's tasks
// in their own order (MergedPlan::first_task), so part task t is merged task
// first_task + t. Groups and collectives follow the same rule.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/plan.h"

namespace dtsim::plan {

struct PlanPart {
  const Plan* plan = nullptr;  // must outlive MergePlans
  std::vector<RankId> ranks;   // merged rank of each of the part's ranks
  double start_s = 0;          // when the part's work may begin (seconds, >= 0)
};

struct MergedPlan {
  Plan plan;
  std::vector<TaskId> first_task;          // per part: merged id of its task 0
  std::vector<std::int32_t> first_collective;  // per part: merged index of its collective 0
};

// Merges `parts` onto a cluster whose rank r sits at `placement[r]`. The
// merged plan's facts (model_name, strategy, sync, buckets, batch_per_rank,
// samples_per_iteration, server_params) are the first part's; iterations is
// the largest; ops_on_rank is each part's, at its ranks. Merging one part
// onto its own placement with the identity map and start 0 gives the same
// plan. Throws InternalError on parts with unmaterialized ranks or servers,
// rank maps out of range or shared ranks.
MergedPlan MergePlans(const std::vector<PlanPart>& parts, std::vector<RankPlacement> placement);

}  // namespace dtsim::plan
