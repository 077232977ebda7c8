#include "study/sweep.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/yaml_reader.h"
#include "report/sweep_page.h"

namespace dtsim::study {
namespace {

std::vector<std::string> AxisPaths(const std::string& yaml) {
  std::vector<std::string> paths;
  for (const SweepAxis& a : FindSweepAxes(ParseYamlDocument(yaml, "t.yaml"))) {
    paths.push_back(a.path);
  }
  return paths;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(SweepAxes, ListOfScalarsIsAnAxisListsOfMappingsAreNot) {
  const std::string yaml =
      "cluster:\n"
      "  nodes: [1, 2, 4]\n"
      "  device: V100-SXM2-32GB\n"
      "  links:\n"
      "    - {name: fabric, bandwidth: [10GBps, 20GBps], latency: 2us}\n"
      "    - {name: other, bandwidth: 5GBps, latency: 2us}\n"
      "parallelism:\n"
      "  strategy: [data, local_sgd]\n";
  EXPECT_EQ(AxisPaths(yaml), (std::vector<std::string>{
                                 "cluster.nodes", "cluster.links[0].bandwidth",
                                 "parallelism.strategy"}));
  const auto axes = FindSweepAxes(ParseYamlDocument(yaml, "t.yaml"));
  EXPECT_EQ(axes[0].values, (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_TRUE(axes[0].numeric);
  EXPECT_FALSE(axes[1].numeric);  // 10GBps has a unit
  EXPECT_EQ(axes[2].values, (std::vector<std::string>{"data", "local_sgd"}));
}

TEST(SweepAxes, StragglerRanksAreValuesNotAxes) {
  const std::string yaml =
      "stragglers:\n"
      "  slow_devices:\n"
      "    - {ranks: [0, 3], factor: [1.5, 2]}\n"
      "  interference: {period: 10s, duration: 1s, slowdown: 2, ranks: [1, 2]}\n";
  EXPECT_EQ(AxisPaths(yaml), (std::vector<std::string>{"stragglers.slow_devices[0].factor"}));
  // A list of lists sweeps a list-valued key.
  const auto axes = FindSweepAxes(ParseYamlDocument(
      "stragglers:\n  interference: {period: 10s, duration: 1s, slowdown: 2, "
      "ranks: [[0], [0, 1]]}\n",
      "t.yaml"));
  ASSERT_EQ(axes.size(), 1u);
  EXPECT_EQ(axes[0].path, "stragglers.interference.ranks");
  EXPECT_EQ(axes[0].values, (std::vector<std::string>{"[0]", "[0, 1]"}));
}

TEST(SweepAxes, PipeDreamStageReplicasAreAValueNotAnAxis) {
  // stage_replicas: a list of integers, one per stage (docs/scenario.md,
  // "parallelism"); a list of lists sweeps it.
  EXPECT_EQ(AxisPaths("parallelism: {schedule: pipedream, stage_replicas: [15, 1], "
                      "micro_batch_size: [32, 64]}\n"),
            (std::vector<std::string>{"parallelism.micro_batch_size"}));
  EXPECT_EQ(AxisPaths("parallelism: {schedule: pipedream, stage_replicas: [[15, 1], [8, 8]]}\n"),
            (std::vector<std::string>{"parallelism.stage_replicas"}));
}

TEST(SweepAxes, AJobsNodeListIsAValueNotAnAxis) {
  // jobs[i].nodes lists a job's node indices (docs/scenario.md, "Several
  // jobs"); a list inside a job's workload is an axis as anywhere else.
  const std::string yaml =
      "engine: simgrid\n"
      "cluster: {nodes: 4, network: {topology: fat_tree, nodes_per_leaf: 2, "
      "oversubscription: [1, 4]}}\n"
      "jobs:\n"
      "  - {name: a, nodes: [0, 2], workload: {model: resnet50, batch_per_device: [16, 32]}}\n"
      "  - {name: b, nodes: [[1], [1, 3]], workload: {model: resnet50}}\n";
  EXPECT_EQ(AxisPaths(yaml),
            (std::vector<std::string>{"cluster.network.oversubscription",
                                      "jobs[0].workload.batch_per_device", "jobs[1].nodes"}));
}

TEST(SweepAxes, NoListNoAxis) {
  EXPECT_TRUE(AxisPaths("cluster: {nodes: 2}\nworkload: {model: resnet50}\n").empty());
}

TEST(ParseSweep, CartesianProductFirstAxisSlowest) {
  const Sweep s = ParseSweep(
      "name: grid\n"
      "cluster: {nodes: [1, 2], devices_per_node: 4}\n"
      "workload: {model: mnist-mlp, batch_per_device: [16, 32, 64]}\n",
      "grid.yaml");
  ASSERT_EQ(s.axes.size(), 2u);
  ASSERT_EQ(s.points.size(), 6u);  // 2 x 3
  const int nodes[] = {1, 1, 1, 2, 2, 2};
  const int batch[] = {16, 32, 64, 16, 32, 64};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(s.points[i].scenario.cluster.nodes, nodes[i]) << i;
    EXPECT_EQ(s.points[i].scenario.cluster.devices_per_node, 4) << i;
    EXPECT_EQ(s.points[i].scenario.workload.batch_per_device, batch[i]) << i;
    EXPECT_EQ(s.points[i].scenario.name, "grid") << i;
  }
  EXPECT_EQ(s.points[4].name, "grid/cluster.nodes=2,workload.batch_per_device=32");
  EXPECT_EQ(s.points[4].choice, (std::vector<std::size_t>{1, 1}));
  EXPECT_EQ(s.name, "grid");
  EXPECT_EQ(s.out_dir, "results/grid");
}

// variable_placement takes a name or a mapping: a list of either sweeps it.
TEST(ParseSweep, VariablePlacementsAreOneAxis) {
  const Sweep s = ParseSweep(
      "name: ps\n"
      "cluster: {nodes: 2, devices_per_node: 1}\n"
      "workload: {model: mnist-mlp}\n"
      "parallelism:\n  strategy: parameter_server\n"
      "  parameter_server:\n    servers: 2\n"
      "    variable_placement: [even, greedy, {partitioned: {max_shard_bytes: 4MB}}]\n",
      "ps.yaml");
  ASSERT_EQ(s.axes.size(), 1u);
  ASSERT_EQ(s.points.size(), 3u);
  const auto p = [&](std::size_t i) {
    return *s.points[i].scenario.parallelism.parameter_server.variable_placement;
  };
  EXPECT_EQ(p(0).policy, plan::PsPlacementPolicy::kEven);
  EXPECT_EQ(p(1).policy, plan::PsPlacementPolicy::kGreedy);
  EXPECT_EQ(p(2).policy, plan::PsPlacementPolicy::kPartitioned);
  EXPECT_EQ(p(2).max_shard_bytes, 4e6);
}

TEST(ParseSweep, NoAxisIsOnePoint) {
  const Sweep s = ParseSweep("cluster: {nodes: 2}\n", "dir/plain.yaml");
  ASSERT_EQ(s.points.size(), 1u);
  EXPECT_EQ(s.points[0].name, "plain");
  EXPECT_EQ(s.points[0].scenario.cluster.nodes, 2);
}

TEST(ParseSweep, ErrorInThirdValueNamesItsLine) {
  // Line 5, column 7 is the "2.5" of the third list item.
  const std::string yaml =
      "cluster:\n"
      "  nodes:\n"
      "    - 1\n"
      "    - 2\n"
      "    - 2.5\n"
      "    - 4\n";
  for (int jobs : {1, 2}) {
    try {
      ParseSweep(yaml, "bad.yaml", jobs);
      FAIL() << "2.5 nodes should be rejected";
    } catch (const UserError& e) {
      EXPECT_EQ(e.where().ToString(), "bad.yaml:5:7") << e.what();
      EXPECT_NE(std::string(e.what()).find("cluster.nodes"), std::string::npos) << e.what();
    }
  }
  // With two bad values, the first in point order is reported (line 3).
  try {
    ParseSweep("cluster:\n  nodes:\n    - one\n    - 2\n    - two\n", "two.yaml", 2);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().ToString(), "two.yaml:3:7") << e.what();
  }
  // Same in flow style: "cluster: {nodes: [1, 2, two]}" has 'two' at column 25.
  try {
    ParseSweep("workload: {model: resnet50}\ncluster: {nodes: [1, 2, two]}\n", "flow.yaml");
    FAIL() << "'two' nodes should be rejected";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().ToString(), "flow.yaml:2:25") << e.what();
  }
}

TEST(ParseSweep, TooManyPointsIsAnError) {
  // 1000 x 1000 x 2 points: more than the million allowed.
  std::string list = "[";
  for (int i = 1; i <= 1000; ++i) list += (i > 1 ? ", " : "") + std::to_string(i);
  list += "]";
  try {
    ParseSweep("cluster: {nodes: " + list + ", devices_per_node: " + list +
                   "}\nworkload: {batch_per_device: [1, 2]}\n",
               "big.yaml");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("workload.batch_per_device"), std::string::npos)
        << e.what();
  }
}

TEST(ParseSweep, AxisInsideAListOfMappings) {
  const Sweep s = ParseSweep(
      "cluster:\n"
      "  nodes: 2\n"
      "  links: [{name: fabric, bandwidth: [10GBps, 20GBps], latency: 2us}]\n"
      "  network: {link: fabric}\n",
      "links.yaml");
  ASSERT_EQ(s.points.size(), 2u);
  ASSERT_EQ(s.points[1].scenario.cluster.custom_links.size(), 1u);
  EXPECT_DOUBLE_EQ(s.points[0].scenario.cluster.custom_links[0].bw_bytes_per_s, 10e9);
  EXPECT_DOUBLE_EQ(s.points[1].scenario.cluster.custom_links[0].bw_bytes_per_s, 20e9);
}

// A small sweep that simulates quickly: 2 x 2 points of a small CNN.
const char* kSmallSweep =
    "name: small\n"
    "cluster: {nodes: [1, 2], devices_per_node: 2, device: K20m, intra_node_link: pcie3-x16,\n"
    "          network: {link: 10GbE}}\n"
    "workload: {model: cifar10-cnn, batch_per_device: [16, 32], iterations: 3}\n"
    "parallelism: {strategy: data}\n";

TEST(RunSweep, OneRowPerPointSameCsvForAnyNumberOfJobs) {
  const Sweep s = ParseSweep(kSmallSweep, "small.yaml");
  ASSERT_EQ(s.points.size(), 4u);
  SweepRunOptions one;
  one.jobs = 1;
  int last_done = -1, calls = 0;
  one.progress = [&](int done, int total) {
    EXPECT_EQ(total, 4);
    EXPECT_GE(done, last_done);
    last_done = done;
    ++calls;
  };
  const std::vector<PointResult> a = RunSweep(s, one);
  EXPECT_EQ(last_done, 4);  // the last call reports all points done
  EXPECT_GE(calls, 1);
  SweepRunOptions two;
  two.jobs = 2;
  const std::vector<PointResult> b = RunSweep(s, two);
  const std::string csv = SweepCsv(s, a);
  EXPECT_EQ(csv, SweepCsv(s, b));

  const std::vector<std::string> lines = Lines(csv);
  ASSERT_EQ(lines.size(), 5u);  // header + 4 points
  EXPECT_EQ(lines[0].rfind("cluster.nodes,workload.batch_per_device,scenario,", 0), 0u)
      << lines[0];
  for (const char* column : {",averaging_period", ",strategy", ",sync"}) {
    EXPECT_NE(lines[0].find(column), std::string::npos) << column << " in " << lines[0];
  }
  // Row 3 is nodes=2, batch 16; the point name is quoted (it has a comma).
  EXPECT_EQ(lines[3].rfind("2,16,\"small/cluster.nodes=2,workload.batch_per_device=16\",", 0), 0u)
      << lines[3];
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].devices, s.points[i].scenario.cluster.num_devices());
    EXPECT_GT(a[i].throughput_samples_per_s, 0);
    EXPECT_GT(a[i].compute_s, 0);
  }
  // Twice the batch per device on the same cluster: a longer step.
  EXPECT_GT(a[1].step_time_s, a[0].step_time_s);
}

