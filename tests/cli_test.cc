// End-to-end: the dtsim binary on the shipped scenarios and on bad input.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "config/device_profile.h"
#include "models/onnx_model.pb.h"
#include "models/onnx_test_models.h"
#include "plan/chakra_test_traces.h"
#include "tests/dtsim_runner.h"

namespace {
namespace fs = std::filesystem;

using dtsim::test::Dtsim;
using dtsim::test::Result;
using dtsim::test::Slurp;

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

// Issue 11: the kernel list of a model and the DeepBench validation, as a
// user runs them.
TEST_F(Cli, ModelKernelsListsEachOpsKernelsWithTimes) {
  Result r = Dtsim("model resnet50 --kernels --device V100 --precision fp16 --batch 8");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* text : {"V100-SXM2-32GB, fp16, batch 8", "fwd conv", "dgrad conv",
                           "wgrad conv", "gemm_1x1", "through memory", "total: forward"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << " in:\n" << r.out.substr(0, 2000);
  Result bad = Dtsim("model resnet50 --kernels --device no-such-gpu");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("unknown device"), std::string::npos) << bad.err;
  bad = Dtsim("model resnet50 --kernels --precision fp4");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("unknown precision"), std::string::npos) << bad.err;
  // fp8 needs FP8 tensor cores; on an H100 a linear layer lists its casts.
  bad = Dtsim("model gpt2 --kernels --device V100 --precision fp8");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("FP8 tensor cores"), std::string::npos) << bad.err;
  r = Dtsim("model gpt2 --kernels --device H100-SXM --precision fp8 --batch 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("fp8 cast input"), std::string::npos) << r.out.substr(0, 2000);
}

