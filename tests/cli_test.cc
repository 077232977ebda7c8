// End-to-end: the dtsim binary on the shipped scenarios and on bad input: run, sweep, search, plan, model, calibrate, validate.
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
#include "tests/cli_fixture.h"
#include "tests/dtsim_runner.h"

namespace {
namespace fs = std::filesystem;

using dtsim::test::Cli;
using dtsim::test::Dtsim;
using dtsim::test::DtsimWithin;
using dtsim::test::Result;
using dtsim::test::Slurp;


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
  // Every op kind with FLOPs and kernels: the 26 kinds of models/op.h but
  // input, concat and reshape, and recurrent (priced by its GEMMs).
  EXPECT_EQ(p.compute_efficiency.size(), 22u);
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

}  // namespace