TEST(RunSweep, AScenarioWithJobsSweepsItsSharedFabric) {
  // Two jobs on interleaved nodes of a 4-node fat tree (leaves of 2 nodes):
  // both rings cross both leaves' uplinks, so a 4:1 oversubscribed uplink
  // (a quarter of the two NICs under it) can only slow the first job
  // (sim/jobs_test.cc checks the sharing itself by hand). Each row is the
  // first job's figures, as summary.csv is.
  const Sweep s = ParseSweep(
      "engine: simgrid\n"
      "cluster: {nodes: 4, network: {link: 10GbE, topology: fat_tree, nodes_per_leaf: 2, "
      "oversubscription: [1, 4]}}\n"
      "jobs:\n"
      "  - {name: a, nodes: [0, 2], workload: {model: cifar10-cnn, batch_per_device: 16, "
      "iterations: 3}}\n"
      "  - {name: b, nodes: [1, 3], workload: {model: cifar10-cnn, batch_per_device: 16, "
      "iterations: 3}}\n",
      "jobs.yaml");
  ASSERT_EQ(s.points.size(), 2u);
  EXPECT_EQ(s.points[0].scenario.jobs[0].nodes, (std::vector<int>{0, 2}));
  const std::vector<PointResult> r = RunSweep(s, SweepRunOptions{});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].devices, 2);
  EXPECT_GT(r[0].step_time_s, 0);
  EXPECT_GE(r[1].step_time_s, r[0].step_time_s);
}