TEST_F(Cli, ValidateDeepbenchWritesItsReportsTheSameEachTime) {
  // A few rows of two GPUs in DeepBench's layout (two, so that each can be
  // left out of the fit).
  const fs::path data = dir_ / "data";
  fs::create_directories(data);
  std::ofstream(data / "gemm.csv")
      << "gpu,precision,source_app,m,n,k,a_transpose,b_transpose,time_ms,tflops\n"
         "V100,fp32,,1760,16,1760,N,N,0.038,2.6\n"
         "V100,fp32,,4096,7000,4096,N,N,15.894,14.8\n"
         "P100,fp32,,1760,16,1760,N,N,0.055,1.8\n"
         "P100,fp32,,4096,7000,4096,N,N,26.304,8.9\n";
  std::ofstream(data / "conv.csv")
      << "gpu,precision,source_app,w,h,c,n,k,s,r,pad_w,pad_h,stride_w,stride_h,p,q,fwd_ms,"
         "bwd_input_ms,bwd_params_ms,fwd_algorithm\n"
         "V100,fp32,,56,56,64,8,64,3,3,1,1,1,1,56,56,0.145,0.146,0.302,WINOGRAD\n"
         "P100,fp32,,56,56,64,8,64,3,3,1,1,1,1,56,56,0.2,0.21,0.4,WINOGRAD\n";
  std::ofstream(data / "rnn.csv")
      << "gpu,precision,cell,source_app,hidden,n,timesteps,fwd_ms,bwd_input_ms,bwd_params_ms,"
         "bwd_ms\n"
         "V100,fp32,lstm,,512,16,25,1.095,0.937,0.165,\n"
         "P100,fp32,lstm,,512,16,25,1.478,1.688,0.213,\n";
  for (const char* out : {"a", "b"}) {
    Result r = Dtsim("validate deepbench --data " + data.string() + " --out " +
                     (dir_ / out).string() + " --quiet");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  for (const char* f : {"predictions.csv", "summary.json", "summary.md", "scatter.svg"}) {
    ASSERT_TRUE(fs::exists(dir_ / "a" / f)) << f;
    EXPECT_EQ(Slurp(dir_ / "a" / f), Slurp(dir_ / "b" / f)) << f << " differs between runs";
  }
  // 4 GEMM rows, 2 x 3 convolution passes and 2 x 3 recurrent-layer
  // passes, each with a prediction.
  const std::string csv = Slurp(dir_ / "a" / "predictions.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 4 + 6 + 6) << csv;
  EXPECT_NE(csv.find("rnn_bwd_weights"), std::string::npos) << csv;
  const auto summary = nlohmann::json::parse(Slurp(dir_ / "a" / "summary.json"));
  EXPECT_EQ(summary.at("rows").get<int>(), 16);
  Result missing = Dtsim("validate deepbench --data " + (dir_ / "none").string() + " --out " +
                         (dir_ / "c").string());
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("cannot read"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(dir_ / "c"));
}

// `dtsim validate kernels` on the shipped H100 rows: the same files each
// time, every kernel predicted four ways, the shipped constants equal to the
// fit on every row (they were pasted from it), and a folder without rows
// refused.
TEST_F(Cli, ValidateKernelsFitsTheShippedHopperConstants) {
  const fs::path data = "scenarios/fit/h100-kernels";
  for (const char* out : {"a", "b"}) {
    Result r = Dtsim("validate kernels --data " + data.string() + " --out " +
                     (dir_ / out).string() + " --quiet");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  for (const char* f : {"predictions.csv", "summary.md"}) {
    ASSERT_TRUE(fs::exists(dir_ / "a" / f)) << f;
    EXPECT_EQ(Slurp(dir_ / "a" / f), Slurp(dir_ / "b" / f)) << f << " differs between runs";
  }
  // 23 forward GEMMs and 23 x 3 convolution passes (the data's two files).
  const std::string csv = Slurp(dir_ / "a" / "predictions.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 23 + 69) << csv;
  const std::string md = Slurp(dir_ / "a" / "summary.md");
  const auto all = md.find("| all | 92 |");
  ASSERT_NE(all, std::string::npos) << md;
  // Columns: held out, Volta's values, shipped, fitted on all.
  std::vector<std::string> cells;
  std::size_t at = md.find('|', all + 10);
  for (int c = 0; c < 4; ++c) {
    const std::size_t next = md.find('|', at + 1);
    cells.push_back(md.substr(at + 1, next - at - 1));
    at = next;
  }
  EXPECT_EQ(cells[2], cells[3]) << "shipped Hopper constants differ from the fit on every row";
  EXPECT_NE(cells[1], cells[2]);
  Result empty = Dtsim("validate kernels --data " + (dir_ / "none").string() + " --out " +
                       (dir_ / "c").string());
  EXPECT_EQ(empty.status, 2) << empty.err;
  EXPECT_FALSE(fs::exists(dir_ / "c"));
}

// `dtsim fit` on the shipped example (six PyTorch runs on an
// H100), deterministic, and refused cleanly on bad input.
TEST_F(Cli, FitWritesAProfileScenariosCanNameAndIsDeterministic) {
  for (const char* out : {"a", "b"}) {
    Result r = Dtsim("fit scenarios/fit/h100-pytorch-runs.csv --fit per_kernel --folds 2 --out " +
                     (dir_ / out).string());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("held out (2-fold)"), std::string::npos) << r.out;
  }
  for (const char* f : {"framework.yaml", "fit.json", "predictions.csv"})
    EXPECT_EQ(Slurp(dir_ / "a" / f), Slurp(dir_ / "b" / f)) << f << " differs between runs";
  const auto fit = nlohmann::json::parse(Slurp(dir_ / "a" / "fit.json"));
  EXPECT_EQ(fit.at("cross_validation").at("held_out").at("runs").get<int>(), 6);
  // The fit lowers the error on the runs it fitted (it starts from the
  // built-in value, which is one of the points it tries).
  EXPECT_LE(fit.at("fitted_on_all_runs").at("mape_percent").get<double>(),
            fit.at("before_fit").at("mape_percent").get<double>());
  // A scenario names the fitted profile as it names a built-in one.
  const fs::path scenario = dir_ / "a" / "s.yaml";
  std::ofstream(scenario) << "cluster: {device: H100-SXM}\n"
                             "workload: {model: cifar10-cnn, framework: framework.yaml}\n";
  Result run = Dtsim("run " + scenario.string() + " --no-trace --out " + (dir_ / "run").string());
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("host-bound"), std::string::npos) << run.out;
  // Bad input: status 2, the file and line, nothing written.
  std::ofstream(dir_ / "bad.csv") << "scenario,step_time\nscenarios/default.yaml,12\n";
  Result bad = Dtsim("fit " + (dir_ / "bad.csv").string() + " --fit per_op --out " +
                     (dir_ / "c").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("bad.csv:2"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir_ / "c"));
  Result unknown = Dtsim("fit scenarios/fit/h100-pytorch-runs.csv --fit per_opp --out " +
                         (dir_ / "d").string());
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("did you mean 'per_op'"), std::string::npos) << unknown.err;
}

TEST_F(Cli, RunWritesFullReportAndIsDeterministic) {
  Result a = Dtsim("run scenarios/default.yaml --out " + (dir_ / "a").string());
  ASSERT_EQ(a.status, 0) << a.err;
  Result b = Dtsim("run scenarios/default.yaml --out " + (dir_ / "b").string());
  ASSERT_EQ(b.status, 0) << b.err;
  for (const char* f : {"report.json", "summary.csv", "trace.json", "events.out.tfevents.dtsim"}) {
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

// The records of a TensorBoard event file (report/tensorboard.h): the
// number of whole records, or -1 when the framing does not add up. CRCs are
// checked in report/tensorboard_test.cc.
int EventRecords(const std::string& bytes) {
  std::size_t at = 0;
  int n = 0;
  while (at + 12 <= bytes.size()) {
    std::uint64_t length = 0;
    for (int i = 0; i < 8; ++i)
      length |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
    at += 12 + length + 4;
    ++n;
  }
  return at == bytes.size() ? n : -1;
}

// Issue 15 item 4: exec writes TensorBoard's event file: the version
// record, then per step the loss, examples/s, seconds per batch, learning
// rate and each rank's seconds per batch (4 + 2 scalars for 2 ranks).
TEST_F(Cli, ExecWritesATensorBoardEventFile) {
  Result r = Dtsim("exec scenarios/local/cifar10-dp-2cpu.yaml --iterations 3 --out " +
                   (dir_ / "x").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string events = Slurp(dir_ / "x" / "events.out.tfevents.dtsim");
  EXPECT_EQ(EventRecords(events), 1 + 3 * (4 + 2));
  // Wall times are Unix seconds (TensorBoard's wall axis): the first
  // record's Event.wall_time (field 1, a double: key byte 0x09 after the
  // 12-byte record header) is past 2020-01-01 (1.5778e9 s).
  ASSERT_GT(events.size(), 21u);
  ASSERT_EQ(static_cast<unsigned char>(events[12]), 0x09);
  double wall = 0;
  std::memcpy(&wall, events.data() + 13, sizeof wall);
  EXPECT_GT(wall, 1.5778e9);
  // A resumed run adds its steps in a second file and keeps the first
  // run's; a fresh run replaces both.
  r = Dtsim("exec scenarios/local/cifar10-dp-2cpu.yaml --iterations 2 --checkpoint-every 2 -q "
            "--out " + (dir_ / "y").string());
  ASSERT_EQ(r.status, 0) << r.err;
  r = Dtsim("exec scenarios/local/cifar10-dp-2cpu.yaml --iterations 4 --resume -q --out " +
            (dir_ / "y").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(EventRecords(Slurp(dir_ / "y" / "events.out.tfevents.dtsim")), 1 + 2 * (4 + 2));
  EXPECT_EQ(EventRecords(Slurp(dir_ / "y" / "events.out.tfevents.dtsim.resumed-2")), 1 + 2 * (4 + 2));
  r = Dtsim("exec scenarios/local/cifar10-dp-2cpu.yaml --iterations 1 -q --out " +
            (dir_ / "y").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "y" / "events.out.tfevents.dtsim.resumed-2"));
}

TEST_F(Cli, JsonToStdout) {
  Result r = Dtsim("run scenarios/default.yaml --no-trace --json - --out " + dir_.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);  // stdout holds only the report
  EXPECT_GT(report.at("throughput_samples_per_s").get<double>(), 0);
  EXPECT_NE(r.err.find("wrote "), std::string::npos) << r.err;  // the file list on stderr
  // With repeats, and for a plan that does not fit (exit 3), too.
  r = Dtsim("run scenarios/cifar10-4gpu.yaml --no-trace --repeat 3 --json - --out " +
            (dir_ / "r").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("repeats").is_null(), false);
  fs::create_directories(dir_);
  std::ofstream(dir_ / "big.yaml")
      << "cluster: {devices_per_node: 2, device: V100-SXM2-16GB}\n"
         "workload: {model: gpt3-6.7b, batch_per_device: 1, precision: fp16}\n";
  r = Dtsim("run " + (dir_ / "big.yaml").string() + " --json - --out " + (dir_ / "b").string());
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out).at("throughput_samples_per_s").is_null());
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

// GPT-3 175B in fp8 on H100 (scenarios/gpt3-175b-fp8-h100.yaml) against the
// same file in bf16: the fp8 report splits compute into FP8 GEMMs, casts
// and bf16 kernels and states MFU against both peaks; fp8 is faster, but by
// less than the 2x of the FP8 over the bf16 peak (attention, norms, casts
// and communication do not speed up, and FP8 GEMMs reach a lower fraction
// of their peak, docs/scenario.md "fp8").
TEST_F(Cli, Gpt3Fp8OnH100SplitsComputeAndBeatsBf16ByLessThanThePeakRatio) {
  const std::string scenario = "scenarios/gpt3-175b-fp8-h100.yaml";
  Result r = Dtsim("run " + scenario + " --no-trace --json - --out " + (dir_ / "fp8").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto fp8 = nlohmann::json::parse(r.out);
  std::string text = Slurp(scenario);
  const std::string key = "precision: fp8";
  ASSERT_NE(text.find(key), std::string::npos);
  text.replace(text.find(key), key.size(), "precision: bf16");
  fs::create_directories(dir_);
  std::ofstream(dir_ / "bf16.yaml") << text;
  r = Dtsim("run " + (dir_ / "bf16.yaml").string() + " --no-trace --json - --out " +
            (dir_ / "bf16").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto bf16 = nlohmann::json::parse(r.out);

  const auto& parts = fp8.at("breakdown").at("compute_parts");
  EXPECT_GT(parts.at("fp8_gemm_s").get<double>(), 0);
  EXPECT_GT(parts.at("fp8_cast_s").get<double>(), 0);
  EXPECT_GT(parts.at("bf16_s").get<double>(), 0);
  EXPECT_NEAR(parts.at("fp8_gemm_s").get<double>() + parts.at("fp8_cast_s").get<double>() +
                  parts.at("bf16_s").get<double>(),
              fp8.at("breakdown").at("compute_s").get<double>(), 1e-9);
  EXPECT_FALSE(bf16.at("breakdown").contains("compute_parts"));
  EXPECT_FALSE(bf16.contains("mfu_fp8_peak"));

  const double speedup =
      bf16.at("step_time_s").get<double>() / fp8.at("step_time_s").get<double>();
  EXPECT_GT(speedup, 1.0);
  EXPECT_LT(speedup, 2.0);  // H100 SXM: 1978.9 / 989.4 TFLOP/s dense
  // MFU against the bf16 peak is the same model FLOPs over twice the
  // denominator's half: mfu = 2 x mfu_fp8_peak (H100's FP8 peak is 2x bf16).
  EXPECT_NEAR(fp8.at("mfu").get<double>(), 2 * fp8.at("mfu_fp8_peak").get<double>(), 1e-3);
  EXPECT_GT(fp8.at("mfu").get<double>(), bf16.at("mfu").get<double>());
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
  // Issue 10 item 18: `--lr nan` passed CLI::PositiveNumber (nan <= 0 is
  // false) and training silently used the default rate.
  for (const char* option : {"--lr nan", "--lr inf", "--lr-decay-rate nan"}) {
    r = Dtsim(std::string("exec scenarios/local/cifar10-ps-2workers.yaml ") + option);
    EXPECT_EQ(r.status, 2) << option;
    EXPECT_NE(r.err.find("expected a finite number > 0"), std::string::npos) << r.err;
  }
}

// Sweeps (`dtsim sweep`, study/sweep.h).

// A 2 x 2 sweep of a small CNN that simulates in milliseconds.
const char* kSmallSweep =
    "name: small\n"
    "cluster:\n"
    "  nodes: [1, 2]\n"
    "  devices_per_node: 2\n"
    "  device: K20m\n"
    "  intra_node_link: pcie3-x16\n"
    "  network: {link: 10GbE}\n"
    "workload: {model: cifar10-cnn, batch_per_device: [16, 32], iterations: 3}\n";

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(Cli, SweepWritesCsvPlotsAndPageSameForAnyJobs) {
  fs::create_directories(dir_);
  const fs::path yaml = dir_ / "small.yaml";
  std::ofstream(yaml) << kSmallSweep;
  Result a = Dtsim("sweep " + yaml.string() + " --jobs 1 --out " + (dir_ / "a").string());
  ASSERT_EQ(a.status, 0) << a.err;
  Result b = Dtsim("sweep " + yaml.string() + " -j 2 --quiet --out " + (dir_ / "b").string());
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_TRUE(b.out.empty()) << b.out;
  for (const char* f : {"sweep.csv", "throughput.svg", "scaling_efficiency.svg", "breakdown.svg",
                        "index.html"}) {
    ASSERT_TRUE(fs::exists(dir_ / "a" / f)) << f;
    EXPECT_EQ(Slurp(dir_ / "a" / f), Slurp(dir_ / "b" / f)) << f << " depends on --jobs";
  }
  // One header and one row per point, in order (first axis slowest).
  std::istringstream csv(Slurp(dir_ / "a" / "sweep.csv"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].rfind("cluster.nodes,workload.batch_per_device,scenario,", 0), 0u) << lines[0];
  EXPECT_EQ(lines[2].rfind("1,32,", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("2,16,", 0), 0u) << lines[3];
  // stdout lists the files; no progress bar there.
  EXPECT_NE(a.out.find("sweep.csv"), std::string::npos) << a.out;
  EXPECT_EQ(a.out.find("points"), std::string::npos) << a.out;
  EXPECT_EQ(Slurp(dir_ / "a" / "throughput.svg").rfind("<svg", 0), 0u);
  EXPECT_EQ(CountOf(Slurp(dir_ / "a" / "index.html"), "<svg"), 3);
}

TEST_F(Cli, SweepErrorNamesTheLineOfTheBadValueAndWritesNothing) {
  fs::create_directories(dir_);
  const fs::path bad = dir_ / "bad.yaml";
  // The third value of the axis, on line 5 (column 7), is not an integer.
  std::ofstream(bad) << "cluster:\n  nodes:\n    - 1\n    - 2\n    - 2.5\n";
  Result r = Dtsim("sweep " + bad.string() + " --out " + (dir_ / "out").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("bad.yaml:5:7"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  r = Dtsim("sweep " + (dir_ / "missing.yaml").string());
  EXPECT_EQ(r.status, 2);
  r = Dtsim("sweep " + bad.string() + " --jobs 0");
  EXPECT_EQ(r.status, 2);  // --jobs must be positive
}

TEST_F(Cli, SweepHelpExplainsListsAsAxes) {
  Result r = Dtsim("sweep --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("axis"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nodes: [1, 2, 4"), std::string::npos) << r.out;
}

TEST_F(Cli, ShippedSweepsRun) {
  for (const auto& entry : fs::directory_iterator("scenarios")) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with("sweep-") || entry.path().extension() != ".yaml") continue;
    Result r = Dtsim("sweep " + entry.path().string() + " --quiet --out " +
                     (dir_ / entry.path().stem()).string());
    ASSERT_EQ(r.status, 0) << file << ": " << r.err;
    const std::string csv = Slurp(dir_ / entry.path().stem() / "sweep.csv");
    EXPECT_GT(CountOf(csv, "\n"), 2) << file;
  }
}

TEST_F(Cli, RepeatReportsAConfidenceInterval) {
  Result r = Dtsim("run scenarios/ps-backup-workers.yaml --repeat 3 --quiet --no-trace --out " +
                   dir_.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto report = nlohmann::json::parse(Slurp(dir_ / "report.json"));
  const auto& rep = report.at("repeats");
  EXPECT_EQ(rep.at("n").get<int>(), 3);
  // Random stalls differ between seeds: the interval has a width.
  EXPECT_GT(rep.at("throughput_samples_per_s").at("ci95_half_width").get<double>(), 0);
  EXPECT_LE(rep.at("throughput_samples_per_s").at("min").get<double>(),
            rep.at("throughput_samples_per_s").at("mean").get<double>());
}

TEST_F(Cli, PlanThatDoesNotFitSaysSoInsteadOfAThroughput) {
  // GPT-3 13B data parallel: 16 bytes per parameter of model state alone
  // (208 GB) exceed an 80 GiB A100.
  fs::create_directories(dir_);
  const fs::path big = dir_ / "big.yaml";
  std::ofstream(big) << "cluster: {nodes: 1, devices_per_node: 8, device: A100-SXM4-80GB, "
                        "intra_node_link: nvswitch-a100}\n"
                        "workload: {model: gpt3-13b, batch_per_device: 1, precision: fp16, "
                        "iterations: 1}\n";
  // Issue 10, item 1: valid input, infeasible plan: exit status 3, the
  // reason on stderr, and no throughput anywhere (JSON null, CSV empty).
  Result r = Dtsim("run " + big.string() + " --out " + (dir_ / "out").string() + " --json " +
                   (dir_ / "r.json").string());
  ASSERT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("does not fit: device 0 needs"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("big.yaml: error: does not fit"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("throughput:"), std::string::npos) << r.out;
  for (const fs::path& file : {dir_ / "out" / "report.json", dir_ / "r.json"}) {
    const auto report = nlohmann::json::parse(Slurp(file));
    EXPECT_FALSE(report.at("memory").at("fits").get<bool>());
    EXPECT_TRUE(report.at("throughput_samples_per_s").is_null());
    EXPECT_NE(report.at("does_not_fit").get<std::string>().find("needs"), std::string::npos);
  }
  const std::string csv = Slurp(dir_ / "out" / "summary.csv");
  EXPECT_NE(csv.find(",false,\"does not fit: device 0 needs"), std::string::npos) << csv;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "trace.json"));
}

// Issue 10, item 2: a sweep with an infeasible point (5 pipeline stages on 8
// devices) writes every point, the infeasible one as a row with its reason.
TEST_F(Cli, SweepKeepsGoingPastAnInfeasiblePoint) {
  fs::create_directories(dir_);
  const fs::path sweep = dir_ / "mixed.yaml";
  std::ofstream(sweep) << "cluster: {nodes: 1, devices_per_node: 8, device: V100-SXM2-32GB}\n"
                          "workload: {model: gpt2}\n"
                          "parallelism: {strategy: hybrid, pipeline_parallel: [1, 2, 5, 8]}\n";
  Result r = Dtsim("sweep " + sweep.string() + " --out " + (dir_ / "s").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("1 of 4 points are infeasible"), std::string::npos) << r.err;
  const std::string csv = Slurp(dir_ / "s" / "sweep.csv");
  EXPECT_NE(csv.find("does not divide the cluster's 8 devices"), std::string::npos) << csv;
  EXPECT_TRUE(fs::exists(dir_ / "s" / "index.html"));
}

TEST_F(Cli, HybridPlanListsItsPipelineSplit) {
  fs::create_directories(dir_);
  Result r = Dtsim("plan scenarios/gpt2-xl-pipeline-8xV100.yaml --dot " + (dir_ / "m.dot").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("chunk 7 on stage 7"), std::string::npos) << r.out;
  EXPECT_NE(Slurp(dir_ / "m.dot").find("digraph"), std::string::npos);
}

// `dtsim calibrate --quick` measures this machine in a few seconds and writes
// a profile the strict reader accepts and a scenario can use.
TEST_F(Cli, CalibrateWritesAProfileScenariosCanUse) {
  const fs::path profile = dir_ / "calibration" / "profile.yaml";
  Result r = Dtsim("calibrate --quick --portable --out " + profile.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const dtsim::config::DeviceProfile p = dtsim::config::LoadDeviceProfile(profile.string());
  EXPECT_GT(p.peak_fp32_flop_per_s, 0);
  EXPECT_GT(p.memory_bw_bytes_per_s, 0);
  EXPECT_GT(p.kernel_launch_s, 0);
  // Every op kind with FLOPs: the 19 kinds of models/op.h but input, concat
  // and reshape.
  EXPECT_EQ(p.compute_efficiency.size(), 16u);
  EXPECT_FALSE(p.link.has_value());  // one process: no link measured
  EXPECT_TRUE(p.provenance.quick);
  EXPECT_EQ(p.provenance.backend, "cpu");

  // A scenario naming the profile (relative to the scenario file) runs.
  std::ofstream(dir_ / "s.yaml") << "cluster: {device_profile: calibration/profile.yaml}\n"
                                    "workload: {model: resnet50, batch_per_device: 8, "
                                    "iterations: 2}\n";
  Result run = Dtsim("run " + (dir_ / "s.yaml").string() + " --no-trace --json - --out " +
                     (dir_ / "out").string());
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_GT(nlohmann::json::parse(run.out).at("throughput_samples_per_s").get<double>(), 0);
}

// Issue 14 item 6: commands that need no GPU start without the CUDA
// runtime, cuBLAS and NCCL (0.4 s and 220 MB of start-up on a 2-core VM);
// they live in the CUDA module, loaded for --backend cuda and `devices`.
// Likewise MPI (loaded by ranks an MPI launcher starts, exec/comm/mpi_world.h)
// and SimGrid (by SimGrid runs' child processes).
TEST_F(Cli, DtsimDoesNotLinkCudaMpiOrSimgrid) {
  const Result ldd = Dtsim("", "ldd ");  // the dynamic loader's list for the binary
  ASSERT_EQ(ldd.status, 0) << ldd.err;
  ASSERT_NE(ldd.out.find("libc.so"), std::string::npos) << ldd.out;
  for (const char* lib : {"libcudart", "libcublas", "libnccl", "libmpi", "libopen-pal", "libsimgrid"})
    EXPECT_EQ(ldd.out.find(lib), std::string::npos) << lib << " in\n" << ldd.out;
}

// Ranks load MPI from the module; one that cannot says so, and the job ends
// with the exit status of a setup mistake.
TEST_F(Cli, ExecRanksWithoutTheMpiModuleSayWhy) {
  Result r = Dtsim("exec scenarios/local/cifar10-dp-2cpu.yaml --iterations 1 --out " +
                       (dir_ / "out").string(),
                   "DTSIM_MPI_MODULE=/nonexistent/libdtsim-mpi.so ");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot load the MPI module /nonexistent/libdtsim-mpi.so"),
            std::string::npos)
      << r.err;
}

// A profile measures one build of the CPU kernels (exec/kernels/cpu_isa.h);
// validating runs of the other build with it would be off by their speed
// ratio, so validate refuses it, at the profile, before running anything.
TEST_F(Cli, ValidateRefusesAProfileOfTheOtherKernels) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "only the portable kernels run on this CPU";
  const fs::path profile = dir_ / "portable.yaml";
  ASSERT_EQ(Dtsim("calibrate --quick --portable --out " + profile.string()).status, 0);
  Result r = Dtsim("validate scenarios/local/cifar10-1cpu.yaml --iterations 2 --profile " +
                   profile.string() + " --out " + (dir_ / "v").string());
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("the profile measured the 'cpu' kernels, but this run uses 'cpu-avx"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--portable"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "v" / "validation.json"));
}

// Issue 14 item 2: --threads runs a CPU rank's kernels on several threads.
// The same count gives the same bits; a profile holds the count it measured,
// and validate refuses one of another count; GPU ranks refuse the flag.
TEST_F(Cli, ThreadsPerRankAreDeterministicAndMatchTheProfile) {
  std::string losses[2];
  for (int i = 0; i < 2; ++i) {
    const fs::path out = dir_ / ("t" + std::to_string(i));
    Result r = Dtsim("exec scenarios/local/cifar10-1cpu.yaml --threads 2 --iterations 3 -q --out " +
                     out.string());
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(Slurp(out / "exec.json"));
    EXPECT_EQ(j.at("threads_per_rank").get<int>(), 2);
    losses[i] = j.at("loss").dump();
  }
  EXPECT_EQ(losses[0], losses[1]);
  const fs::path profile = dir_ / "one-thread.yaml";
  ASSERT_EQ(Dtsim("calibrate --quick --out " + profile.string()).status, 0);
  EXPECT_EQ(dtsim::config::LoadDeviceProfile(profile.string()).provenance.threads, 1);
  Result r = Dtsim("validate scenarios/local/cifar10-1cpu.yaml --iterations 2 --threads 2 "
                   "--profile " + profile.string() + " --out " + (dir_ / "v").string());
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("measured kernels on 1 thread(s) per rank, but this run uses 2"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("dtsim calibrate --threads 2"), std::string::npos) << r.err;
  Result gpu = Dtsim("exec scenarios/local/cifar10-1cpu.yaml --threads 2 --backend cuda");
  EXPECT_EQ(gpu.status, 2) << gpu.err;
  EXPECT_NE(gpu.err.find("--threads sets the CPU backend's kernel threads"), std::string::npos)
      << gpu.err;
}

// `--ranks 2` re-runs itself under mpirun and adds the link between ranks.
TEST_F(Cli, CalibrateWithTwoRanksMeasuresTheLink) {
  const fs::path profile = dir_ / "profile.yaml";
  Result r = Dtsim("calibrate --quick --ranks 2 --out " + profile.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const dtsim::config::DeviceProfile p = dtsim::config::LoadDeviceProfile(profile.string());
  ASSERT_TRUE(p.link.has_value());
  EXPECT_EQ(p.link->ranks, 2);
  EXPECT_GT(p.link->bw_bytes_per_s, 0);
  EXPECT_GT(p.link->latency_s, 0);
}

TEST_F(Cli, CalibrateRejectsOneRank) {
  Result r = Dtsim("calibrate --quick --ranks 1 --out " + (dir_ / "p.yaml").string());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "p.yaml"));
}

// `dtsim exec` trains for real with the seeds' step log and writes
// exec.json; with 2 ranks it relaunches itself under mpirun.
TEST_F(Cli, ExecTrainsAndWritesPerRankTimes) {
  Result r = Dtsim("exec scenarios/local/cifar10-dp-2cpu.yaml --iterations 3 --out " +
                   dir_.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("step 3, loss = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("examples/sec; "), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(Slurp(dir_ / "exec.json"));
  EXPECT_EQ(j.at("ranks").get<int>(), 2);
  // 2 ranks x 32 samples (the scenario's batch_per_device).
  EXPECT_EQ(j.at("samples_per_iteration").get<int>(), 64);
  ASSERT_EQ(j.at("loss").size(), 3u);
  for (const auto& l : j.at("loss")) EXPECT_GT(l.get<double>(), 0);
  EXPECT_GT(j.at("measured").at("step_time_s").get<double>(), 0);
}

// One command validates a pipeline scenario: measured and predicted side by
// side, with the errors, in validation.json and validation.md.
TEST_F(Cli, ValidateComparesPredictionAndMeasurement) {
  const fs::path profile = dir_ / "profile.yaml";
  ASSERT_EQ(Dtsim("calibrate --quick --out " + profile.string()).status, 0);
  // validate writes into the scenario's outputs.dir: use a copy that points
  // into the test's folder.
  std::string scenario = Slurp("scenarios/local/cifar10-pipeline-2cpu.yaml");
  scenario += "outputs: {dir: " + (dir_ / "out").string() + "}\n";
  std::ofstream(dir_ / "s.yaml") << scenario;
  Result r = Dtsim("validate " + (dir_ / "s.yaml").string() + " --iterations 3 --profile " +
                   profile.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("| step time (s) |"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(Slurp(dir_ / "out" / "validation.json"));
  const double measured = j.at("measured").at("step_time_s").get<double>();
  const double predicted = j.at("predicted").at("step_time_s").get<double>();
  EXPECT_GT(measured, 0);
  EXPECT_GT(predicted, 0);
  EXPECT_NEAR(j.at("error_percent").at("step_time").get<double>(),
              100 * (predicted - measured) / measured, 1e-9);
  EXPECT_TRUE(fs::exists(dir_ / "out" / "validation.md"));
  EXPECT_NE(Slurp(dir_ / "out" / "validation.svg").find("<svg"), std::string::npos);
  // Both timelines, measured and predicted, as Chrome/Perfetto traces.
  for (const char* trace : {"exec_trace.json", "predicted_trace.json"}) {
    const auto t = nlohmann::json::parse(Slurp(dir_ / "out" / trace));
    EXPECT_FALSE(t.at("traceEvents").empty()) << trace;
  }
}

// `validate SCENARIO --out DIR` writes into DIR (the option was once read
// for dataset validation only, and scenario runs wrote to outputs.dir). A
// data-parallel run with overlap all-reduces on comm threads, and the
// prediction it is compared with overlaps too.
TEST_F(Cli, ValidateWritesIntoOutAndPredictsTheOverlapTheRunHad) {
  const fs::path profile = dir_ / "profile.yaml";
  ASSERT_EQ(Dtsim("calibrate --quick --out " + profile.string()).status, 0);
  Result r = Dtsim("validate scenarios/local/cifar10-dp-2cpu.yaml --iterations 3 --profile " +
                   profile.string() + " --out " + (dir_ / "v").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("comm overlapped) against measurement"), std::string::npos) << r.out;
  const auto v = nlohmann::json::parse(Slurp(dir_ / "v" / "validation.json"));
  EXPECT_TRUE(v.at("predicted").at("overlap").get<bool>());
  EXPECT_TRUE(v.at("comm_thread").get<bool>());
}

// Issue 15 item 2: `dtsim search` ranks the plans of a scenario's model on
// its cluster and writes its files; what it cannot vary is a mistake with a
// location.
TEST_F(Cli, SearchRanksPlansAndWritesItsFiles) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "s.yaml")
      << "name: s\ncluster: {nodes: 2, devices_per_node: 4, device: A100-SXM4-80GB}\n"
         "workload: {model: gpt2, batch_per_device: 4, precision: fp16, iterations: 1}\n";
  Result r = Dtsim("search " + (dir_ / "s.yaml").string() + " --top 3 -o " +
                   (dir_ / "out").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Pareto front"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| 1 | 8 |"), std::string::npos) << r.out;  // the fastest uses all 8
  for (const char* f : {"search.csv", "pareto.csv", "throughput.svg", "index.html"})
    EXPECT_TRUE(fs::exists(dir_ / "out" / f)) << f;
  EXPECT_NE(Slurp(dir_ / "out" / "index.html").find("<svg"), std::string::npos);
  // Nothing fits: GPT-3 175B on 4 GPUs; said, with exit status 3.
  std::ofstream(dir_ / "big.yaml")
      << "cluster: {devices_per_node: 4, device: A100-SXM4-80GB}\n"
         "workload: {model: gpt3-175b, batch_per_device: 1}\n";
  r = Dtsim("search " + (dir_ / "big.yaml").string() + " -o " + (dir_ / "big").string());
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("no plan fits"), std::string::npos) << r.err;
  // It says what would fit, and search.csv holds every plan with its bound
  // (not a header alone); the page says so instead of drawing an empty chart.
  EXPECT_NE(r.err.find("the memory bound admits plans from "), std::string::npos) << r.err;
  const std::string dropped = Slurp(dir_ / "big" / "search.csv");
  EXPECT_GT(std::count(dropped.begin(), dropped.end(), '\n'), 10) << dropped;
  EXPECT_NE(dropped.find("dropped by the memory bound"), std::string::npos);
  EXPECT_NE(Slurp(dir_ / "big" / "index.html").find("No plan fits"), std::string::npos);
  EXPECT_EQ(Slurp(dir_ / "big" / "index.html").find("<svg"), std::string::npos);
  // The scenario's own split need not divide the cluster: the search
  // replaces it (t x p = 128 on 8 devices).
  std::ofstream(dir_ / "split.yaml")
      << "name: split\ncluster: {nodes: 2, devices_per_node: 4, device: A100-SXM4-80GB}\n"
         "workload: {model: gpt2, precision: fp16, iterations: 1}\n"
         "parallelism: {strategy: hybrid, tensor_parallel: 4, pipeline_parallel: 32, "
         "micro_batch_size: 1, global_batch: 32}\n";
  r = Dtsim("search " + (dir_ / "split.yaml").string() + " -q -o " + (dir_ / "split").string());
  EXPECT_EQ(r.status, 0) << r.err;
  // search.csv's global_batch is the plan's (32), also for the pipelines
  // priced by extrapolation from fewer micro-batches.
  const std::string csv = Slurp(dir_ / "split" / "search.csv");
  std::istringstream lines(csv);
  std::string header, row;
  std::getline(lines, header);
  std::vector<std::string> columns;
  for (std::istringstream h(header); std::getline(h, row, ',');) columns.push_back(row);
  const auto at = std::find(columns.begin(), columns.end(), "global_batch") - columns.begin();
  int rows = 0;
  while (std::getline(lines, row)) {
    if (row.find("true") == std::string::npos) continue;  // infeasible rows leave it empty
    // The scenario column is quoted and holds commas: count from the end.
    std::vector<std::string> cells;
    for (std::istringstream c(row); std::getline(c, header, ',');) cells.push_back(header);
    const auto from_end = static_cast<std::ptrdiff_t>(columns.size()) - at;
    EXPECT_EQ(cells[cells.size() - static_cast<std::size_t>(from_end)], "32") << row;
    ++rows;
  }
  EXPECT_GT(rows, 0);
  std::ofstream(dir_ / "bad.yaml")
      << "cluster: {devices_per_node: 4}\nworkload: {model: gpt2}\n"
         "parallelism:\n  strategy: local_sgd\n";
  r = Dtsim("search " + (dir_ / "bad.yaml").string() + " -o " + (dir_ / "bad").string());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("bad.yaml:4:"), std::string::npos) << r.err;
}

// Issue 15 item 3: started by an MPI launcher, sweep and search split their
// points over the ranks and write the bytes one process writes.
TEST_F(Cli, SweepAndSearchOverMpiRanksWriteWhatOneProcessWrites) {
  const std::string sweep = "sweep scenarios/sweep-local-sgd-periods.yaml -q --out ";
  ASSERT_EQ(Dtsim(sweep + (dir_ / "one").string()).status, 0);
  fs::create_directories(dir_);
  std::ofstream(dir_ / "s.yaml")
      << "name: s\ncluster: {nodes: 2, devices_per_node: 4, device: A100-SXM4-80GB}\n"
         "workload: {model: gpt2, batch_per_device: 4, precision: fp16, iterations: 1}\n";
  const std::string search = "search " + (dir_ / "s.yaml").string() + " -q --out ";
  ASSERT_EQ(Dtsim(search + (dir_ / "search-one").string()).status, 0);
  const std::string launcher = std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ") +
                               DTSIM_TEST_MPIEXEC + " --oversubscribe -np ";
  for (const int ranks : {1, 2, 3}) {
    const std::string n = std::to_string(ranks);
    Result r = Dtsim(sweep + (dir_ / ("ranks" + n)).string(), launcher + n + " ");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* f : {"sweep.csv", "index.html", "throughput.svg", "breakdown.svg"})
      EXPECT_EQ(Slurp(dir_ / ("ranks" + n) / f), Slurp(dir_ / "one" / f)) << f << ", " << n;
    r = Dtsim(search + (dir_ / ("search-ranks" + n)).string(), launcher + n + " ");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* f : {"search.csv", "pareto.csv", "index.html"})
      EXPECT_EQ(Slurp(dir_ / ("search-ranks" + n) / f), Slurp(dir_ / "search-one" / f))
          << f << ", " << n;
  }
}

TEST_F(Cli, ExecRefusesWhatItCannotRunWithStatus2) {
  // The plan's ranks must match the processes.
  fs::create_directories(dir_);
  std::ofstream(dir_ / "dp.yaml") << "cluster: {devices_per_node: 2}\n"
                                     "workload: {model: mnist-mlp, iterations: 2}\n";
  Result r = Dtsim("exec " + (dir_ / "dp.yaml").string() + " --ranks 1");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("plan has 2 ranks (2 devices) but 1 processes"), std::string::npos)
      << r.err;
  // Tensor parallelism is simulated only.
  std::ofstream(dir_ / "tp.yaml")
      << "cluster: {devices_per_node: 2}\n"
         "workload: {model: gpt2, iterations: 2}\n"
         "parallelism: {strategy: hybrid, tensor_parallel: 2, micro_batch_size: 1, "
         "global_batch: 4}\n";
  Result t = Dtsim("exec " + (dir_ / "tp.yaml").string());
  EXPECT_EQ(t.status, 2) << t.err;
  EXPECT_NE(t.err.find("tensor parallelism is simulated but not executed"), std::string::npos)
      << t.err;
  // PipeDream's weight stashing and replicated stages are simulated only
  // (issue 13 item 4).
  std::ofstream(dir_ / "pd.yaml")
      << "cluster: {devices_per_node: 2}\n"
         "workload: {model: mnist-mlp, iterations: 2}\n"
         "parallelism: {strategy: hybrid, schedule: pipedream, pipeline_parallel: 2}\n";
  Result d = Dtsim("exec " + (dir_ / "pd.yaml").string());
  EXPECT_EQ(d.status, 2) << d.err;
  EXPECT_NE(d.err.find("schedule pipedream (weight stashing, replicated stages) is simulated"),
            std::string::npos)
      << d.err;
}


