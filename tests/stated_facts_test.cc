// Stated facts must move predictions toward measurements: for each built-in
// framework profile with a measured case (docs/stated_facts.md), the error
// with the profile against the error with framework `none`, computed here
// and compared with what the document quotes, so that text and code cannot
// drift and a profile that makes its case worse fails.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/framework.h"
#include "config/scenario.h"
#include "sim/simulator.h"
#include "validation/accuracy.h"
#include "validation/measured_runs.h"
#include "validation/vtrain.h"
#include "validation/vtrain_predict.h"
#include "validation/vtrain_report.h"

namespace dtsim {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// "27.5% (-26.3%)": mean absolute and mean signed error, as the document
// writes them.
std::string Quoted(double mean_ape, double mean_signed) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f%% (%+.1f%%)", mean_ape, mean_signed);
  return text;
}

std::string Quoted(const validation::ErrorSummary& e) {
  return Quoted(e.mean_ape, e.mean_signed_pe);
}

const config::FrameworkProfile& Builtin(const std::string& name) {
  const config::FrameworkProfile* p = config::FindFramework(name);
  EXPECT_NE(p, nullptr) << name;
  return *p;
}

// The six PyTorch 2.11 eager runs on one H100 (scenarios/fit/
// h100-pytorch-runs.csv, measured by scripts/device_cuda_check.sh:
// results/h100/summary.txt), predicted with the pytorch-eager profile they
// name and with none.
TEST(StatedFacts, PytorchEagerOnTheH100Runs) {
  const std::vector<validation::MeasuredRun> runs =
      validation::LoadMeasuredRuns("scenarios/fit/h100-pytorch-runs.csv");
  ASSERT_EQ(runs.size(), 6u);
  std::vector<double> with, without;
  for (const validation::MeasuredRun& r : runs) {
    config::Scenario s = r.scenario;
    ASSERT_EQ(s.workload.framework.name, "pytorch-eager") << r.where;
    with.push_back(validation::PercentError(sim::Simulate(s, {.fast = true}).metrics.step_time_s,
                                            r.measured_step_s));
    s.workload.framework = Builtin("none");
    without.push_back(validation::PercentError(
        sim::Simulate(s, {.fast = true}).metrics.step_time_s, r.measured_step_s));
  }
  const validation::ErrorSummary w = validation::SummarizeErrors(with, 0);
  const validation::ErrorSummary n = validation::SummarizeErrors(without, 0);
  EXPECT_LT(w.mean_ape, n.mean_ape) << "pytorch-eager moves the H100 runs away from the measurement";
  const std::string doc = Slurp("docs/stated_facts.md");
  ASSERT_FALSE(doc.empty()) << "docs/stated_facts.md not found (tests run from the repository root)";
  const std::string quote = "H100 runs: none " + Quoted(n) + ", pytorch-eager " + Quoted(w);
  EXPECT_NE(doc.find(quote), std::string::npos) << "docs/stated_facts.md should say: " << quote;
}

