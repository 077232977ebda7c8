// The CSV of measured runs `dtsim fit` reads: overrides, units, throughput,
// and errors located at the row.
#include "validation/measured_runs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace dtsim::validation {
namespace {

namespace fs = std::filesystem;

class MeasuredRunsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per process and test: ctest runs this fixture's tests as
    // separate processes at once, and a shared folder let one test's
    // TearDown delete the other's files (both failed under ctest -j2).
    dir_ = fs::temp_directory_path() /
           ("dtsim_measured_runs_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "base.yaml")
        << "cluster: {nodes: 1, devices_per_node: 2, device: V100-SXM2-32GB}\n"
           "workload: {model: mnist-mlp, batch_per_device: 32, iterations: 3}\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Csv() const { return (dir_ / "runs.csv").string(); }
  fs::path dir_;
};

TEST_F(MeasuredRunsTest, OverridesUnitsAndThroughput) {
  const std::string text =
      "scenario,overrides,step_time,note\n"
      "base.yaml,,12ms,plain\n"
      "base.yaml,workload.batch_per_device=64; workload.framework=mxnet,0.5s,\"a, quoted note\"\n";
  const auto runs = ParseMeasuredRuns(text, Csv());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_DOUBLE_EQ(runs[0].measured_step_s, 0.012);
  EXPECT_EQ(runs[0].scenario.workload.batch_per_device, 32);
  EXPECT_EQ(runs[1].scenario.workload.batch_per_device, 64);
  EXPECT_EQ(runs[1].scenario.workload.framework.name, "mxnet");
  EXPECT_EQ(runs[1].where, Csv() + ":3");
  // Throughput: 2 devices x 32 samples = 64 samples per step; 1,000
  // samples/s is a 64 ms step.
  const auto t = ParseMeasuredRuns("scenario,throughput\nbase.yaml,1000\n", Csv());
  EXPECT_DOUBLE_EQ(t[0].measured_step_s, 0.064);
}

TEST_F(MeasuredRunsTest, ErrorsNameTheRow) {
  auto fails_at = [&](const std::string& text, int line, const std::string& what) {
    try {
      ParseMeasuredRuns(text, Csv());
    } catch (const UserError& e) {
      EXPECT_EQ(e.where().line, line) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "no error for " << text;
  };
  fails_at("overrides,step_time\nbase.yaml,1s\n", 1, "scenario");
  fails_at("scenario,step_time,throughput\nbase.yaml,1s,3\n", 1, "exactly one");
  fails_at("scenario,step_time\nbase.yaml,1s\nbase.yaml\n", 3, "expected 2 fields");
  fails_at("scenario,overrides,step_time\nbase.yaml,workload.batch_per_device,1s\n", 2, "path=value");
  fails_at("scenario,step_time\nbase.yaml,12\n", 2, "unit");
  fails_at("scenario,step_time\nmissing.yaml,1s\n", 2, "cannot read");
  fails_at("scenario,throughput\nbase.yaml,-3\n", 2, "> 0");
  fails_at("scenario,step_time\n", 0, "no measured runs");
}


// An override into a scenario that is a list or a scalar, and override values
// that are not one YAML value, are the row's errors (runs.csv:2), not a crash
// or a yaml-cpp exception.
TEST_F(MeasuredRunsTest, OverrideErrorsNameTheRow) {
  std::ofstream(dir_ / "list.yaml") << "- 1\n- 2\n";
  std::ofstream(dir_ / "scalar.yaml") << "42\n";
  auto fails_at_row_2 = [&](const std::string& scenario, const std::string& overrides,
                            const std::string& what) {
    const std::string text = "scenario,overrides,step_time\n" + scenario + "," + overrides + ",1s\n";
    try {
      ParseMeasuredRuns(text, Csv());
    } catch (const UserError& e) {
      EXPECT_EQ(e.where().file, Csv()) << e.what();
      EXPECT_EQ(e.where().line, 2) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "no error for " << text;
  };
  fails_at_row_2("list.yaml", "workload.batch_per_device=64", "the scenario is not a mapping");
  fails_at_row_2("scalar.yaml", "workload.batch_per_device=64", "the scenario is not a mapping");
  fails_at_row_2("base.yaml", "workload.batch_per_device.x=64", "'batch_per_device' is not a mapping");
  fails_at_row_2("base.yaml", "workload.batch_per_device=[", "is not one YAML value");
  // 100 levels of '[' closed: deeper than kMaxYamlDepth (64).
  fails_at_row_2("base.yaml", "workload.batch_per_device=" + std::string(100, '[') +
                                  std::string(100, ']'), "is not one YAML value");
  fails_at_row_2("base.yaml", "workload.batch_per_device=*undefined", "is not one YAML value");
  fails_at_row_2("base.yaml", "=3", "empty key");
}

// A mistyped override key surfaces in the scenario's parser; the error is the
// row's, and still says what the scenario parser found.
TEST_F(MeasuredRunsTest, MistypedOverrideKeyNamesTheRow) {
  try {
    ParseMeasuredRuns("scenario,overrides,step_time\nbase.yaml,,1s\n"
                      "base.yaml,workload.batch_per_devic=64,1s\n", Csv());
    ADD_FAILURE() << "no error for a mistyped key";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().file, Csv()) << e.what();
    EXPECT_EQ(e.where().line, 3) << e.what();
    EXPECT_NE(std::string(e.what()).find("batch_per_devic"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("workload.batch_per_devic=64"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtsim::validation