// --network and --latency are checked before anything runs.
TEST_F(Cli, NetworkOptionsAreCheckedWithStatus2) {
  Result r = Dtsim("exec scenarios/local/cifar10-dp-2cpu.yaml --latency 50us");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--latency needs --network"), std::string::npos) << r.err;
  Result u = Dtsim("exec scenarios/local/cifar10-dp-2cpu.yaml --network 1G");
  EXPECT_EQ(u.status, 2) << u.err;
  EXPECT_NE(u.err.find("--network"), std::string::npos) << u.err;
}

// Root with network namespaces and tc: what the emulated network needs.
bool CanEmulateNetwork() {
  if (::geteuid() != 0) return false;
  const std::string ns = "dtsim-cli-probe-" + std::to_string(::getpid());
  if (std::system(("ip netns add " + ns + " 2>/dev/null").c_str()) != 0) return false;
  std::system(("ip netns del " + ns).c_str());
  // A container may allow namespaces but not veth links or tbf: try both.
  const std::string a = "dtca" + std::to_string(::getpid() % 100000);
  const std::string b = "dtcb" + std::to_string(::getpid() % 100000);
  if (std::system(("ip link add " + a + " type veth peer name " + b + " 2>/dev/null").c_str()) != 0)
    return false;
  const bool tbf = std::system(("tc qdisc add dev " + a +
                                " root tbf rate 1mbit burst 32kbit latency 50ms 2>/dev/null")
                                   .c_str()) == 0;
  std::system(("ip link del " + a + " 2>/dev/null").c_str());
  return tbf;
}

