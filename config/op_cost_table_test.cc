// Op-cost tables: signatures, exact round trips and strict errors.
#include "config/op_cost_table.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "common/error.h"
#include "config/loader_test_util.h"
#include "models/graph_builder.h"

namespace dtsim::config {
namespace {

using models::OpKind;
namespace fs = std::filesystem;

OpCostTable Sample() {
  OpCostTable t;
  t.source = "dtsim profile";
  t.device = "cpu (Test \"Quoted\" CPU)";
  t.backend = "cpu-avx2";
  t.threads = 2;
  t.concurrent = 3;
  t.precision = "fp32";
  t.host = "h";
  t.date = "2026-11-28T00:00:00Z";
  t.dtsim_version = "0.1.0";
  t.libraries = {{"eigen", "3.4.0"}};
  t.scenario = "scenarios/x.yaml";
  OpCostEntry e;
  e.signature = "conv2d in=3x24x24 out=64x24x24 params=4864 k=5x5 s=1x1 p=2x2 g=1 bias=1";
  e.kind = OpKind::kConv2d;
  e.batch = 32;
  e.name = "conv1";
  e.backward_input = false;
  e.forward_flops = 1.0 / 3.0 * 1e9;  // not a short decimal: the round trip must be exact
  e.backward_flops = 2e9;
  e.forward_bytes = 1e6;
  e.backward_bytes = 3e6;
  e.forward = OpTiming{1.0 / 7.0 * 1e-3, 1e-4, 2e-4, 15};
  e.backward = TimingOf({3e-4, 1e-4, 2e-4});
  t.entries.push_back(e);
  e.batch = 16;
  e.backward.reset();
  t.entries.push_back(e);
  t.optimizer = OptimizerCost{"momentum", 1068298, OpTiming{1e-3, 9e-4, 2e-3, 5}};
  t.communication = {{"gloo:all_reduce", 4.2e6, OpTiming{5e-3, 5e-3, 5e-3, 1}}};
  return t;
}

TEST(OpCostTable, TimingOfIsTheMedianAndRange) {
  // Median of an even count is the mean of the two middle values.
  const OpTiming t = TimingOf({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(t.median_s, 2.5);
  EXPECT_DOUBLE_EQ(t.min_s, 1);
  EXPECT_DOUBLE_EQ(t.max_s, 4);
  EXPECT_EQ(t.runs, 4);
  EXPECT_DOUBLE_EQ(TimingOf({3, 1, 2}).median_s, 2);
  // Pricing uses the mean: (4 + 1 + 3 + 2) / 4 = 2.5; without one, the median.
  EXPECT_DOUBLE_EQ(TimingOf({4, 1, 3, 2}).Expected(), 2.5);
  EXPECT_DOUBLE_EQ(TimingOf({1, 1, 7}).Expected(), 3);
  EXPECT_DOUBLE_EQ((OpTiming{2, 1, 7, 3}).Expected(), 2);
}

TEST(OpCostTable, RoundTripIsExact) {
  const OpCostTable a = Sample();
  const std::string text = OpCostTableJson(a);
  const OpCostTable b = ParseOpCostTable(text, "t.json");
  // Writing what was read gives the same bytes: every field survived.
  EXPECT_EQ(OpCostTableJson(b), text);
  ASSERT_EQ(b.entries.size(), 2u);
  EXPECT_EQ(b.entries[0].forward_flops, a.entries[0].forward_flops);
  EXPECT_EQ(b.entries[0].forward->median_s, a.entries[0].forward->median_s);
  EXPECT_FALSE(b.entries[0].backward_input);
  EXPECT_FALSE(b.entries[1].backward.has_value());
  EXPECT_EQ(b.optimizer->params, 1068298);
  EXPECT_EQ(b.communication.at(0).name, "gloo:all_reduce");
  EXPECT_EQ(b.libraries.at("eigen"), "3.4.0");
}

TEST(OpCostTable, RandomTimingsRoundTrip) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(1e-9, 10);
  for (int i = 0; i < 100; ++i) {
    OpCostTable t = Sample();
    t.entries[0].forward = TimingOf({u(rng), u(rng), u(rng)});
    t.entries[1].forward_bytes = u(rng) * 1e9;
    const OpCostTable b = ParseOpCostTable(OpCostTableJson(t), "t.json");
    EXPECT_EQ(b.entries[0].forward->median_s, t.entries[0].forward->median_s);
    EXPECT_EQ(b.entries[1].forward_bytes, t.entries[1].forward_bytes);
  }
}

// The message of the UserError `text` raises, or "" when it parses.
std::string ErrorOf(const std::string& text) {
  try {
    ParseOpCostTable(text, "bad.json");
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().file, "bad.json");
    return e.message();
  }
  return "";
}

TEST(OpCostTable, ErrorsNameThePlace) {
  std::string good = OpCostTableJson(Sample());
  EXPECT_NE(ErrorOf("{"), "");
  EXPECT_NE(ErrorOf("{\"traceEvents\": []}").find("Chrome trace"), std::string::npos);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const std::size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  EXPECT_NE(ErrorOf(replaced("\"version\": 1", "\"version\": 2")).find("version"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replaced("\"kind\": \"conv2d\"", "\"kind\": \"conv3d\"")).find("ops[0].kind"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replaced("\"batch\": 32", "\"batch\": 0")).find("ops[0].batch"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replaced("\"batch\": 16", "\"batch\": 32")).find("second entry"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replaced("\"runs\": 15", "\"runs\": 15, \"sum_s\": 1")).find("unknown key"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replaced("\"min_s\": 0.0001", "\"min_s\": 0.5")).find("ops[0].forward"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replaced("\"precision\": \"fp32\",", "")).find("precision"),
            std::string::npos);
}

TEST(OpCostTable, SignatureSeparatesWhatChangesTheKernels) {
  models::GraphBuilder g("m");
  const models::Tensor x = g.Input("x", {64, 56, 56});
  const models::Tensor a = g.Conv2d("a", x, models::ConvSpec::Square(64, 3, 1, 1));
  const models::Tensor b = g.Conv2d("b", a, models::ConvSpec::Square(64, 3, 1, 1));
  const models::Tensor c = g.Conv2d("c", b, models::ConvSpec::Square(64, 3, 2, 1));
  const models::ModelGraph& m = g.graph();
  // Same shapes and window: one signature, whatever the name.
  EXPECT_EQ(OpSignature(m.op(a.op)), OpSignature(m.op(b.op)));
  EXPECT_NE(OpSignature(m.op(b.op)), OpSignature(m.op(c.op)));
  // ConvSpec::Square has a bias: 64 x 64 x 3 x 3 weights + 64 biases = 36,928.
  EXPECT_EQ(OpSignature(m.op(a.op)),
            "conv2d in=64x56x56 out=64x56x56 params=36928 k=3x3 s=1x1 p=1x1 g=1 bias=1");
}

}  // namespace
}  // namespace dtsim::config

