// End-to-end: the dtsim binary on time to accuracy, op profiles, and exec on real data (IDX folders, held-out evaluation, parameter servers).
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
using dtsim::test::WriteTinyCnn;

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
  WriteTinyCnn(dir_ / "tiny.yaml");
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

// dtsim profile times a Llama-style layer (RMS norm, rotary, GQA, SwiGLU)
// through exec, and the table prices a larger plan of the same model (8
// layers instead of 2, on 4 ranks instead of 2): every op measured, since
// the ops' shapes do not change with depth or data parallelism.
TEST_F(Cli, ProfileALlamaLayerThenPriceALargerPlan) {
  fs::create_directories(dir_);
  const fs::path table = dir_ / "llama.json";
  Result r = Dtsim("profile scenarios/local/tiny-llama-dp-2cpu.yaml --steps 1 --warmup 0 --quiet "
                   "--out " + table.string());
  ASSERT_EQ(r.status, 0) << r.err;
  std::string scenario = Slurp("scenarios/local/tiny-llama-dp-2cpu.yaml");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"layers: 2,", "layers: 8,"}, {"devices_per_node: 2 ", "devices_per_node: 4 "},
           {"workload:\n", "workload:\n  cost_model: measured\n  cost_table: llama.json\n"}}) {
    const std::size_t at = scenario.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    scenario.replace(at, from.size(), to);
  }
  std::ofstream(dir_ / "larger.yaml") << scenario;
  r = Dtsim("run " + (dir_ / "larger.yaml").string() + " --no-trace --out " + (dir_ / "l").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("measured 100.0%, interpolated 0.0%, modelled 0.0%"), std::string::npos)
      << r.out;
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