// "dtsim-<pid>-r" from the "emulated network: ... in namespaces dtsim-<pid>-r0..1" line.
std::string NamespacePrefix(const std::string& err) {
  std::smatch m;
  const std::regex re("in namespaces (dtsim-[0-9]+-r)0");
  return std::regex_search(err, m, re) ? m[1].str() : "";
}

// Namespaces and bridges named for that prefix's pid that still exist.
std::string Leftovers(const std::string& prefix) {
  const std::string pid = prefix.substr(6, prefix.size() - 8);  // dtsim-<pid>-r
  const fs::path tmp = fs::temp_directory_path() / ("dtsim_cli_ns_" + std::to_string(::getpid()));
  std::system(("(ip netns list; ip -o link show) >" + tmp.string() + " 2>&1").c_str());
  std::istringstream lines(Slurp(tmp));
  fs::remove(tmp);
  std::string left;
  for (std::string line; std::getline(lines, line);)
    if (line.find(prefix) != std::string::npos || line.find("dts" + pid + "b") != std::string::npos ||
        line.find("dts" + pid + "v") != std::string::npos)
      left += line + "\n";
  return left;
}

// Two ranks in their own namespaces at 100 Mb/s: exec.json records the
// network, and nothing of it is left afterwards.
TEST_F(Cli, ExecInEmulatedNetworkRecordsItAndRemovesIt) {
  if (!CanEmulateNetwork()) GTEST_SKIP() << "needs root, network namespaces and tc";
  Result r = Dtsim("exec scenarios/local/cifar10-dp-2cpu.yaml --network 100Mbps --iterations 2 "
                   "-q --out " + dir_.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(Slurp(dir_ / "exec.json"));
  EXPECT_EQ(j.at("ranks").get<int>(), 2);
  // 100 Mb/s = 100e6 / 8 = 12.5e6 bytes/s.
  EXPECT_DOUBLE_EQ(j.at("network").at("rate_bytes_per_s").get<double>(), 12.5e6);
  // The prediction's link: TCP goodput at MTU 1500, 1448 / 1514 of the rate
  // (exec/netem/emulated_network.h, TcpGoodput).
  EXPECT_DOUBLE_EQ(j.at("network").at("predicted_link_bw_bytes_per_s").get<double>(),
                   12.5e6 * 1448 / 1514);
  EXPECT_GT(j.at("measured").at("comm_s").get<double>(), 0);
  const std::string prefix = NamespacePrefix(r.err);
  ASSERT_FALSE(prefix.empty()) << r.err;
  EXPECT_EQ(Leftovers(prefix), "");
}

// SIGTERM to dtsim while its ranks run: it stops them, removes the network
// and exits with 128 + 15.
TEST_F(Cli, InterruptedExecRemovesTheNetwork) {
  if (!CanEmulateNetwork()) GTEST_SKIP() << "needs root, network namespaces and tc";
  fs::create_directories(dir_);
  const fs::path err = dir_ / "err";
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    ::execl(DTSIM_BIN, DTSIM_BIN, "exec", "scenarios/local/cifar10-dp-2cpu.yaml", "--network",
            "100Mbps", "--iterations", "1000", "-q", "--out", dir_.c_str(), nullptr);
    ::_exit(127);
  }
  // Wait until mpirun runs (its command line is echoed), then a little more.
  for (int i = 0; i < 300 && Slurp(err).find("running:") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << Slurp(err);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << Slurp(err);
  const std::string prefix = NamespacePrefix(Slurp(err));
  ASSERT_FALSE(prefix.empty()) << Slurp(err);
  EXPECT_EQ(Leftovers(prefix), "");
}

// ---- Issue 10: real execution ends, and ends right ---------------------

// Runs dtsim like Dtsim(), killed after `seconds` (status 124): a run that
// hangs fails the test instead of hanging it.
Result DtsimWithin(int seconds, const std::string& args) {
  return Dtsim(args, "timeout -k 10 " + std::to_string(seconds) + " ");
}

// Two data-parallel ranks of the MNIST MLP: a few milliseconds a step.
void WriteTwoRankMlp(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "cluster: {devices_per_node: 2}\n"
                         "workload: {model: mnist-mlp, batch_per_device: 8}\n";
}

// Issue 10 item 11: --resume hung when the newest checkpoint was bad on some
// ranks only. The ranks now agree on the newest step valid on all of them.
TEST_F(Cli, ResumeFallsBackToTheNewestCheckpointValidOnEveryRank) {
  const fs::path scenario = dir_ / "s.yaml";
  WriteTwoRankMlp(scenario);
  const fs::path base = dir_ / "base";
  Result first = DtsimWithin(
      120, "exec " + scenario.string() + " --iterations 4 --checkpoint-every 2 -q --out " +
               base.string());
  ASSERT_EQ(first.status, 0) << first.err;
  const fs::path newest = fs::path("checkpoints") / "rank-1" / "ckpt-000000000004.dtck";
  ASSERT_TRUE(fs::is_regular_file(base / newest));
  const auto size = fs::file_size(base / newest);
  auto poke = [](const fs::path& f, std::uintmax_t at, char value) {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(at));
    io.put(value);
  };
  auto flip = [](const fs::path& f, std::uintmax_t at) {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(static_cast<std::streamoff>(at));
    const char c = static_cast<char>(io.get() ^ 0x10);
    io.seekp(static_cast<std::streamoff>(at));
    io.put(c);
  };
  // Each way the newest checkpoint of rank 1 can be bad (the format's
  // header: magic at 0, CRC at 12; exec/train/checkpoint.h).
  const std::vector<std::pair<std::string, std::function<void(const fs::path&)>>> damage = {
      {"truncated", [&](const fs::path& f) { fs::resize_file(f, size / 2); }},
      {"bit flip", [&](const fs::path& f) { flip(f, size - 10); }},
      {"bad magic", [&](const fs::path& f) { poke(f, 0, 'X'); }},
      {"bad crc", [&](const fs::path& f) { flip(f, 12); }},
      {"garbage", [](const fs::path& f) { std::ofstream(f, std::ios::trunc) << "garbage"; }},
      {"folder", [](const fs::path& f) {
         fs::remove(f);
         fs::create_directory(f);
       }}};
  for (std::size_t v = 0; v < damage.size(); ++v) {
    const auto& [name, damage_it] = damage[v];
    const fs::path out = dir_ / ("v-" + std::to_string(v));
    fs::create_directories(out);
    fs::copy(base / "checkpoints", out / "checkpoints", fs::copy_options::recursive);
    damage_it(out / newest);
    Result r = DtsimWithin(120, "exec " + scenario.string() +
                                    " --iterations 6 --resume -q --out " + out.string());
    ASSERT_EQ(r.status, 0) << name << "\n" << r.err;
    EXPECT_NE(r.err.find("resuming from step 2"), std::string::npos) << name << "\n" << r.err;
    // Only the iterations run (3..6), with their real losses and a finite
    // throughput (not zeros, not inf).
    const auto j = nlohmann::json::parse(Slurp(out / "exec.json"));
    EXPECT_EQ(j.at("resumed_from_step").get<int>(), 2) << name;
    ASSERT_EQ(j.at("loss").size(), 4u) << name;
    for (const auto& l : j.at("loss")) EXPECT_GT(l.get<double>(), 0) << name;
    const double throughput = j.at("measured").at("throughput_samples_per_s").get<double>();
    EXPECT_TRUE(std::isfinite(throughput) && throughput > 0) << name << " " << throughput;
  }
  // Bad on rank 1 at both steps: no common step; every rank stops, exit 2.
  const fs::path none = dir_ / "none";
  fs::create_directories(none);
  fs::copy(base / "checkpoints", none / "checkpoints", fs::copy_options::recursive);
  flip(none / newest, 12);
  flip(none / "checkpoints" / "rank-1" / "ckpt-000000000002.dtck", 12);
  Result bad = DtsimWithin(120, "exec " + scenario.string() + " --iterations 6 --resume -q --out " +
                                    none.string());
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("no checkpoint step is valid on every rank"), std::string::npos)
      << bad.err;
  // Nothing to resume from at all, and nothing left to run.
  Result empty = DtsimWithin(120, "exec " + scenario.string() + " --resume -q --out " +
                                      (dir_ / "empty").string());
  EXPECT_EQ(empty.status, 2) << empty.err;
  EXPECT_NE(empty.err.find("no checkpoint to resume from"), std::string::npos) << empty.err;
  Result done = DtsimWithin(120, "exec " + scenario.string() + " --iterations 4 --resume -q --out " +
                                     base.string());
  EXPECT_EQ(done.status, 2) << done.err;
  EXPECT_NE(done.err.find("nothing is left to run"), std::string::npos) << done.err;
}