namespace dtsim::config {
namespace {

// workload.cost_model: measured and cost_table: both or neither, the file
// must exist and be measured at the workload's precision.
TEST(OpCostTable, ScenarioKeys) {
  EXPECT_TRUE(FailsAt("workload:\n  cost_model: measured\n", 2, "needs workload.cost_table"));
  EXPECT_TRUE(FailsAt("workload:\n  cost_table: t.json\n", 2,
                      "cost_table applies to cost_model: measured"));
  EXPECT_TRUE(FailsAt("workload:\n  cost_model: measured\n  cost_table: /nonexistent/t.json\n", 3,
                      "not found"));
  const fs::path dir = fs::temp_directory_path() / ("dtsim_cost_table_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path table = dir / "t.json";
  {
    std::ofstream f(table);
    f << OpCostTableJson(Sample());  // fp32
  }
  const std::string yaml = "workload:\n  cost_model: measured\n  cost_table: " + table.string() + "\n";
  const Scenario s = ParseScenario(yaml, "test.yaml");
  EXPECT_EQ(s.workload.cost_model, CostModelKind::kMeasured);
  ASSERT_NE(s.workload.cost_table_data, nullptr);
  EXPECT_EQ(s.workload.cost_table_data->entries.size(), 2u);
  EXPECT_TRUE(FailsAt(yaml + "  precision: bf16\n", 3, "measured in fp32"));
  // A Chrome trace is kept as its path, for import against the model.
  {
    std::ofstream f(dir / "trace.json");
    f << "{\"traceEvents\": []}";
  }
  const Scenario traced = ParseScenario(
      "workload:\n  cost_model: measured\n  cost_table: " + (dir / "trace.json").string() + "\n",
      "test.yaml");
  EXPECT_EQ(traced.workload.cost_table_data, nullptr);
  EXPECT_EQ(traced.workload.cost_table, (dir / "trace.json").string());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dtsim::config
