// Jobs sharing a fabric on the SimGrid engine: a contention computed by hand
// (plans merged with plan/merge.h and run directly), and whole scenarios
// through SimulateJobs.
#include "sim/jobs.h"

#include <gtest/gtest.h>

#include <string>

#include "plan/merge.h"
#include "sim/engine/simgrid_engine.h"

namespace dtsim::sim {
namespace {

constexpr double kNicBw = 12.5e9;  // bytes/s (100 Gb/s)
constexpr double kBytes = 1e9;     // all-reduce payload per rank

// A job that is one 2-rank ring all-reduce of kBytes and nothing else, on
// two nodes of one device.
plan::Plan OneAllReduce() {
  plan::Plan p;
  p.ranks.resize(2);
  p.ranks[1].node = 1;
  plan::Collective c;
  c.group = p.AddGroup({0, 1});
  c.bytes = kBytes;
  p.AddCollective(c, {{}, {}}, 0);
  return p;
}

// Four nodes of one device on a fat tree of two leaves of two nodes, 2:1
// oversubscribed: each leaf's uplink carries 2 x NIC / 2 = one NIC's
// bandwidth. No latencies, so times are bandwidth terms only.
//
//        spine
//       /     \   .
//   leaf 0   leaf 1
//   n0  n1   n2  n3
NetworkSpec TwoLeaves() {
  NetworkSpec n;
  n.nodes = 4;
  n.devices_per_node = 1;
  n.intra_bw_bytes_per_s = 10 * kNicBw;
  n.nic_bw_bytes_per_s = kNicBw;
  n.fat_tree = true;
  n.nodes_per_leaf = 2;
  n.oversubscription = 2;
  return n;
}

TEST(Jobs, TwoAllReducesSharingUplinksTakeTwiceAsLong) {
  // Job A on nodes 0 and 2, job B on nodes 1 and 3: each ring crosses the
  // spine. A 2-rank ring all-reduce is 2 steps in which each rank sends
  // kBytes / 2 to the other. Alone, every link of a flow's path (NIC up,
  // leaf up, leaf down, NIC down) carries that flow only, at kNicBw:
  //   alone = 2 x (kBytes / 2) / kNicBw = kBytes / kNicBw = 80 ms.
  // Together, leaf 0's uplink carries A's 0 -> 2 and B's 1 -> 3 (leaf 1's
  // A's 2 -> 0 and B's 3 -> 1, and the downlinks likewise): two flows share
  // one NIC's bandwidth, kNicBw / 2 each (max-min fair), the NICs still
  // carry one flow each:
  //   shared = 2 x (kBytes / 2) / (kNicBw / 2) = 2 kBytes / kNicBw = 160 ms.
  const plan::Plan job = OneAllReduce();
  std::vector<plan::RankPlacement> cluster(4);
  for (int r = 0; r < 4; ++r) cluster[static_cast<std::size_t>(r)].node = r;
  TaskCosts costs;  // the collective's member tasks: simulated as flows
  costs.task_ns.assign(job.num_tasks(), 0);
  costs.collective_ns.assign(1, 0);

  const plan::MergedPlan alone = plan::MergePlans({{&job, {0, 2}, 0}}, cluster);
  const EngineResult a = RunSimgridEngine(alone.plan, costs, TwoLeaves());
  EXPECT_NEAR(NsToSeconds(a.makespan), kBytes / kNicBw, 1e-6);

  const plan::MergedPlan both =
      plan::MergePlans({{&job, {0, 2}, 0}, {&job, {1, 3}, 0}}, cluster);
  TaskCosts two = costs;
  two.task_ns.insert(two.task_ns.end(), costs.task_ns.begin(), costs.task_ns.end());
  two.collective_ns.assign(2, 0);
  const EngineResult s = RunSimgridEngine(both.plan, two, TwoLeaves());
  EXPECT_NEAR(NsToSeconds(s.makespan), 2 * kBytes / kNicBw, 1e-6);
  // Each job's all-reduce ends at the shared time.
  EXPECT_NEAR(NsToSeconds(s.timing[static_cast<std::size_t>(both.first_task[1])].end),
              2 * kBytes / kNicBw, 1e-6);
}

// Two data-parallel MNIST MLP jobs of 2 nodes each on a 4-node cluster of
// one V100 per node.
std::string TwoJobs(const std::string& network) {
  return "engine: simgrid\n"
         "cluster:\n"
         "  nodes: 4\n"
         "  devices_per_node: 1\n"
         "  network: " + network + "\n"
         "outputs: {trace: false}\n"
         "jobs:\n"
         "  - {name: a, nodes: [0, 2], workload: {model: mnist-mlp, batch_per_device: 64, "
         "iterations: 4}}\n"
         "  - {name: b, start: 1 ms, nodes: [1, 3], workload: {model: mnist-mlp, "
         "batch_per_device: 64, iterations: 4}}\n";
}

TEST(Jobs, JobsOnASingleSwitchRunAsAlone) {
  // On one non-blocking switch the jobs' flows share no link (each node's
  // NIC carries one job's): each job's step is its step alone.
  const Prediction p =
      Simulate(config::ParseScenario(TwoJobs("{link: 10GbE}"), "jobs.yaml"));
  ASSERT_EQ(p.jobs.size(), 2u);
  for (const JobRun& run : p.jobs) {
    SCOPED_TRACE(run.name);
    EXPECT_GT(run.shared.metrics.step_time_s, 0);
    EXPECT_NEAR(run.shared.metrics.step_time_s, run.alone.step_time_s,
                1e-9 * run.alone.step_time_s);
    EXPECT_NEAR(run.slowdown, 1, 1e-9);
  }
  // The top-level figures are the first job's.
  EXPECT_EQ(p.metrics.step_time_s, p.jobs[0].shared.metrics.step_time_s);
  EXPECT_EQ(p.jobs[1].ranks, (std::vector<plan::RankId>{1, 3}));
}

TEST(Jobs, InterleavedJobsOnAnOversubscribedFatTreeContend) {
  // The same jobs across the two leaves of a 2:1 fat tree: their
  // all-reduces share the leaf uplinks while both run.
  const Prediction p = Simulate(config::ParseScenario(
      TwoJobs("{link: 10GbE, topology: fat_tree, nodes_per_leaf: 2, oversubscription: 2}"),
      "jobs.yaml"));
  ASSERT_EQ(p.jobs.size(), 2u);
  for (const JobRun& run : p.jobs) {
    SCOPED_TRACE(run.name);
    EXPECT_GT(run.slowdown, 1.01);
    EXPECT_LE(run.slowdown, 2.0 + 1e-9);  // at most the all-reduces' time doubled
  }
}

TEST(Jobs, TheAnalyticEngineIsRefused) {
  config::Scenario s = config::ParseScenario(TwoJobs("{link: 10GbE}"), "jobs.yaml");
  s.engine = "analytic";  // as dtsim run --engine analytic sets it
  EXPECT_THROW(Simulate(s), UserError);
}

}  // namespace
}  // namespace dtsim::sim