// Issue 10 item 18: a mistake only one rank sees (its checkpoint folder is
// a file) ended as exit 1; it is exit 2 with the place, from the launcher.
TEST_F(Cli, ExecErrorOnOneRankIsExit2WithItsPlace) {
  const fs::path scenario = dir_ / "s.yaml";
  WriteTwoRankMlp(scenario);
  fs::create_directories(dir_ / "out" / "checkpoints");
  std::ofstream(dir_ / "out" / "checkpoints" / "rank-1") << "not a folder";
  Result r = DtsimWithin(120, "exec " + scenario.string() +
                                  " --iterations 3 --checkpoint-every 1 -q --out " +
                                  (dir_ / "out").string());
  EXPECT_EQ(r.status, 2) << r.err;
  // The launcher's own last line names the rank and the place.
  const std::string last = r.err.substr(r.err.rfind("dtsim: "));
  EXPECT_NE(last.find("rank 1: "), std::string::npos) << r.err;
  EXPECT_NE(last.find((dir_ / "out" / "checkpoints" / "rank-1").string()), std::string::npos)
      << r.err;
}

// Issue 10 item 12: a 2-stage pipeline of a transformer with tied
// embeddings hung. It runs, and trains what one device trains: the same
// global batch (4) gives the same losses (float sums in another order
// only: 1e-5 relative, see exec/runtime/plan_executor_test.cc).
TEST_F(Cli, TiedTransformerPipelineTrainsLikeOneDevice) {
  fs::create_directories(dir_);
  const std::string model =
      "workload: {model: {transformer: {layers: 2, hidden: 16, heads: 4, sequence: 8, "
      "vocab: 32}}";
  std::ofstream(dir_ / "one.yaml") << "cluster: {devices_per_node: 1}\n"
                                   << model << ", batch_per_device: 4}\n";
  std::ofstream(dir_ / "pipe.yaml")
      << "cluster: {devices_per_node: 2}\n"
      << model << "}\n"
      << "parallelism: {strategy: hybrid, pipeline_parallel: 2, micro_batch_size: 2, "
         "global_batch: 4, schedule: 1f1b}\n";
  Result one = DtsimWithin(120, "exec " + (dir_ / "one.yaml").string() +
                                    " --iterations 4 -q --out " + (dir_ / "one").string());
  ASSERT_EQ(one.status, 0) << one.err;
  Result pipe = DtsimWithin(120, "exec " + (dir_ / "pipe.yaml").string() +
                                     " --iterations 4 -q --out " + (dir_ / "pipe").string());
  ASSERT_EQ(pipe.status, 0) << pipe.err;
  const auto a = nlohmann::json::parse(Slurp(dir_ / "one" / "exec.json")).at("loss");
  const auto b = nlohmann::json::parse(Slurp(dir_ / "pipe" / "exec.json")).at("loss");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(b[i].get<double>(), a[i].get<double>(), 1e-5 * a[i].get<double>()) << i;
}

// Issue 10 item 13: a model bigger than memory ended in std::bad_alloc. The
// estimate is checked first: GPT-3 175B's 175e9 parameters alone take 700
// GB in fp32, twice that with gradients.
TEST_F(Cli, ExecOfAModelBiggerThanMemoryIsRefusedWithTheNumbers) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "big.yaml") << "cluster: {devices_per_node: 1}\n"
                                      "workload: {model: gpt3-175b, batch_per_device: 1}\n";
  Result r = DtsimWithin(120, "exec " + (dir_ / "big.yaml").string() + " --iterations 1");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("MemAvailable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("parameters and gradients"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find((dir_ / "big.yaml").string()), std::string::npos) << r.err;
}

// The processes whose parent is this test (a subreaper adopts orphans).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> kids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::istringstream stat(Slurp(e.path() / "stat"));
    std::string pid, comm, state;
    long ppid = 0;
    // "pid (comm) state ppid ...": comm may hold spaces; it ends at ") ".
    const std::string line = stat.str();
    const auto close = line.rfind(") ");
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    rest >> state >> ppid;
    if (ppid == parent && state != "Z") kids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return kids;
}

// Starts dtsim with `args` in a child, waits until `ready(err)` (or 60 s),
// kills it with SIGKILL, and returns whether every process it started is
// gone within `seconds` (they are adopted by this test, a subreaper).
bool KillLeavesNoOrphans(const std::vector<std::string>& args, const fs::path& err,
                         const std::function<bool(pid_t)>& ready, int seconds) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    std::vector<char*> argv = {const_cast<char*>(DTSIM_BIN)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(DTSIM_BIN, argv.data());
    ::_exit(127);
  }
  for (int i = 0; i < 600 && !ready(pid); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < seconds * 10 && !gone; ++i) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    gone = ChildrenOf(::getpid()).empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Whatever is left: not ours to keep.
  for (pid_t p : ChildrenOf(::getpid())) ::kill(p, SIGKILL);
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  return gone;
}

// Issue 10 item 16: killing dtsim left its children running (mpirun and the
// ranks of exec; the SimGrid engine's child of run). They die with it.
TEST_F(Cli, KilledExecLeavesNoMpirunOrRanks) {
  const fs::path scenario = dir_ / "s.yaml";
  WriteTwoRankMlp(scenario);
  // Ready once both ranks run: mpirun's children.
  auto ranks_running = [](pid_t dtsim) {
    for (pid_t launcher : ChildrenOf(dtsim))
      if (ChildrenOf(launcher).size() >= 2) return true;
    return false;
  };
  EXPECT_TRUE(KillLeavesNoOrphans({"exec", scenario.string(), "--iterations", "100000", "-q",
                                   "--out", (dir_ / "out").string()},
                                  dir_ / "err", ranks_running, 30))
      << Slurp(dir_ / "err");
}

// With --network, the ranks of a killed run die too, and the next run
// then removes that run's network (it removes only networks no process uses).
TEST_F(Cli, KilledExecInEmulatedNetworkLeavesNoRanksAndItsNetworkGoesNext) {
  if (!CanEmulateNetwork()) GTEST_SKIP() << "needs root, network namespaces and tc";
  const fs::path scenario = dir_ / "s.yaml";
  WriteTwoRankMlp(scenario);
  auto ranks_running = [](pid_t dtsim) {
    for (pid_t launcher : ChildrenOf(dtsim))
      if (ChildrenOf(launcher).size() >= 2) return true;
    return false;
  };
  EXPECT_TRUE(KillLeavesNoOrphans({"exec", scenario.string(), "--network", "100Mbps",
                                   "--iterations", "100000", "-q", "--out",
                                   (dir_ / "out").string()},
                                  dir_ / "err", ranks_running, 30))
      << Slurp(dir_ / "err");
  const std::string prefix = NamespacePrefix(Slurp(dir_ / "err"));
  ASSERT_FALSE(prefix.empty()) << Slurp(dir_ / "err");
  Result next = DtsimWithin(120, "exec " + scenario.string() +
                                     " --network 100Mbps --iterations 1 -q --out " +
                                     (dir_ / "next").string());
  EXPECT_EQ(next.status, 0) << next.err;
  // Whichever run comes next removes it: this one, or one that a test
  // running beside this one (ctest -j) started first, which then says so
  // instead. (Requiring this run's message made the test fail now and then
  // under ctest -j2.) Either way nothing of the killed run is left.
  EXPECT_EQ(Leftovers(prefix), "") << next.err;
}

TEST_F(Cli, KilledSimgridRunLeavesNoChild) {
  fs::create_directories(dir_);
  // The SimGrid child runs for seconds on this plan (256 devices, every one
  // simulated).
  auto child_running = [](pid_t dtsim) { return !ChildrenOf(dtsim).empty(); };
  EXPECT_TRUE(KillLeavesNoOrphans({"run", "scenarios/resnet50-256xA100-fattree.yaml", "--engine",
                                   "simgrid", "-q", "--no-trace", "--out",
                                   (dir_ / "out").string()},
                                  dir_ / "err", child_running, 3))
      << Slurp(dir_ / "err");
}

// ---- Issue 10: outputs (items 14, 17) -----------------------------------

// Names of dtsim's staging folders left in `dir` (there should be none;
// the folder's lock file, .dtsim-lock, stays by design: common/atomic_file.h).
std::string StagingLeftovers(const fs::path& dir) {
  std::string left;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".dtsim-", 0) == 0 && name != ".dtsim-lock") left += e.path().string() + "\n";
  }
  return left;
}

// Issue 10 item 14, the reproducer: with o/summary.csv.tmp a symbolic link
// to another file, `dtsim run S --out o` overwrote that file. Also links at
// the final names and at `run --json FILE`, `plan --json FILE`,
// `plan --dot FILE`: each is replaced, its target untouched.
TEST_F(Cli, OutputsNeverWriteThroughSymbolicLinks) {
  const fs::path o = dir_ / "o";
  fs::create_directories(o);
  const fs::path victim = dir_ / "victim.txt";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, o / "summary.csv.tmp");
  fs::create_symlink(victim, o / "report.json");
  fs::create_symlink(victim, dir_ / "run.json");
  fs::create_symlink(victim, dir_ / "plan.json");
  fs::create_symlink(victim, dir_ / "plan.dot");
  const Result r = Dtsim("run scenarios/default.yaml -q --out " + o.string() + " --json " +
                         (dir_ / "run.json").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const Result p = Dtsim("plan scenarios/default.yaml --json " + (dir_ / "plan.json").string() +
                         " --dot " + (dir_ / "plan.dot").string());
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_EQ(Slurp(victim), "precious");
  for (const fs::path& f : {o / "report.json", o / "summary.csv", dir_ / "run.json",
                            dir_ / "plan.json", dir_ / "plan.dot"}) {
    EXPECT_FALSE(fs::is_symlink(f)) << f;
    EXPECT_TRUE(fs::is_regular_file(f)) << f;
  }
  // What was written is the real output.
  EXPECT_NO_THROW(nlohmann::json::parse(Slurp(o / "report.json")));
  EXPECT_EQ(Slurp(o / "report.json"), Slurp(dir_ / "run.json"));
  EXPECT_NO_THROW(nlohmann::json::parse(Slurp(dir_ / "plan.json")));
  EXPECT_EQ(Slurp(dir_ / "plan.dot").rfind("digraph", 0), 0u);
  EXPECT_EQ(StagingLeftovers(o), "");
  EXPECT_EQ(StagingLeftovers(dir_), "");
}

// Issue 10 item 17: what a killed run leaves is cleaned by the next one: a
// stale *.tmp of an older dtsim and a dead run's staging folder (mode 0700,
// as dtsim makes them); the other files of the folder stay.
TEST_F(Cli, NextRunCleansWhatAKilledRunLeft) {
  const fs::path o = dir_ / "o";
  fs::create_directories(o / ".dtsim-stage-deadbeef0000");
  fs::permissions(o / ".dtsim-stage-deadbeef0000", fs::perms::owner_all);
  std::ofstream(o / ".dtsim-stage-deadbeef0000" / "report.json") << "{\"half";
  std::ofstream(o / "trace.json.tmp") << "[";
  std::ofstream(o / "exec.json") << "another command's";
  const Result r = Dtsim("run scenarios/default.yaml -q --out " + o.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(StagingLeftovers(o), "");
  EXPECT_FALSE(fs::exists(o / "trace.json.tmp"));
  EXPECT_EQ(Slurp(o / "exec.json"), "another command's");
  EXPECT_NO_THROW(nlohmann::json::parse(Slurp(o / "trace.json")));
}

// Issue 15 item 1: an ONNX export of ResNet-50 is the zoo's ResNet-50: the
// same scenario predicts the same figures with either; a file that is not
// ONNX is refused at its path (exit 2).
TEST_F(Cli, OnnxModelRunsAsTheZooModel) {
  fs::create_directories(dir_);
  dtsim::onnx_format::ModelProto model;
  dtsim::models::onnx_test::WriteResNet50(&model);
  {
    std::ofstream f(dir_ / "r50.onnx", std::ios::binary);
    ASSERT_TRUE(model.SerializeToOstream(&f));
  }
  const std::string scenario =
      "cluster: {nodes: 2, devices_per_node: 4, device: V100-SXM2-32GB, intra_node_link: nvlink2,"
      " network: {link: 25GbE, topology: single_switch}}\n"
      "workload: {batch_per_device: 64, precision: fp16, model: ";
  {
    std::ofstream(dir_ / "onnx.yaml") << "name: r\n" << scenario << "{file: r50.onnx}}\n";
    std::ofstream(dir_ / "zoo.yaml") << "name: r\n" << scenario << "resnet50}\n";
  }
  ASSERT_EQ(Dtsim("run " + (dir_ / "onnx.yaml").string() + " -q --out " + (dir_ / "a").string())
                .status,
            0);
  ASSERT_EQ(
      Dtsim("run " + (dir_ / "zoo.yaml").string() + " -q --out " + (dir_ / "b").string()).status,
      0);
  const nlohmann::json a = nlohmann::json::parse(Slurp(dir_ / "a" / "report.json"));
  const nlohmann::json b = nlohmann::json::parse(Slurp(dir_ / "b" / "report.json"));
  EXPECT_EQ(a["throughput_samples_per_s"], b["throughput_samples_per_s"]);
  EXPECT_EQ(a["step_time_s"], b["step_time_s"]);
  const Result table = Dtsim("model " + (dir_ / "r50.onnx").string());
  EXPECT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("25,557,032"), std::string::npos);  // torchvision's count

  std::ofstream(dir_ / "bad.onnx") << "not a model";
  const Result bad = Dtsim("model " + (dir_ / "bad.onnx").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find((dir_ / "bad.onnx").string() + ": error: not an ONNX model"),
            std::string::npos)
      << bad.err;
}

