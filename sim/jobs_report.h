// Reports of a scenario with jobs (sim/jobs.h): each job's figures in the
// shared run against running alone, as report.json's `jobs` array, as text
// lines, and a timeline whose ranks are labelled by job.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "sim/simulator.h"

namespace dtsim::sim {

// One object per job, in the scenario's order: name, model, start_s, nodes
// (the cluster's node indices), devices, step_time_shared_s,
// step_time_alone_s, slowdown (shared / alone), throughput_shared_samples_per_s,
// throughput_alone_samples_per_s.
nlohmann::ordered_json JobsJson(const Prediction& p);

// One line per job: "job a (resnet50, 16 devices, start 0 s): step 120.3 ms
// shared, 100.1 ms alone (slowdown 1.20x), 2130 samples/s shared".
std::string JobsLog(const Prediction& p);

// A Chrome-trace/Perfetto timeline of the shared run: one process per rank
// of the cluster that a job ran on (at most `max_ranks` per job), named
// "job <name> rank <r> (node <n>, <device> <local>)", its tasks at their
// times in the shared run.
void WriteJobsChromeTrace(std::ostream& out, const Prediction& p, int max_ranks);

}  // namespace dtsim::sim
