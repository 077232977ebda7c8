// End-to-end: the dtsim binary on the shipped scenarios and on bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {
namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs dtsim with `args` (already shell-quoted) from the repository root.
Result Dtsim(const std::string& args) {
  const fs::path tmp = fs::temp_directory_path() / ("dtsim_cli_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  const std::string cmd = std::string(DTSIM_BIN) + " " + args + " >" + (tmp / "out").string() +
                          " 2>" + (tmp / "err").string();
  Result r;
  const int raw = std::system(cmd.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = Slurp(tmp / "out");
  r.err = Slurp(tmp / "err");
  return r;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dtsim_cli_out_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(Cli, RunWritesFullReportAndIsDeterministic) {
  Result a = Dtsim("run scenarios/default.yaml --out " + (dir_ / "a").string());
  ASSERT_EQ(a.status, 0) << a.err;
  Result b = Dtsim("run scenarios/default.yaml --out " + (dir_ / "b").string());
  ASSERT_EQ(b.status, 0) << b.err;
  for (const char* f : {"report.json", "summary.csv", "trace.json"}) {
    ASSERT_TRUE(fs::exists(dir_ / "a" / f)) << f;
    EXPECT_EQ(Slurp(dir_ / "a" / f), Slurp(dir_ / "b" / f)) << f << " differs between runs";
  }
  const auto report = nlohmann::json::parse(Slurp(dir_ / "a" / "report.json"));
  for (const char* key : {"throughput_samples_per_s", "step_time_s", "scaling_efficiency"})
    EXPECT_GT(report.at(key).get<double>(), 0) << key;
  for (const char* key : {"compute_s", "exposed_comm_s", "idle_s"})
    EXPECT_GE(report.at("breakdown").at(key).get<double>(), 0) << key;
  // The trace parses and has complete events.
  const auto trace = nlohmann::json::parse(Slurp(dir_ / "a" / "trace.json"));
  EXPECT_GT(trace.at("traceEvents").size(), 100u);
}

TEST_F(Cli, JsonToStdout) {
  Result r = Dtsim("run scenarios/default.yaml --no-trace --json - --out " + dir_.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);  // stdout holds only the report
  EXPECT_GT(report.at("throughput_samples_per_s").get<double>(), 0);
}

TEST_F(Cli, BadScenarioExitsWithStatus2AndWritesNothing) {
  fs::create_directories(dir_);
  const fs::path bad = dir_ / "bad.yaml";
  std::ofstream(bad) << "name: bad\ncluster:\n  nodes: 2\n  network:\n    link: 25GbE\n"
                        "    latency_typo: 5us\n";
  Result r = Dtsim("run " + bad.string() + " --out " + (dir_ / "out").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("bad.yaml:6:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("latency_typo"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(Cli, MissingScenarioAndUnknownModel) {
  Result r = Dtsim("run does/not/exist.yaml");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("does/not/exist.yaml"), std::string::npos) << r.err;
  r = Dtsim("model no-such-model");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("resnet50"), std::string::npos) << "should list known models: " << r.err;
}

TEST_F(Cli, EveryShippedScenarioProducesAReport) {
  for (const auto& entry : fs::directory_iterator("scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    if (entry.path().filename().string().starts_with("sweep-")) continue;  // for `dtsim sweep`
    Result r = Dtsim("run " + entry.path().string() + " --quiet --no-trace --out " +
                     (dir_ / entry.path().stem()).string());
    ASSERT_EQ(r.status, 0) << entry.path() << ": " << r.err;
    const auto report = nlohmann::json::parse(Slurp(dir_ / entry.path().stem() / "report.json"));
    EXPECT_GT(report.at("throughput_samples_per_s").get<double>(), 0) << entry.path();
  }
}

TEST_F(Cli, PlanPrintsPlacementAndExportsJson) {
  fs::create_directories(dir_);
  Result r = Dtsim("plan scenarios/cifar10-4gpu.yaml --json " + (dir_ / "plan.json").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("/node:0/device:3"), std::string::npos) << r.out;
  const auto plan = nlohmann::json::parse(Slurp(dir_ / "plan.json"));
  EXPECT_EQ(plan.at("ranks").size(), 4u);
  EXPECT_GT(plan.at("tasks").size(), 0u);
}

TEST_F(Cli, HelpExplainsAndBadArgumentsExit2) {
  Result r = Dtsim("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("run"), std::string::npos);
  r = Dtsim("run");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