// Issue 15 item 1: `dtsim chakra` on a two-rank trace (1 ms of compute,
// then an all-reduce of 64 MB) over 2 V100 of one node: the step is the
// compute plus the all-reduce, on either engine; wrong input exits 2.
TEST_F(Cli, ChakraTraceOnAScenariosCluster) {
  fs::create_directories(dir_);
  for (int r = 0; r < 2; ++r) {
    dtsim::plan::chakra_test::TraceWriter w;
    w.Compute(1, 1000);
    w.AllReduce(2, 64 << 20, {1});
    std::ofstream(dir_ / ("t." + std::to_string(r) + ".et"), std::ios::binary) << w.Bytes();
  }
  std::ofstream(dir_ / "c.yaml")
      << "name: c\ncluster: {nodes: 1, devices_per_node: 2, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: resnet50}\n";
  const std::string args = "chakra " + (dir_ / "t").string() + " --cluster " +
                           (dir_ / "c.yaml").string() + " --batch 64 --out ";
  const Result r = Dtsim(args + (dir_ / "a").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("2 ranks, 2 compute nodes, 1 collectives"), std::string::npos) << r.out;
  const nlohmann::json a = nlohmann::json::parse(Slurp(dir_ / "a" / "summary.json"));
  // Ring all-reduce of 64 MiB between 2 GPUs: each sends and receives half
  // the buffer twice, 64 MiB in all, over NVLink 2 (tens of GB/s): a few ms.
  const double step = a["step_time_s"];
  EXPECT_GT(step, 1e-3 + 64.0 * (1 << 20) / 300e9);
  EXPECT_LT(step, 1e-3 + 64.0 * (1 << 20) / 5e9);
  EXPECT_DOUBLE_EQ(a["throughput_samples_per_s"].get<double>(), 64 / step);
  const Result sg = Dtsim(args + (dir_ / "b").string() + " --engine simgrid");
  ASSERT_EQ(sg.status, 0) << sg.err;
  const double simgrid = nlohmann::json::parse(Slurp(dir_ / "b" / "summary.json"))["step_time_s"];
  EXPECT_NEAR(simgrid / step, 1.0, 0.1);  // the two engines price one flow alike

  std::ofstream(dir_ / "four.yaml")
      << "name: c\ncluster: {nodes: 1, devices_per_node: 4, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: resnet50}\n";
  Result bad = Dtsim("chakra " + (dir_ / "t").string() + " --cluster " +
                     (dir_ / "four.yaml").string() + " --out " + (dir_ / "c").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find((dir_ / "t").string() +
                         ".2.et: error: rank 2's trace does not exist: the cluster has 4 devices"),
            std::string::npos)
      << bad.err;
  // A gap in the rank files is named, whatever the cluster: with t.3.et
  // beside t.0.et and t.1.et, two devices no longer run ranks 0-1 alone.
  fs::copy_file(dir_ / "t.1.et", dir_ / "t.3.et");
  bad = Dtsim("chakra " + (dir_ / "t").string() + " --cluster " + (dir_ / "c.yaml").string() +
              " --out " + (dir_ / "c").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find((dir_ / "t").string() + ".2.et: error: rank 2's trace does not exist, but"),
            std::string::npos)
      << bad.err;
  fs::remove(dir_ / "t.3.et");

  // A collective on a process group ("1": ranks 0 and 1) that the traces do
  // not list: refused, unless a communicator-group file gives its ranks.
  for (int rank = 0; rank < 2; ++rank) {
    dtsim::plan::chakra_test::TraceWriter w;
    dtsim::chakra_format::AttributeProto* name = w.AllReduce(1, 1 << 20)->add_attr();
    name->set_name("pg_name");
    name->set_string_val("1");
    std::ofstream(dir_ / ("pg." + std::to_string(rank) + ".et"), std::ios::binary) << w.Bytes();
  }
  const std::string pg_args = "chakra " + (dir_ / "pg").string() + " --cluster " +
                              (dir_ / "c.yaml").string() + " --out " + (dir_ / "pg").string();
  bad = Dtsim(pg_args);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("process group '1' has no list of members"), std::string::npos) << bad.err;
  std::ofstream(dir_ / "groups.json") << R"({"1": [0, 1]})";
  const Result pg = Dtsim(pg_args + " --comm-groups " + (dir_ / "groups.json").string());
  ASSERT_EQ(pg.status, 0) << pg.err;
  EXPECT_EQ(nlohmann::json::parse(Slurp(dir_ / "pg" / "summary.json"))["collectives"], 1);
  std::ofstream(dir_ / "groups.json") << R"([0, 1])";
  bad = Dtsim(pg_args + " --comm-groups " + (dir_ / "groups.json").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find((dir_ / "groups.json").string() + ": error: not a JSON object"),
            std::string::npos)
      << bad.err;

  // Compute nodes without durations: the 0 ms step comes with a warning in
  // summary.json, not as a plain result.
  for (int rank = 0; rank < 2; ++rank) {
    dtsim::plan::chakra_test::TraceWriter w;
    w.Compute(1, 0);
    std::ofstream(dir_ / ("zero." + std::to_string(rank) + ".et"), std::ios::binary) << w.Bytes();
  }
  const Result zero = Dtsim("chakra " + (dir_ / "zero").string() + " --cluster " +
                            (dir_ / "c.yaml").string() + " --out " + (dir_ / "zero").string());
  ASSERT_EQ(zero.status, 0) << zero.err;
  const nlohmann::json z = nlohmann::json::parse(Slurp(dir_ / "zero" / "summary.json"));
  EXPECT_EQ(z["step_time_s"], 0.0);
  ASSERT_EQ(z["warnings"].size(), 1u);
  EXPECT_NE(z["warnings"][0].get<std::string>().find("every compute node of the trace (2) has "
                                                     "duration 0"),
            std::string::npos);

  // Converter output: a host operator (is_cpu_op, 20 us) calling a GPU
  // kernel (100 us, ctrl_deps naming its caller), which also depends on a
  // node the converter dropped. Refused as it is; with the clean-up the
  // kernel alone is simulated (100 us) and what was removed is counted.
  for (int rank = 0; rank < 2; ++rank) {
    dtsim::plan::chakra_test::TraceWriter w;
    dtsim::chakra_format::Node* host = w.Compute(1, 20);
    dtsim::chakra_format::Node* kernel = w.Compute(2, 100, {1, 99});
    kernel->add_ctrl_deps(1);
    for (auto [node, cpu] : {std::pair{host, true}, std::pair{kernel, false}}) {
      dtsim::chakra_format::AttributeProto* is_cpu_op = node->add_attr();
      is_cpu_op->set_name("is_cpu_op");
      is_cpu_op->set_bool_val(cpu);
    }
    std::ofstream(dir_ / ("conv." + std::to_string(rank) + ".et"), std::ios::binary) << w.Bytes();
  }
  const std::string conv_args = "chakra " + (dir_ / "conv").string() + " --cluster " +
                                (dir_ / "c.yaml").string() + " --out " + (dir_ / "conv").string();
  bad = Dtsim(conv_args);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("depends on node 99, which the trace does not hold"), std::string::npos)
      << bad.err;
  const Result conv =
      Dtsim(conv_args + " --drop-dangling-deps --ignore-ctrl-deps --host-ops drop");
  ASSERT_EQ(conv.status, 0) << conv.err;
  const nlohmann::json cleaned = nlohmann::json::parse(Slurp(dir_ / "conv" / "summary.json"));
  EXPECT_DOUBLE_EQ(cleaned["step_time_s"].get<double>(), 100e-6);
  EXPECT_EQ(cleaned["cleanup"]["dangling_deps_dropped"], 2);  // one per rank
  EXPECT_EQ(cleaned["cleanup"]["ctrl_deps_ignored"], 2);
  EXPECT_EQ(cleaned["cleanup"]["host_ops_dropped"], 2);
  bad = Dtsim("chakra " + (dir_ / "none").string() + " --cluster " + (dir_ / "c.yaml").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("none.0.et: error: no Chakra trace at this path"), std::string::npos)
      << bad.err;
}

// Issue 15 item 4: `dtsim sweep --tensorboard` writes the axes as HParams:
// the experiment in tensorboard/, a session folder per point.
TEST_F(Cli, SweepWritesHParams) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "s.yaml")
      << "name: s\ncluster: {nodes: [1, 2], devices_per_node: 2, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: resnet50, batch_per_device: 32}\n"
         "parallelism: {algorithm: [ring, tree]}\n";
  const Result r = Dtsim("sweep " + (dir_ / "s.yaml").string() + " --tensorboard --quiet --out " +
                         (dir_ / "o").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path tb = dir_ / "o" / "tensorboard";
  const std::string experiment = Slurp(tb / "events.out.tfevents.dtsim");
  EXPECT_NE(experiment.find("_hparams_/experiment"), std::string::npos);
  EXPECT_NE(experiment.find("parallelism.algorithm"), std::string::npos);
  for (const char* point : {"p0000", "p0003"}) {
    const std::string session = Slurp(tb / point / "events.out.tfevents.dtsim");
    EXPECT_NE(session.find("_hparams_/session_start_info"), std::string::npos) << point;
    EXPECT_NE(session.find("throughput_samples_per_s"), std::string::npos) << point;
  }
  EXPECT_FALSE(fs::exists(tb / "p0004"));
  // A smaller sweep into the same folder leaves no session of the larger
  // one (TensorBoard would show both as one); a folder of the user's stays.
  fs::create_directories(tb / "p0009");
  std::ofstream(tb / "p0009" / "notes.txt") << "mine";
  std::ofstream(dir_ / "small.yaml")
      << "name: s\ncluster: {nodes: [1, 2], devices_per_node: 2, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: resnet50, batch_per_device: 32}\n";
  ASSERT_EQ(Dtsim("sweep " + (dir_ / "small.yaml").string() + " --tensorboard --quiet --out " +
                  (dir_ / "o").string())
                .status,
            0);
  EXPECT_TRUE(fs::exists(tb / "p0001"));
  EXPECT_FALSE(fs::exists(tb / "p0002"));
  EXPECT_FALSE(fs::exists(tb / "p0003"));
  EXPECT_TRUE(fs::exists(tb / "p0009" / "notes.txt"));
  // The same sweep gives the same bytes.
  ASSERT_EQ(Dtsim("sweep " + (dir_ / "s.yaml").string() + " --tensorboard --quiet --out " +
                  (dir_ / "o2").string())
                .status,
            0);
  ASSERT_EQ(Dtsim("sweep " + (dir_ / "s.yaml").string() + " --tensorboard --quiet --out " +
                  (dir_ / "o3").string())
                .status,
            0);
  EXPECT_EQ(Slurp(dir_ / "o2" / "tensorboard" / "p0002" / "events.out.tfevents.dtsim"),
            Slurp(dir_ / "o3" / "tensorboard" / "p0002" / "events.out.tfevents.dtsim"));
}

