#include "python/api.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "config/scenario.h"
#include "models/zoo.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace dtsim::python {
namespace {

// A scenario small enough to simulate in milliseconds: 2 x 2 V100 training
// the zoo's tiny MLP-free CNN, as a document's text.
constexpr const char* kSmall = R"({
  "name": "small",
  "cluster": {"nodes": 2, "devices_per_node": 2},
  "workload": {"model": "cifar10-cnn", "batch_per_device": 32, "iterations": 3}
})";

TEST(PythonApi, RunGivesTheReportOfTheSimulation) {
  // Expected: sim::ReportJson of the same scenario simulated directly.
  const config::Scenario s = config::ParseScenario(kSmall, "<dict>");
  const auto expected = sim::ReportJson(s, sim::Simulate(s));
  const RunResult r = python::Run({"<dict>", kSmall});
  EXPECT_EQ(r.report, expected);
  EXPECT_EQ(r.infeasible, "");
}

TEST(PythonApi, RunReadsFilesAndOverridesTheEngine) {
  config::Scenario s = config::LoadScenario("scenarios/cifar10-4gpu.yaml");
  const double analytic = sim::Simulate(s).metrics.throughput_samples_per_s;
  const RunResult r = python::Run({"scenarios/cifar10-4gpu.yaml", ""});
  EXPECT_EQ(r.report["throughput_samples_per_s"].get<double>(), analytic);
  const RunResult g = python::Run({"scenarios/cifar10-4gpu.yaml", ""}, "simgrid");
  EXPECT_EQ(g.report["engine"], "simgrid") << g.report.dump(2).substr(0, 400);
  // Issue 44 item 9: "SimGrid" and "bogus" ran the analytic engine and the
  // report named them; refused as the CLI's --engine refuses them.
  EXPECT_THROW(python::Run({"scenarios/cifar10-4gpu.yaml", ""}, "SimGrid"), UserError);
  EXPECT_THROW(python::Run({"scenarios/cifar10-4gpu.yaml", ""}, "bogus"), UserError);
}

TEST(PythonApi, ErrorsNameTheLineOfTheText) {
  // "devices_per_node": -1 is on line 3 of this text.
  const std::string text = "{\n  \"cluster\": {\n    \"devices_per_node\": -1\n  }\n}";
  try {
    python::Run({"<dict>", text});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().file, "<dict>");
    EXPECT_EQ(e.where().line, 3) << e.what();
  }
}

TEST(PythonApi, RunSaysWhyAPlanDoesNotFit) {
  // GPT-3 175B on one 32 GB V100: the parameters alone are 350 GB in fp16.
  const RunResult r = python::Run({"<dict>", R"({"workload": {"model": "gpt3-175b", "batch_per_device": 1,
      "precision": "fp16"}})"});
  EXPECT_NE(r.infeasible, "");
  EXPECT_TRUE(r.report["throughput_samples_per_s"].is_null());
}

TEST(PythonApi, SweepGivesOnePointPerCombination) {
  // 2 node counts x 2 batches = 4 points, first axis slowest (study/sweep.h).
  const std::string text = R"({"cluster": {"nodes": [1, 2], "devices_per_node": 2},
      "workload": {"model": "cifar10-cnn", "batch_per_device": [16, 32], "iterations": 2}})";
  const auto points = Sweep({"<dict>", text}, 1);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[1]["axes"]["cluster.nodes"], 1.0);
  EXPECT_EQ(points[1]["axes"]["workload.batch_per_device"], 32.0);
  EXPECT_EQ(points[2]["devices"], 4);
  for (const auto& p : points) {
    EXPECT_TRUE(p["feasible"].get<bool>());
    EXPECT_GT(p["throughput_samples_per_s"].get<double>(), 0);
  }
}

TEST(PythonApi, SearchRanksPlansFastestFirst) {
  const std::string text = R"({"cluster": {"nodes": 1, "devices_per_node": 4,
      "device": "A100-SXM4-80GB", "intra_node_link": "nvlink3"},
      "workload": {"model": "gpt2", "precision": "bf16",
                   "iterations": 2},
      "parallelism": {"strategy": "hybrid", "global_batch": 16}})";
  SearchArgs args;
  args.devices = {4};
  args.jobs = 1;
  args.top = 5;
  const auto plans = Search({"<dict>", text}, args);
  ASSERT_FALSE(plans.empty());
  EXPECT_LE(plans.size(), 5u);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    EXPECT_EQ(plans[i]["rank"], i + 1);
    EXPECT_FALSE(plans[i]["extrapolated"].get<bool>());  // every returned plan in full
    if (i > 0) {
      EXPECT_GE(plans[i - 1]["throughput_samples_per_s"].get<double>(),
                plans[i]["throughput_samples_per_s"].get<double>());
    }
  }
}

TEST(PythonApi, ModelGivesTotalsAndTheTable) {
  // Expected: the zoo graph's own totals and table (models/zoo.h).
  const models::ModelGraph g = models::BuildZooModel("resnet50");
  const auto m = Model("resnet50");
  EXPECT_EQ(m["params"], g.Totals().params);
  EXPECT_EQ(m["table"], models::FormatModelTable(g));
  EXPECT_THROW(Model("no-such-model"), UserError);
  EXPECT_THROW(Model("missing.yaml"), UserError);
}

}  // namespace
}  // namespace dtsim::python