// vTrain's Megatron iterations (shared/validation/vtrain): every 8th row,
// predicted with megatron-lm and with none, as `dtsim validate vtrain
// [--framework megatron-lm]` does for all of them. The document quotes the
// full runs committed in results/vtrain/ and results/vtrain-megatron/.
TEST(StatedFacts, MegatronLmOnVtrain) {
  const std::string doc = Slurp("docs/stated_facts.md");
  ASSERT_FALSE(doc.empty());
  for (const char* dir : {"results/vtrain", "results/vtrain-megatron"}) {
    const auto j = nlohmann::json::parse(Slurp(fs::path(dir) / "summary.json"));
    const std::string quote =
        Quoted(j.at("overall").at("mape_percent").get<double>(),
               j.at("overall").at("mean_signed_error_percent").get<double>());
    EXPECT_NE(doc.find(std::string(dir) + "/: " + quote), std::string::npos)
        << "docs/stated_facts.md should quote " << dir << "/: " << quote;
  }
  const fs::path data = "../shared/validation/vtrain";
  if (!fs::exists(data / "ground_truth_single.csv")) GTEST_SKIP() << "no " << data;
  const std::vector<validation::VtrainRow> all = validation::LoadVtrainData(data.string());
  std::vector<validation::VtrainRow> rows;
  for (std::size_t i = 0; i < all.size(); i += 8) rows.push_back(all[i]);
  double mape[2];
  for (int with = 0; with < 2; ++with) {
    validation::PredictOptions o;
    o.setup.framework = Builtin(with ? "megatron-lm" : "none");
    o.jobs = 2;
    // JoinResults points into both vectors: they outlive the results.
    const std::vector<validation::RowPrediction> predicted = validation::PredictVtrain(rows, o);
    const auto results = validation::JoinResults(rows, predicted);
    const validation::VtrainSummary s = validation::SummarizeVtrain(results);
    ASSERT_EQ(s.overall.failed, 0);
    mape[with] = s.overall.mean_ape;
  }
  EXPECT_LT(mape[1], mape[0]) << "megatron-lm moves vTrain's iterations away from the measurement";
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

// docs/parameter_server.md's worked example (and docs/stated_facts.md's
// quote of it): VGG-16 on 4 V100 workers and 4 dedicated servers over
// 10 GbE, batch 32, the step time under each placement.
TEST(StatedFacts, ParameterServerPlacementExampleStepTimes) {
  auto step = [](const std::string& placement) {
    const std::string yaml =
        "name: vgg16-ps\n"
        "cluster: {nodes: 4, devices_per_node: 1, device: V100-SXM2-16GB, intra_node_link: "
        "nvlink2, network: {link: 10GbE}}\n"
        "workload: {model: vgg16, batch_per_device: 32, precision: fp32, iterations: 3}\n"
        "parallelism:\n  strategy: parameter_server\n  parameter_server: {servers: 4, "
        "variable_placement: " + placement + "}\n";
    const sim::Prediction p = sim::Simulate(config::ParseScenario(yaml, "vgg16-ps.yaml"));
    char text[32];
    std::snprintf(text, sizeof text, "%.2f s", p.metrics.step_time_s);
    return std::string(text);
  };
  const std::string doc = Slurp("docs/parameter_server.md");
  ASSERT_FALSE(doc.empty());
  const std::string round_robin = step("round_robin"), even = step("even");
  EXPECT_NE(doc.find("the step is " + round_robin), std::string::npos) << round_robin;
  EXPECT_NE(doc.find("runs a " + even + "\nstep"), std::string::npos) << even;
  EXPECT_NE(doc.find("4,000,000 bytes " + step("{partitioned: {max_shard_bytes: 4000000B}}")),
            std::string::npos);
  EXPECT_NE(doc.find("greedy " + step("greedy")), std::string::npos);
  const std::string facts = Slurp("docs/stated_facts.md");
  EXPECT_NE(facts.find("(" + round_robin + " against " + even + ")"), std::string::npos);
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

std::string Triple(const nlohmann::json& e, const char* median, const char* mean, const char* max) {
  char text[96];
  std::snprintf(text, sizeof text, "%.1f%% / %.1f%% / %.1f%%", e.at(median).get<double>(),
                e.at(mean).get<double>(), e.at(max).get<double>());
  return text;
}

// The validation summary table (README.md's "Accuracy and speed" and
// docs/validation.md's "Summary"): each row's held-out median / mean / max
// is what the committed results of its command say.
TEST(ValidationAtAGlance, ReadmeQuotesTheCommittedResults) {
  const auto deepbench = nlohmann::json::parse(Slurp("results/deepbench/summary.json"));
  auto slice = [&](const std::string& kernel) {
    for (const auto& s : deepbench.at("slices"))
      if (s.at("gpu") == "all" && s.at("precision") == "all" && s.at("kernel") == kernel &&
          !s.contains("cell"))
        return s.at("held_out");
    ADD_FAILURE() << "no slice " << kernel;
    return nlohmann::json::object();
  };
  const auto allreduce = nlohmann::json::parse(Slurp("results/allreduce/allreduce.json"));
  const auto vtrain = nlohmann::json::parse(Slurp("results/vtrain-megatron/summary.json"));
  const auto llm = nlohmann::json::parse(Slurp("results/llm-h100/fit.json"));
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"| 4,793 | ", Triple(slice("gemm+conv"), "median_ape_percent", "mape_percent",
                            "max_ape_percent")},
      {"| 1,378 | ", Triple(slice("rnn"), "median_ape_percent", "mape_percent", "max_ape_percent")},
      {"| 168 | ", Triple(allreduce.at("variants").at(0).at("held_out").at("all"),
                          "median_ape_percent", "mape_percent", "max_ape_percent")},
      {"| 1,549 | ", Triple(vtrain.at("overall"), "median_ape_percent", "mape_percent",
                            "max_ape_percent")},
      {"| 14 | ", Triple(llm.at("cross_validation").at("held_out"), "median_ape_percent",
                         "mape_percent", "max_ape_percent")},
  };
  for (const char* path : {"README.md", "docs/validation.md"}) {
    const std::string doc = Slurp(path);
    ASSERT_FALSE(doc.empty()) << path;
    for (const auto& [rows_cell, figures] : rows)
      EXPECT_NE(doc.find(rows_cell + figures + " |"), std::string::npos)
          << path << "'s validation table should say " << rows_cell << figures;
  }
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

// docs/validation.md quotes results/local-llm/summary.md's table (written by
// scripts/validate_local_llm.py) row for row.
TEST(StatedFacts, LocalLlamaValidationQuotesTheCommittedSummary) {
  const std::string doc = Slurp("docs/validation.md");
  std::istringstream summary(Slurp("results/local-llm/summary.md"));
  int rows = 0;
  for (std::string line; std::getline(summary, line);) {
    if (line.rfind("| device profile", 0) != 0 && line.rfind("| op-cost table", 0) != 0) continue;
    EXPECT_NE(doc.find("\n" + line + "\n"), std::string::npos) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 2);
}

}  // namespace
}  // namespace dtsim