// Issue 16: `dtsim tta` on a small sweep (data parallelism and local SGD
// with H = 4 on 2 devices), the mnist-mlp proxy: every point gets a time to
// the target, the same seeds give the same bytes, and what cannot be
// answered is refused.
TEST_F(Cli, TtaGivesTimesToTheTargetDeterministically) {
  fs::create_directories(dir_);
  // A proxy that learns its synthetic class images in a few updates.
  std::ofstream(dir_ / "tiny.yaml")
      << "name: tiny-cnn\ninput: [3, 8, 8]\nlayers:\n"
         "  - {name: conv1, type: conv2d, out_channels: 8, kernel: 3, padding: 1}\n"
         "  - {name: relu1, type: relu}\n  - {name: flat, type: flatten}\n"
         "  - {name: fc, type: dense, out_features: 10}\n"
         "  - {name: loss, type: softmax_xent}\n";
  std::ofstream(dir_ / "s.yaml")
      << "name: t\ncluster: {nodes: 1, devices_per_node: 2, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: {file: tiny.yaml}, batch_per_device: 4}\n"
         "parallelism: {strategy: local_sgd, averaging_period: [1, 4]}\n";
  const std::string args = "tta " + (dir_ / "s.yaml").string() +
                           " --steps 60 --eval-every 2 --eval-samples 32 --seeds 2 --lr 0.05 "
                           "--target 0.3 -j 2 --out ";
  const Result r = Dtsim(args + (dir_ / "a").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string csv = Slurp(dir_ / "a" / "tta.csv");
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("parallelism.averaging_period,point,setting,workers,", 0), 0u) << line;
  int rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    EXPECT_NE(line.find(",measured,"), std::string::npos) << line;  // 2 workers measured
  }
  EXPECT_EQ(rows, 2);
  EXPECT_NE(r.out.find("best: t/parallelism.averaging_period="), std::string::npos) << r.out;
  for (const char* f : {"curves.csv", "tta.svg", "index.html", "events.out.tfevents.dtsim",
                        "sweep.csv", "throughput.svg"})
    EXPECT_TRUE(fs::exists(dir_ / "a" / f)) << f;
  // The sweep's page, led by the time-to-accuracy section.
  const std::string page = Slurp(dir_ / "a" / "index.html");
  EXPECT_LT(page.find("<h2>Time to 30% of the initial loss</h2>"), page.find("<h2>Throughput</h2>"));
  ASSERT_EQ(Dtsim(args + (dir_ / "b").string()).status, 0);
  EXPECT_EQ(Slurp(dir_ / "b" / "tta.csv"), csv);
  EXPECT_EQ(Slurp(dir_ / "b" / "curves.csv"), Slurp(dir_ / "a" / "curves.csv"));

  // Parameter servers: asynchronous with the simulated staleness (4 workers
  // take turns: 3 updates between a pull and its push) and 3 of 4 (one
  // backup worker), each measured.
  std::ofstream(dir_ / "ps.yaml")
      << "name: ps\ncluster: {nodes: 4, devices_per_node: 1, device: K20m, intra_node_link: "
         "pcie2-x16, network: {link: 1GbE}}\nworkload: {model: {file: tiny.yaml}, "
         "batch_per_device: 4, iterations: 20}\nparallelism: {strategy: parameter_server, "
         "sync: [synchronous, asynchronous], parameter_server: {servers: 1, device: cpu-host, "
         "replicas_to_aggregate: 3}}\n";
  const Result ps = Dtsim("tta " + (dir_ / "ps.yaml").string() +
                          " --steps 80 --eval-every 2 --eval-samples 32 --seeds 2 --lr 0.05 "
                          "--target 0.3 -j 2 --out " + (dir_ / "ps").string());
  ASSERT_EQ(ps.status, 0) << ps.err;
  const std::string ps_csv = Slurp(dir_ / "ps" / "tta.csv");
  EXPECT_NE(ps_csv.find(",backup 25% dropped,4,"), std::string::npos) << ps_csv;
  EXPECT_NE(ps_csv.find(",asynchronous staleness=3,4,"), std::string::npos) << ps_csv;

  // A target no run reaches in 2 updates: the files say so, exit 3.
  const Result none = Dtsim("tta " + (dir_ / "s.yaml").string() +
                            " --steps 2 --eval-every 1 --eval-samples 8 --seeds 1 --target 0.01 "
                            "--out " + (dir_ / "c").string());
  EXPECT_EQ(none.status, 3) << none.err;
  EXPECT_NE(Slurp(dir_ / "c" / "tta.csv").find("did not reach the target"), std::string::npos);
  // A strategy whose synchronisation it does not measure: exit 2 at the key.
  std::ofstream(dir_ / "h.yaml")
      << "name: h\ncluster: {nodes: 1, devices_per_node: 2, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: gpt2}\n"
         "parallelism: {strategy: hybrid, tensor_parallel: 2, global_batch: 8}\n";
  const Result bad = Dtsim("tta " + (dir_ / "h.yaml").string() + " --out " + (dir_ / "d").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("strategy hybrid is not one of them"), std::string::npos) << bad.err;
}

// A CSV file as rows of fields (no quoted commas before the last column
// in the files read here), and a column's index by its header.
std::vector<std::vector<std::string>> CsvRows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields;
    std::istringstream f(line);
    std::string field;
    while (std::getline(f, field, ',')) fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.emplace_back();
    rows.push_back(std::move(fields));
  }
  return rows;
}
std::size_t Column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  EXPECT_NE(it, header.end()) << name;
  return static_cast<std::size_t>(it - header.begin());
}

// `dtsim tta --dataset FOLDER` on Fashion-MNIST: the proxy fashion-mnist-cnn
// trains on the training split and is evaluated on the test split's first
// 512 samples, 4 workers, synchronous and local SGD with H = 4, to 60%
// held-out accuracy; each curve ends at its first evaluation at or above
// 0.6. A budget of 30 s on 2 cores (about 5 s measured).
TEST_F(Cli, TtaTrainsOnFashionMnistToAHeldOutAccuracy) {
  const fs::path data = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(data / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "no " << data;
  fs::create_directories(dir_);
  std::ofstream(dir_ / "fm.yaml")
      << "name: fm\ncluster: {nodes: 1, devices_per_node: 4, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: fashion-mnist-cnn, batch_per_device: 32}\n"
         "parallelism: {strategy: local_sgd, averaging_period: [1, 4], optimizer: momentum}\n";
  const auto start = std::chrono::steady_clock::now();
  const Result r = DtsimWithin(
      60, "tta " + (dir_ / "fm.yaml").string() + " --dataset " + data.string() +
              " --proxy fashion-mnist-cnn --target-accuracy 0.6 --eval-every 10 "
              "--eval-samples 512 --seeds 1 --lr 0.05 --lr-scaling none --steps 300 -j 2 --out " +
              (dir_ / "a").string());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_LT(seconds, 30.0);
  EXPECT_NE(r.out.find("training rule: momentum 0.9"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("updates to 60% held-out accuracy"), std::string::npos) << r.out;
  const auto tta = CsvRows(Slurp(dir_ / "a" / "tta.csv"));
  ASSERT_EQ(tta.size(), 3u);
  for (std::size_t k = 1; k < tta.size(); ++k) {
    EXPECT_EQ(tta[k][Column(tta[0], "target")], "accuracy>=0.6");
    EXPECT_EQ(tta[k][Column(tta[0], "lr")], "0.05");
    EXPECT_EQ(tta[k][Column(tta[0], "estimate")], "measured");
  }
  const auto curves = CsvRows(Slurp(dir_ / "a" / "curves.csv"));
  const std::size_t acc = Column(curves[0], "accuracy"), setting = Column(curves[0], "setting");
  int ends = 0;
  for (std::size_t k = 1; k < curves.size(); ++k) {
    const double a = std::stod(curves[k][acc]);
    EXPECT_GE(a, 0.0);
    const bool last = k + 1 == curves.size() || curves[k + 1][setting] != curves[k][setting];
    if (last) {
      EXPECT_GE(a, 0.6) << k;
      ++ends;
    } else {
      EXPECT_LT(a, 0.6) << k;
    }
  }
  EXPECT_EQ(ends, 2);
  const std::string page = Slurp(dir_ / "a" / "index.html");
  EXPECT_NE(page.find("<h2>Time to 60% held-out accuracy</h2>"), std::string::npos);
  EXPECT_NE(page.find("test split"), std::string::npos);
}

// The proxy trains as `dtsim exec` trains: the same seed (data order and
// initialisation), optimizer (momentum 0.9), warm-up and evaluation set give
// exec's held-out curve, up to float rounding (exec sums the replicas over
// MPI in another order). Local SGD on 2 ranks of the MNIST MLP, H = 2.
TEST_F(Cli, TtaProxyReproducesExecsHeldOutCurve) {
  const fs::path data = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(data / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "no " << data;
  fs::create_directories(dir_);
  std::ofstream(dir_ / "fm.yaml")
      << "name: fm\nseed: 1\ncluster: {nodes: 1, devices_per_node: 2, device: cpu-host}\n"
         "workload: {model: mnist-mlp, batch_per_device: 32}\n"
         "parallelism: {strategy: local_sgd, averaging_period: 2, optimizer: momentum}\n";
  const std::string common = " --dataset " + data.string() +
                             " --lr 0.05 --lr-warmup-steps 5 --eval-every 10 --eval-samples 512";
  const Result e = DtsimWithin(120, "exec " + (dir_ / "fm.yaml").string() + common +
                                        " --ranks 2 --iterations 30 -q --out " +
                                        (dir_ / "x").string());
  ASSERT_EQ(e.status, 0) << e.err;
  // A target no run reaches: the curve runs all 30 updates (exit 3).
  const Result t = DtsimWithin(120, "tta " + (dir_ / "fm.yaml").string() + common +
                                        " --lr-scaling none --seeds 1 --steps 30 "
                                        "--target-accuracy 1 -q --out " + (dir_ / "t").string());
  ASSERT_EQ(t.status, 3) << t.err;
  const auto exec = CsvRows(Slurp(dir_ / "x" / "eval.csv"));
  const auto proxy = CsvRows(Slurp(dir_ / "t" / "curves.csv"));
  ASSERT_EQ(exec.size(), 5u);  // header, updates 0, 10, 20, 30
  ASSERT_EQ(proxy.size(), exec.size());
  for (std::size_t k = 1; k < exec.size(); ++k) {
    EXPECT_EQ(proxy[k][Column(proxy[0], "update")], exec[k][Column(exec[0], "updates")]);
    const double le = std::stod(exec[k][Column(exec[0], "loss")]);
    EXPECT_NEAR(std::stod(proxy[k][Column(proxy[0], "loss")]), le, 1e-3 * le) << k;
    EXPECT_NEAR(std::stod(proxy[k][Column(proxy[0], "accuracy")]),
                std::stod(exec[k][Column(exec[0], "accuracy")]), 2.0 / 512)
        << k;
  }
}

// --lr-grid keeps, per setting, the rate with the fewest mean updates to the
// target. The tiny proxy reaches 30% of its initial loss at rate 0.05 in
// more than 2 updates (checked below); at 0.001 every step is 50 times
// shorter, so 60 updates go about as far as 1.2 at 0.05: it cannot get
// there, and 0.05 must be chosen. Bad option combinations exit 2.
TEST_F(Cli, TtaLrGridKeepsTheFastestRateAndRefusesBadOptions) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "tiny.yaml")
      << "name: tiny-cnn\ninput: [3, 8, 8]\nlayers:\n"
         "  - {name: conv1, type: conv2d, out_channels: 8, kernel: 3, padding: 1}\n"
         "  - {name: relu1, type: relu}\n  - {name: flat, type: flatten}\n"
         "  - {name: fc, type: dense, out_features: 10}\n"
         "  - {name: loss, type: softmax_xent}\n";
  std::ofstream(dir_ / "s.yaml")
      << "name: t\ncluster: {nodes: 1, devices_per_node: 2, device: V100-SXM2-32GB, "
         "intra_node_link: nvlink2}\nworkload: {model: {file: tiny.yaml}, batch_per_device: 4}\n"
         "parallelism: {strategy: data}\n";
  const std::string base = "tta " + (dir_ / "s.yaml").string() +
                           " --steps 60 --eval-every 1 --eval-samples 32 --seeds 2 -j 2 ";
  const Result r = Dtsim(base + "--lr-grid 0.05,0.001 --target 0.3 --out " + (dir_ / "a").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("tuned per setting over the grid 0.001,0.05"), std::string::npos) << r.out;
  const auto tta = CsvRows(Slurp(dir_ / "a" / "tta.csv"));
  ASSERT_EQ(tta.size(), 2u);
  EXPECT_EQ(tta[1][Column(tta[0], "lr")], "0.05");
  EXPECT_GT(std::stod(tta[1][Column(tta[0], "updates_to_target")]), 2.0);
  // Both rates' curves are kept.
  const std::string curves = Slurp(dir_ / "a" / "curves.csv");
  EXPECT_NE(curves.find("synchronous,2,1,0.001,"), std::string::npos);
  EXPECT_NE(curves.find("synchronous,2,1,0.05,"), std::string::npos);

  for (const char* bad :
       {"--target 0.3 --target-loss 1", "--target-loss 1 --target-accuracy 0.5",
        "--target-accuracy 1.5", "--target 0", "--lr-grid 0.1,0.2 --lr 0.1",
        "--lr-grid 0.1 --lr-scaling none", "--lr-grid 0.1,-1", "--optimizer rmsprop",
        "--momentum 1", "--lr-decay-rate 0.5", "--lr-decay-steps 100"}) {
    const Result b = Dtsim(base + bad + " --out " + (dir_ / "b").string());
    EXPECT_EQ(b.status, 2) << bad << ": " << b.err;
    EXPECT_FALSE(b.err.empty()) << bad;
  }
}

}  // namespace

namespace {

// dtsim profile writes a table of the scenario's ops; a scenario naming it
// prices every op and the optimizer from it, and says so in its report.
TEST_F(Cli, ProfileThenPriceFromTheTable) {
  fs::create_directories(dir_);
  const fs::path table = dir_ / "cifar10.json";
  Result r = Dtsim("profile scenarios/local/cifar10-1cpu.yaml --steps 1 --warmup 0 --quiet --out " +
                   table.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + table.string()), std::string::npos) << r.out;
  const auto t = nlohmann::json::parse(Slurp(table));
  EXPECT_EQ(t.at("format"), "dtsim-op-costs");
  EXPECT_EQ(t.at("precision"), "fp32");
  EXPECT_FALSE(t.at("ops").empty());