TEST(RunSweep, MoreJobsThanPointsAndDefaultJobs) {
  const Sweep s = ParseSweep("cluster: {nodes: 1}\nworkload: {model: mnist-mlp, iterations: 2}\n",
                             "one.yaml");
  SweepRunOptions many;
  many.jobs = 16;
  const auto a = RunSweep(s, many);
  const auto b = RunSweep(s);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(SweepCsv(s, a), SweepCsv(s, b));
}

// Issue 10, item 2: one infeasible point does not abort the sweep. A
// pipeline of 5 stages does not divide 8 devices (rejected at load as
// InfeasiblePlan), and GPT-2 XL in 2 stages of a V100-16GB does not fit in
// memory: each stage holds half its 1.56e9 parameters at 16 bytes (fp32
// weights, gradients and two Adam moments) = 12.5 GB, and the activations of
// 24 layers x 2 micro-batches in flight (1F1B) at about 370 MB per layer
// (Korthikanti et al. 2022 Eq. 1 in fp32: s b h (34 + 5 a s / h) x 2 bytes,
// s = 1024, b = 1, h = 1600, a = 25) add about 18 GB. GPT-2 (124M) fits.
// The infeasible points are rows with fits = false and their reason; the
// others are simulated as usual.
TEST(RunSweep, InfeasiblePointsAreRowsWithTheirReason) {
  const std::string yaml =
      "name: mixed\n"
      "cluster: {nodes: 1, devices_per_node: 8, device: V100-SXM2-16GB}\n"
      "workload: {model: [gpt2, gpt2-xl], precision: fp32}\n"
      "parallelism:\n"
      "  strategy: hybrid\n"
      "  pipeline_parallel: [2, 5]\n"
      "  micro_batch_size: 1\n";
  const Sweep s = ParseSweep(yaml, "mixed.yaml");
  ASSERT_EQ(s.points.size(), 4u);
  EXPECT_EQ(s.name, "mixed");
  // The p = 5 points carry their load error, with its position.
  EXPECT_TRUE(s.points[0].infeasible.empty());
  EXPECT_NE(s.points[1].infeasible.find("mixed.yaml:6:"), std::string::npos)
      << s.points[1].infeasible;
  EXPECT_EQ(s.points[1].name, "mixed/workload.model=gpt2,parallelism.pipeline_parallel=5");
  const auto results = RunSweep(s);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_TRUE(results[0].feasible) << results[0].infeasible;
  EXPECT_GT(results[0].throughput_samples_per_s, 0);
  EXPECT_GT(results[0].memory_per_device_bytes, 0);
  for (std::size_t i : {1u, 3u}) {
    EXPECT_FALSE(results[i].feasible);
    EXPECT_NE(results[i].infeasible.find("does not divide"), std::string::npos)
        << results[i].infeasible;
    EXPECT_EQ(results[i].throughput_samples_per_s, 0);
  }
  EXPECT_FALSE(results[2].feasible);
  EXPECT_NE(results[2].infeasible.find("does not fit"), std::string::npos) << results[2].infeasible;
  EXPECT_GT(results[2].memory_per_device_bytes, 16e9);

  const auto lines = Lines(SweepCsv(s, results));
  ASSERT_EQ(lines.size(), 5u);
  const auto header = report::SplitCsvLine(lines[0]);
  for (std::size_t row = 1; row < lines.size(); ++row) {
    const auto fields = report::SplitCsvLine(lines[row]);
    ASSERT_EQ(fields.size(), header.size()) << lines[row];
    for (std::size_t c = 0; c < header.size(); ++c) {
      if (header[c] == "fits") {
        EXPECT_EQ(fields[c], row == 1 ? "true" : "false") << lines[row];
      }
      if (header[c] == "throughput_samples_per_s") {
        EXPECT_EQ(fields[c].empty(), row != 1);
      }
    }
  }
}

