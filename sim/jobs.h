// Several jobs sharing one cluster (config::Scenario::jobs): each job's plan
// is built and priced alone on its own nodes (Simulate of its scenario),
// then the plans are merged onto the whole cluster (plan/merge.h: ranks
// remapped to the job's nodes, each job's work starting at its start time)
// and run together on the SimGrid engine, whose flows share the links: on
// a fat tree with oversubscription, jobs on different nodes of the same
// leaves contend for the leaf uplinks.
//
// Per job, the shared run's step time and throughput (its own measured
// iterations, counted from its start) against the job alone on the same
// nodes of the same cluster (the same engine), and the slowdown. A job whose
// nodes route as on a cluster of its own (any nodes of a single switch, or
// whole leaves of a fat tree from the first node of a leaf on) is alone
// exactly as its own scenario's run; otherwise it is run alone on the whole
// cluster.
//
// Only engine: simgrid: the analytic engine prices each collective alone,
// so jobs would not contend there (refused, UserError).
#pragma once

#include "config/scenario.h"
#include "sim/simulator.h"

namespace dtsim::sim {

// REQUIRES: !s.jobs.empty(). Throws UserError for an engine other than
// simgrid and for what a job's own scenario is refused for. The result's
// top-level figures are the first job's in the shared run; does_not_fit
// names the first job that does not fit ("job 'a': ...").
Prediction SimulateJobs(const config::Scenario& s);

}  // namespace dtsim::sim