  std::string scenario = Slurp("scenarios/local/cifar10-1cpu.yaml");
  scenario += "\n";
  const std::size_t at = scenario.find("workload:\n");
  ASSERT_NE(at, std::string::npos);
  scenario.insert(at + 10, "  cost_model: measured\n  cost_table: cifar10.json\n");
  std::ofstream(dir_ / "measured.yaml") << scenario;
  r = Dtsim("run " + (dir_ / "measured.yaml").string() + " --no-trace --out " +
            (dir_ / "out").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("measured 100.0%, interpolated 0.0%, modelled 0.0%"), std::string::npos)
      << r.out;
  const auto report = nlohmann::json::parse(Slurp(dir_ / "out" / "report.json"));
  EXPECT_DOUBLE_EQ(report.at("cost_sources").at("measured_share").get<double>(), 1.0);
  EXPECT_TRUE(report.at("cost_sources").at("modelled_ops").empty());
  EXPECT_NE(report.at("cost_model").get<std::string>().find("measured"), std::string::npos);

  // A torch.profiler trace of the same CNN (config/testdata/torch, from
  // Debian's torch 1.13) prices it too: every op and the optimizer measured.
  const std::string trace = fs::absolute("config/testdata/torch/cifar10-cnn_b32.trace.json.gz");
  r = Dtsim("profile scenarios/local/cifar10-1cpu.yaml --torch-trace " + trace + " --out " +
            (dir_ / "from-trace.json").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("0 not (priced by the model)"), std::string::npos) << r.out;
  std::string traced = scenario;
  traced.replace(traced.find("cifar10.json"), 12, trace);
  std::ofstream(dir_ / "traced.yaml") << traced;
  r = Dtsim("run " + (dir_ / "traced.yaml").string() + " --no-trace --out " +
            (dir_ / "traced").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("measured 100.0%"), std::string::npos) << r.out;

  // User mistakes exit 2 with a location.
  r = Dtsim("profile scenarios/default.yaml --quiet --out " + (dir_ / "x.json").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("fp16"), std::string::npos) << r.err;
  std::ofstream(dir_ / "broken.json") << "{\"format\": \"dtsim-op-costs\", \"version\": 1}";
  scenario.replace(scenario.find("cifar10.json"), 12, "broken.json");
  std::ofstream(dir_ / "broken.yaml") << scenario;
  r = Dtsim("run " + (dir_ / "broken.yaml").string() + " --quiet --no-trace");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;
}

// A round-robin variable placement moves the same bytes per server in the
// simulation and in the real run: cifar10-cnn's variables dealt over 2
// servers (plan/ps_placement.h). The prediction's bytes per step of a
// server are 2 workers x (push + pull) x its elements x 4 B; exec's servers
// count every push received and pull sent, each with a 1-float version
// header, over the run's iterations x 2 workers.
TEST_F(Cli, ExecMovesThePredictedBytesPerServer) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "rr.yaml")
      << "name: ps-rr\n"
         "cluster: {nodes: 1, devices_per_node: 2, device: cpu-host, intra_node_link: pcie3-x16}\n"
         "workload: {model: cifar10-cnn, batch_per_device: 8, precision: fp32, iterations: 2}\n"
         "parallelism:\n  strategy: parameter_server\n"
         "  parameter_server: {servers: 2, placement: colocated, variable_placement: round_robin}\n";
  Result run = Dtsim("run " + (dir_ / "rr.yaml").string() + " -q --out " + (dir_ / "run").string());
  ASSERT_EQ(run.status, 0) << run.err;
  Result exec = DtsimWithin(120, "exec " + (dir_ / "rr.yaml").string() + " -q --out " +
                                     (dir_ / "exec").string());
  ASSERT_EQ(exec.status, 0) << exec.err;
  const auto predicted = nlohmann::json::parse(Slurp(dir_ / "run" / "report.json"))
                             .at("parameter_server");
  const auto exec_json = nlohmann::json::parse(Slurp(dir_ / "exec" / "exec.json"));
  const auto& measured = exec_json.at("parameter_server");
  // exec runs its own iteration count (--iterations, default 20).
  const std::int64_t iterations = exec_json.at("iterations").get<std::int64_t>();
  EXPECT_EQ(predicted.at("variable_placement").get<std::string>(), "round_robin");
  const auto& p = predicted.at("per_server");
  const auto& m = measured.at("per_server");
  ASSERT_EQ(p.size(), 2u);
  ASSERT_EQ(m.size(), 2u);
  std::int64_t total = 0;
  for (std::size_t s = 0; s < 2; ++s) {
    const std::int64_t params = p[s].at("params").get<std::int64_t>();
    total += params;
    EXPECT_EQ(m[s].at("params").get<std::int64_t>(), params) << "server " << s;
    EXPECT_DOUBLE_EQ(p[s].at("bytes_per_step").get<double>(), 2.0 * 2 * params * 4);
    const std::int64_t messages = iterations * 2;  // per worker and iteration
    EXPECT_EQ(m[s].at("push_bytes").get<std::int64_t>(), messages * (params + 1) * 4);
    EXPECT_EQ(m[s].at("pull_bytes").get<std::int64_t>(), messages * (params + 1) * 4);
  }
  // Round-robin is uneven here: variable 0 (conv1.weight) and every other
  // weight on server 0, the biases on server 1.
  EXPECT_GT(p[0].at("params").get<std::int64_t>(), 100 * p[1].at("params").get<std::int64_t>());
  EXPECT_EQ(total, nlohmann::json::parse(Slurp(dir_ / "run" / "report.json"))
                       .at("model_totals").at("params").get<std::int64_t>());
}

}  // namespace

// A generation without kernel data says so: `devices` marks K80 (Kepler)
// unvalidated and V100 (DeepBench's V100 sheet) checked on kernel times, and
// a run on K80 carries the same in report.json and its step log
// (sim/cost/kernel_evidence.h).
TEST_F(Cli, KernelModelEvidencePerGeneration) {
  Result r = Dtsim("devices");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto line_of = [&](const std::string& name) {
    const auto at = r.out.find("  " + name + " ");
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  EXPECT_NE(line_of("K80").find("kepler, 13 SMs, L2 1.5 MiB, unvalidated"), std::string::npos)
      << line_of("K80");
  EXPECT_NE(line_of("V100-SXM2-16GB").find("kernel times"), std::string::npos);
  EXPECT_NE(line_of("A100-SXM4-80GB").find("end to end only"), std::string::npos);
  fs::create_directories(dir_);
  std::ofstream(dir_ / "k80.yaml") << "cluster: {devices_per_node: 2, device: K80}\n"
                                      "workload: {model: resnet50, batch_per_device: 16}\n";
  r = Dtsim("run " + (dir_ / "k80.yaml").string() + " --no-trace --json - --out " +
            (dir_ / "k").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report.at("kernel_model_evidence").at("generation"), "kepler");
  EXPECT_EQ(report.at("kernel_model_evidence").at("level"), "unvalidated");
  EXPECT_NE(r.err.find("kernel model on kepler (K80): unvalidated"), std::string::npos) << r.err;
}

// `exec --dataset FOLDER` trains on an IDX set: Debian's Fashion-MNIST
// (dataset-fashion-mnist) through the MLP, whose flat 784 input takes the
// 28 x 28 images as vectors. The loss starts near ln 10 = 2.30 (10 classes,
// a random initialisation) and falls on real data.
TEST_F(Cli, ExecTrainsOnAnIdxFolder) {
  const fs::path data = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(data / "train-images-idx3-ubyte.gz")) GTEST_SKIP() << "no " << data;
  fs::create_directories(dir_);
  std::ofstream(dir_ / "fmnist.yaml")
      << "name: fmnist\ncluster: {nodes: 1, devices_per_node: 1, device: cpu-host}\n"
         "workload: {model: mnist-mlp, batch_per_device: 64}\n";
  Result r = Dtsim("exec " + (dir_ / "fmnist.yaml").string() + " --dataset " + data.string() +
                   " --iterations 40 -q --out " + (dir_ / "x").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(Slurp(dir_ / "x" / "exec.json"));
  const auto& loss = j.at("loss");
  ASSERT_EQ(loss.size(), 40u);
  EXPECT_NEAR(loss.front().get<double>(), 2.3, 0.5);
  EXPECT_LT(loss.back().get<double>(), 0.8 * loss.front().get<double>());
  // A folder without the files is refused at the folder.
  r = Dtsim("exec " + (dir_ / "fmnist.yaml").string() + " --dataset " + dir_.string() +
            " --iterations 1 -q --out " + (dir_ / "y").string());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("train-images-idx3-ubyte"), std::string::npos) << r.err;
}

// scripts/tta_check.py --quick: real exec runs of synchronous data
// parallelism and local SGD (H = 8) to 85% held-out accuracy on
// Fashion-MNIST against dtsim tta's prediction (docs/tta.md). The proxy
// trains as exec does (same data order, initialisation, optimizer and
// schedule), so its updates to the target must match the real runs' up to
// float rounding of the all-reduce's sums and the 20-update evaluation grid:
// within 10%.
TEST_F(Cli, TtaCheckScriptPredictsTheRealRunsUpdates) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "no Fashion-MNIST";
  fs::create_directories(dir_);
  const std::string cmd = "timeout 600 python3 scripts/tta_check.py --quick --networks none --out " +
                          (dir_ / "tta").string() + " --dtsim " + DTSIM_BIN + " >" +
                          (dir_ / "log").string() + " 2>&1";
  const int raw = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << Slurp(dir_ / "log");
  const std::string csv = Slurp(dir_ / "tta" / "comparison.csv");
  std::istringstream lines(csv);
  std::string header, line;
  std::getline(lines, header);
  std::vector<std::string> cols;
  for (std::istringstream h(header); std::getline(h, line, ',');) cols.push_back(line);
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin());
  };
  int settings = 0;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    for (std::istringstream l(line); std::getline(l, header, ',');) f.push_back(header);
    ASSERT_GT(f.size(), col("updates_error")) << line;
    ++settings;
    EXPECT_LT(std::abs(std::stod(f[col("updates_error")])), 0.10) << line;
    EXPECT_GT(std::stod(f[col("predicted_seconds")]), 0.0) << line;
  }
  EXPECT_EQ(settings, 2) << csv;
  EXPECT_NE(Slurp(dir_ / "tta" / "index.html").find("<svg"), std::string::npos);
}

TEST_F(Cli, ExecEvaluatesOnTheTestSplitAndStopsAtItsTarget) {
  const fs::path data = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(data / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "no " << data;
  fs::create_directories(dir_);
  // Local SGD on 2 ranks: evaluations average the replicas.
  std::ofstream(dir_ / "fm.yaml")
      << "name: fm\nseed: 3\ncluster: {nodes: 1, devices_per_node: 2, device: cpu-host}\n"
         "workload: {model: mnist-mlp, batch_per_device: 32}\n"
         "parallelism: {strategy: local_sgd, averaging_period: 4, optimizer: momentum}\n";
  const std::string base = "exec " + (dir_ / "fm.yaml").string() + " --dataset " + data.string() +
                           " --ranks 2 --lr 0.05 --lr-warmup-steps 5 -q --eval-samples 512";
  Result r = Dtsim(base + " --iterations 200 --eval-every 10 --stop-at-accuracy 0.6 --out " +
                   (dir_ / "x").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(Slurp(dir_ / "x" / "exec.json"));
  const auto& points = j.at("eval").at("points");
  ASSERT_GE(points.size(), 2u);
  // Before training: 10 balanced classes, so about chance (0.1), and a loss
  // near log 10 = 2.30.
  EXPECT_EQ(points.front().at("updates").get<int>(), 0);
  EXPECT_NEAR(points.front().at("accuracy").get<double>(), 0.1, 0.08);
  EXPECT_NEAR(points.front().at("loss").get<double>(), 2.3, 0.5);
  // The run stops at the first evaluation at or above 0.6, well before 200
  // iterations (the MLP passes 0.6 within a few hundred samples), and only
  // that one reaches it.
  EXPECT_TRUE(j.at("eval").at("stopped_at_target").get<bool>());
  const auto& last = points.back();
  EXPECT_GE(last.at("accuracy").get<double>(), 0.6);
  for (std::size_t k = 0; k + 1 < points.size(); ++k)
    EXPECT_LT(points[k].at("accuracy").get<double>(), 0.6);
  EXPECT_EQ(j.at("iterations").get<int>(), last.at("updates").get<int>());
  EXPECT_EQ(last.at("samples").get<int>(), last.at("updates").get<int>() * 64);
  EXPECT_GT(last.at("train_seconds").get<double>(), 0.0);
  // eval.csv holds the same points.
  const std::string csv = Slurp(dir_ / "x" / "eval.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(points.size()) + 1);
  // The same seed gives the same curve (evaluation changes no training).
  r = Dtsim(base + " --iterations 200 --eval-every 10 --stop-at-accuracy 0.6 --out " +
            (dir_ / "y").string());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto k = nlohmann::json::parse(Slurp(dir_ / "y" / "exec.json"));
  EXPECT_EQ(k.at("loss"), j.at("loss"));
  for (std::size_t p = 0; p < points.size(); ++p)
    EXPECT_EQ(k.at("eval").at("points")[p].at("accuracy"), points[p].at("accuracy"));
  // Mistakes exit 2: a target without evaluations; a data set without a
  // test split.
  r = Dtsim(base + " --iterations 5 --stop-at-accuracy 0.6 --eval-every 0 --out " +
            (dir_ / "z").string());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--eval-every"), std::string::npos) << r.err;
}