// Issue 10 item 10: `dtsim sweep` on this file overflowed the stack in the
// axis search; a billion-laughs file hung. Both are refused like `run` does.
TEST(ParseSweep, SelfReferenceAndBillionLaughsAreRefused) {
  try {
    ParseSweep("x: &a [*a]\n", "loop.yaml");
    FAIL() << "a self-referencing alias should be refused";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().ToString(), "loop.yaml:1:8") << e.what();
  }
  // cluster.devices: 10^9 device mappings once the aliases are expanded.
  std::ostringstream laughs;
  laughs << "d0: &d0 [{name: a, fp32: 1TFLOPS, memory: 1GiB, memory_bandwidth: 1GBps}";
  for (int k = 1; k < 10; ++k) laughs << ", *d0";
  laughs << "]\n";
  for (int i = 1; i <= 8; ++i) {
    laughs << 'd' << i << ": &d" << i << " [*d" << i - 1;
    for (int k = 1; k < 10; ++k) laughs << ", *d" << i - 1;
    laughs << "]\n";
  }
  laughs << "cluster: {devices: *d8}\n";
  EXPECT_THROW(ParseSweep(laughs.str(), "laughs.yaml"), UserError);
}

// Issue 10 item 3 in a sweep: pipeline_parallel matters to hybrid points
// only. The data point is simulated once, its pipeline_parallel cell empty.
TEST(ParseSweep, AxesAPointDoesNotUseMakeNoDuplicates) {
  const std::string yaml =
      "name: mix\n"
      "cluster: {nodes: 1, devices_per_node: 4}\n"
      "workload: {model: gpt2}\n"
      "parallelism:\n"
      "  strategy: [data, hybrid]\n"
      "  pipeline_parallel: [1, 2, 4]\n";
  const Sweep s = ParseSweep(yaml, "mix.yaml");
  ASSERT_EQ(s.points.size(), 4u);  // data; hybrid x 3
  EXPECT_EQ(s.points[0].name, "mix/parallelism.strategy=data");
  EXPECT_EQ(s.points[0].unused_axes, (std::vector<bool>{false, true}));
  EXPECT_EQ(s.points[1].name, "mix/parallelism.strategy=hybrid,parallelism.pipeline_parallel=1");
  EXPECT_EQ(s.points[3].scenario.parallelism.hybrid.pipeline_parallel, 4);
  const auto lines = Lines(SweepCsv(s, RunSweep(s)));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(report::SplitCsvLine(lines[1])[1], "");
  EXPECT_EQ(report::SplitCsvLine(lines[2])[1], "1");
}

TEST(ParseSweep, AKeyNoPointUsesIsAnError) {
  try {
    ParseSweep("parallelism:\n  strategy: [data, local_sgd]\n  pipeline_parallel: 2\n",
               "unused.yaml");
    FAIL() << "no point uses pipeline_parallel";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().line, 3) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not use parallelism.pipeline_parallel"),
              std::string::npos)
        << e.what();
  }
}

// Found by fuzzing (issue 10): a key given twice, each time as a list,
// made the second axis point at the first one's element after it was chosen
// (yaml-cpp's operator[] on a scalar: an internal error). Refused at the
// second key, as the loader refuses duplicate keys.
TEST(ParseSweep, DuplicateKeysAreRefusedAtTheSecond) {
  const std::string yaml =
      "parallelism:\n"
      "  strategy: local_sgd\n"
      "  averaging_period: [2, 5]\n"
      "  averaging_period: [10, 20]\n";
  try {
    ParseSweep(yaml, "dup.yaml");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("dup.yaml:4:3: error: duplicate key "
                                         "'parallelism.averaging_period' (first given at line 3)"),
              std::string::npos)
        << e.what();
  }
}

// Found by fuzzing (issue 10): a list used again through an alias made the
// first axis's choice write through to the second (yaml-cpp BadSubscript,
// exit 1). Refused at the list.
TEST(ParseSweep, AListUsedThroughAnAliasIsNotAnAxis) {
  try {
    ParseSweep("a: &a [1, 2]\nb: *a\n", "alias.yaml");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("alias.yaml:1:4: error: b: a list used again through "
                                         "an alias"),
              std::string::npos)
        << e.what();
  }
}

// Found by fuzzing (issue 10): six axes of ten values and an unknown key
// took 42 s and 1.4 GB (a million points allocated, each failing) before
// the one-line refusal. Point 0 is loaded first: the mistake is reported at
// once. Checked by outcome, not time: the error is point 0's.
TEST(ParseSweep, AMistakeEveryPointSharesIsReportedBeforeExpanding) {
  std::string yaml;
  for (const char* key : {"a", "b", "c", "d", "e", "f"}) yaml += std::string(key) + ": [0,1,2,3,4,5,6,7,8,9]\n";
  try {
    ParseSweep(yaml, "wide.yaml");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'a'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtsim::study
