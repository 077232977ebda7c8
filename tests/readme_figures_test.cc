// The figures README.md and docs/ quote from `dtsim run` of the shipped
// scenarios, checked against what the simulator gives now: a change that
// moves a number must move the text. Each check finds a table row (or a line
// of the example output) by the scenario it names, reads the figure as
// written, and compares it with the simulated value rounded to the precision
// the text prints (its decimals and unit). README.md holds the example
// output of `dtsim run`; docs/predictions.md the tables and language-model
// examples; docs/tta.md the time-to-accuracy tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "sim/memory.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "study/sweep.h"

namespace dtsim {
namespace {

// A document of the repository (tests run from its root); fails when absent.
std::string Doc(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f) << path << " not found (tests run from the repository root)";
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const char kReadme[] = "README.md";
const char kPredictions[] = "docs/predictions.md";
const char kTta[] = "docs/tta.md";

// The line of `text` that starts with `prefix` (the first); "" if none.
std::string LineStartingWith(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

// A table row's cells (between the '|'), trimmed.
std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(row);
  std::getline(in, cell, '|');  // before the first '|'
  while (std::getline(in, cell, '|')) {
    const auto b = cell.find_first_not_of(' ');
    const auto e = cell.find_last_not_of(' ');
    cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
  }
  if (!cells.empty() && cells.back().empty()) cells.pop_back();
  return cells;
}

// A figure as written: its number (thousands commas allowed), the decimals
// printed and the unit after it ("ms", "s", "us", "%", "GiB" or "").
struct Written {
  double value = 0;
  int decimals = 0;
  std::string unit;
};

// The figure of `text` that `pattern` captures (group 1: the number, group
// 2: the unit, when the pattern has one). Fails the test when absent.
bool Find(const std::string& text, const std::string& pattern, Written* w) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return false;
  std::string number = m[1].str();
  number.erase(std::remove(number.begin(), number.end(), ','), number.end());
  w->value = std::stod(number);
  const auto dot = number.find('.');
  w->decimals = dot == std::string::npos ? 0 : static_cast<int>(number.size() - dot - 1);
  w->unit = m.size() > 2 ? m[2].str() : "";
  return true;
}

// `seconds`, or a share, in the unit the text wrote, rounded as printed.
std::string AsWritten(double value, const Written& w) {
  double v = value;
  if (w.unit == "ms") v *= 1e3;
  if (w.unit == "us") v *= 1e6;
  if (w.unit == "%") v *= 100;
  if (w.unit == "GiB") v /= 1024.0 * 1024 * 1024;
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", w.decimals, v);
  return text;
}

std::string AsWritten(const Written& w) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", w.decimals, w.value);
  return text;
}

// Checks that `pattern` finds a figure in `text` equal to `value` as printed.
void ExpectFigure(const std::string& where, const std::string& text, const std::string& pattern,
                  double value, const std::string& what) {
  Written w;
  ASSERT_TRUE(Find(text, pattern, &w)) << where << ": no " << what << " (/" << pattern
                                       << "/) in: " << text;
  EXPECT_EQ(AsWritten(w), AsWritten(value, w))
      << where << ": " << what << " is written " << AsWritten(w) << " "
      << w.unit << ", the simulator gives " << AsWritten(value, w) << " " << w.unit;
}

sim::Prediction SimulateShipped(const std::string& file) {
  return sim::Simulate(config::LoadScenario("scenarios/" + file));
}

double MaxStageMemory(const sim::Prediction& p) {
  double m = 0;
  for (const sim::MemoryBreakdown& b : p.memory.stages) m = std::max(m, b.Total());
  return m;
}

// A figure of a row: the pattern that finds it in the row's last cell and
// the simulated value it must equal.
using Figure = std::pair<std::string, std::function<double(const sim::Prediction&)>>;
struct Row {
  const char* file;  // a shipped scenario, named in the row's first cell
  std::vector<Figure> figures;
};

double Throughput(const sim::Prediction& p) { return p.metrics.throughput_samples_per_s; }
double StepTime(const sim::Prediction& p) { return p.metrics.step_time_s; }
double IdleShare(const sim::Prediction& p) {
  return p.metrics.breakdown.idle_s / p.metrics.step_time_s;
}

// Checks each row of a table whose first cell is "`FILE`" followed by
// `after_name` and that has `columns` cells, the figures in its last.
void CheckRows(const std::string& doc, const std::vector<Row>& rows,
               const std::string& after_name, std::size_t columns) {
  for (const Row& r : rows) {
    const std::string row = LineStartingWith(doc, std::string("| `") + r.file + "`" + after_name);
    ASSERT_FALSE(row.empty()) << r.file << ": no row";
    const std::vector<std::string> cells = Cells(row);
    ASSERT_EQ(cells.size(), columns) << row;
    const sim::Prediction p = SimulateShipped(r.file);
    for (const auto& [pattern, value] : r.figures)
      ExpectFigure(r.file, cells.back(), pattern, value(p), pattern);
  }
}

// "Shipped scenarios and what dtsim predicts": throughput, step, scaling
// efficiency and exposed communication per step of each row.
TEST(ReadmeFigures, ShippedScenarioTable) {
  const std::string doc = Doc(kPredictions);
  for (const char* file : {"cifar10-1gpu.yaml", "cifar10-4gpu.yaml", "default.yaml",
                           "resnet50-16xV100-25GbE.yaml", "bert-large-64xA100-ib.yaml",
                           "resnet50-256xA100-fattree.yaml"}) {
    const std::string row = LineStartingWith(doc, std::string("| `") + file + "` | ");
    ASSERT_FALSE(row.empty()) << file << ": no row";
    const std::vector<std::string> cells = Cells(row);
    ASSERT_EQ(cells.size(), 6u) << row;
    const sim::Prediction p = SimulateShipped(file);
    const sim::RunMetrics& m = p.metrics;
    ExpectFigure(file, cells[3], R"(^([\d,.]+) samples/s)", m.throughput_samples_per_s,
                 "throughput");
    ExpectFigure(file, cells[3], R"(step ([\d.]+) (ms|s|us)\))", m.step_time_s, "step time");
    ExpectFigure(file, cells[4], R"(^([\d.]+)(%))", p.scaling.efficiency, "scaling efficiency");
    if (cells[5] == "0") {
      EXPECT_EQ(m.breakdown.exposed_comm_s, 0) << file;
    } else {
      ExpectFigure(file, cells[5], R"(^([\d.]+) (ms|s|us)$)", m.breakdown.exposed_comm_s,
                   "exposed communication");
    }
  }
}

// The table of the pipelined and 3D-parallel scenarios ("strategy:
// hybrid"): throughput, step, memory per device and idle share.
TEST(ReadmeFigures, HybridScenarioTable) {
  CheckRows(Doc(kPredictions),
            {{"gpt3-175b-3d-1536xA100.yaml",
              {{R"(^([\d,.]+) samples/s)", Throughput},
               {R"(step ([\d.]+) (s);)", StepTime},
               {R"(; ([\d.]+) (GiB) per GPU on stage 0)",
                [](const sim::Prediction& p) { return p.memory.stages.at(0).Total(); }}}},
             {"failures-gpt3-1024xA100.yaml",
              {{R"(^([\d,.]+) samples/s)", Throughput},
               {R"(; ([\d.]+) (GiB) per GPU)", MaxStageMemory}}},
             {"gpt2-xl-pipeline-8xV100.yaml",
              {{R"(^([\d,.]+) samples/s)", Throughput}, {R"(; ([\d.]+)(%) idle)", IdleShare}}},
             {"model-parallel-in-node.yaml",
              {{R"(^([\d,.]+) samples/s)", Throughput}, {R"(, ([\d.]+)(%) idle)", IdleShare}}}},
            " (", 2);
}

// Seconds iteration `i` of a prediction took.
double StepOf(const sim::Prediction& p, std::size_t i) {
  const std::vector<double>& end = p.metrics.iteration_end_s;
  return end.at(i) - (i > 0 ? end.at(i - 1) : 0.0);
}

// The table of parameter servers and step-time tails: throughput, step,
// global steps, percentiles.
TEST(ReadmeFigures, ServersAndTailsTable) {
  CheckRows(Doc(kPredictions),
            {{"ps-2workers-sync.yaml",
              {{R"(^([\d,.]+) samples/s)", Throughput}, {R"(step ([\d.]+) (ms);)", StepTime}}},
             {"ps-2workers-async.yaml",
              {{R"(^([\d,.]+) samples/s)", Throughput},
               {R"(\(([\d.]+) global steps/s\))",
                [](const sim::Prediction& p) { return p.async->global_steps_per_s; }}}},
             {"ps-backup-workers.yaml", {{R"(^([\d,.]+) samples/s)", Throughput}}},
             {"link-failure-resnet50-16xV100.yaml",
              {{R"(^([\d,.]+) samples/s)", Throughput},
               {R"(against ([\d,.]+) without events)",
                [](const sim::Prediction& p) {
                  return static_cast<double>(p.plan.samples_per_iteration) / StepOf(p, 0);
                }},
               {R"(steps of ([\d.]+) (ms),)", [](const sim::Prediction& p) { return StepOf(p, 0); }},
               {R"(, ([\d.]+) (ms) while node 2)",
                [](const sim::Prediction& p) { return StepOf(p, 4); }},
               {R"(, ([\d.]+) (ms) for the step the outage hits)",
                [](const sim::Prediction& p) { return StepOf(p, 8); }}}},
             {"resnet50-16xV100-step-tail.yaml",
              {{R"(p50 ([\d.]+) (ms))",
                [](const sim::Prediction& p) { return p.metrics.step_times.p50; }},
               {R"(mean ([\d.]+) (ms))", StepTime},
               {R"(: ([\d,.]+) samples/s against)", Throughput}}}},
            " | ", 3);
}

// The time-to-accuracy tables of the shipped tta example: each row's
// simulated samples/s and milliseconds per update (the sweep's points, no
// proxy training), and its time to the target = updates x ms per update
// (the columns agree, to the rounding of the printed updates).
TEST(ReadmeFigures, TimeToAccuracyTables) {
  const std::string doc = Doc(kTta);
  const study::Sweep sweep = study::LoadSweep("scenarios/sweep-tta-cifar10-local-sgd.yaml");
  const std::vector<study::PointResult> results = study::RunSweep(sweep);
  std::size_t link_axis = sweep.axes.size(), period_axis = sweep.axes.size();
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    if (sweep.axes[a].path == "cluster.network.link") link_axis = a;
    if (sweep.axes[a].path == "parallelism.averaging_period") period_axis = a;
  }
  ASSERT_LT(link_axis, sweep.axes.size());
  ASSERT_LT(period_axis, sweep.axes.size());
  int rows = 0;
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    const study::SweepPoint& point = sweep.points[i];
    const std::string link = sweep.axes[link_axis].values[point.choice[link_axis]];
    const std::string h = sweep.axes[period_axis].values[point.choice[period_axis]];
    const std::string prefix = "| " + link + " | " + h + " | ";
    std::istringstream in(doc);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(prefix, 0) != 0) continue;
      const std::vector<std::string> cells = Cells(line);
      ASSERT_EQ(cells.size(), 6u) << line;
      const std::string where = "time to accuracy, " + link + " H = " + h;
      ExpectFigure(where, cells[2], R"(^([\d,.]+)$)", results[i].throughput_samples_per_s,
                   "samples/s");
      Written ms;
      ASSERT_TRUE(Find(cells[3], R"(^([\d.]+)$)", &ms)) << line;
      EXPECT_EQ(AsWritten(ms), AsWritten(1e3 * results[i].step_time_s, ms)) << where;
      Written updates, time;
      if (Find(cells[4], R"(^([\d,.]+) \()", &updates) &&
          Find(cells[5], R"(^([\d,.]+) ms)", &time)) {
        // Updates printed to 0.05: the time may differ by that x ms/update.
        EXPECT_NEAR(time.value, updates.value * ms.value, 0.5 + 0.05 * ms.value + 0.01 * time.value)
            << where;
      }
      ++rows;
    }
  }
  EXPECT_EQ(rows, 24);  // 12 settings, in the two tables (linear scaling and none)
}

// The example output of `dtsim run scenarios/cifar10-4gpu.yaml` in the
// README's "Using it": its throughput and single-device lines as printed.
TEST(ReadmeFigures, RunExampleOutput) {
  const std::string doc = Doc(kReadme);
  const config::Scenario s = config::LoadScenario("scenarios/cifar10-4gpu.yaml");
  const std::string log = sim::StepLog(s, sim::Simulate(s));
  for (const char* prefix : {"throughput: ", "single device: "}) {
    const std::string written = LineStartingWith(doc, prefix);
    ASSERT_FALSE(written.empty()) << prefix;
    EXPECT_EQ(written, LineStartingWith(log, prefix)) << kReadme << "'s example output";
  }
  const std::string first = LineStartingWith(log, "cifar10-4gpu: ");
  EXPECT_NE(doc.find(first), std::string::npos) << first;
}

// docs/predictions.md's "Jobs sharing a fabric": each job's step-log line as printed.
TEST(ReadmeFigures, JobsSharingAFabric) {
  const std::string doc = Doc(kPredictions);
  const config::Scenario s = config::LoadScenario("scenarios/two-jobs-shared-fabric.yaml");
  const sim::Prediction p = sim::Simulate(s);
  ASSERT_EQ(p.jobs.size(), 2u);
  const std::string log = sim::StepLog(s, p);
  for (const char* prefix : {"job resnet50 ", "job bert-large "}) {
    const std::string line = LineStartingWith(log, prefix);
    ASSERT_FALSE(line.empty()) << "the step log has no line " << prefix;
    EXPECT_NE(doc.find("\n" + line + "\n"), std::string::npos)
        << kPredictions << " lacks the line\n" << line;
  }
}

// docs/predictions.md's "Language models": the step-log lines of the Llama 2 7B, FP8 GPT-3 and
// Mixtral 8x7B and DeepSeekMoE 16B examples as printed, the eager-attention comparison and
// FP8's speed-up.
TEST(ReadmeFigures, LanguageModelExamples) {
  const std::string doc = Doc(kPredictions);
  const std::pair<const char*, std::vector<const char*>> examples[] = {
      {"llama2-7b-8xH100",
       {"llama2-7b-8xH100: ", "memory per device: ", "throughput: ", "tokens: ",
        "model FLOPs: "}},
      {"gpt3-175b-fp8-h100",
       {"gpt3-175b-fp8-h100: ", "throughput: ", "model FLOPs: ", "  MFU against the FP8 peak",
        "  compute by kernel (fp8)"}},
      {"llama2-7b-128k-cp8-8xH100",
       {"llama2-7b-128k-cp8-8xH100: ", "memory per device: ", "throughput: ", "tokens: ",
        "  context parallel "}},
      {"mixtral-8x7b-64xH100-ep8",
       {"mixtral-8x7b-64xH100-ep8: ", "memory stage 0: ", "throughput: ", "tokens: ",
        "model FLOPs: ", "  of which expert all-to-alls"}},
      {"deepseek-moe-16b-32xH100-ep8",
       {"deepseek-moe-16b-32xH100-ep8: ", "memory per device: ", "throughput: ", "tokens: ",
        "model FLOPs: ", "  of which expert all-to-alls"}}};
  for (const auto& [name, prefixes] : examples) {
    const config::Scenario s = config::LoadScenario("scenarios/" + std::string(name) + ".yaml");
    const std::string log = sim::StepLog(s, sim::Simulate(s));
    for (const char* prefix : prefixes) {
      const std::string line = LineStartingWith(log, prefix);
      ASSERT_FALSE(line.empty()) << name << ": the step log has no line " << prefix;
      EXPECT_NE(doc.find("\n" + line + "\n"), std::string::npos)
          << name << ": " << kPredictions << " lacks the line\n" << line;
    }
  }
  // Eager attention through the transformer keys: memory per GPU and the
  // step time against flash.
  std::ifstream in("scenarios/llama2-7b-8xH100.yaml", std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  const std::string zoo = "  model: llama2-7b\n";
  ASSERT_NE(text.find(zoo), std::string::npos);
  text.replace(text.find(zoo), zoo.size(),
               "  model:\n    transformer: {layers: 32, hidden: 4096, heads: 32, ffn_hidden: "
               "11008, vocab: 32000, sequence: 4096, mlp: swiglu, norm: rmsnorm, positions: "
               "rotary, bias: false, dropout: false, tied_embeddings: false, attention: eager}\n");
  const sim::Prediction eager = sim::Simulate(config::ParseScenario(text, "eager.yaml"));
  const sim::Prediction flash =
      sim::Simulate(config::LoadScenario("scenarios/llama2-7b-8xH100.yaml"));
  ExpectFigure("eager attention", doc, R"(come back: ([\d.]+) (GiB) per GPU)",
               eager.memory.stages.at(0).Total(), "eager memory per GPU");
  ExpectFigure("eager attention", doc, R"(per GPU and\s+([\d.]+)(x) the step time)",
               eager.metrics.step_time_s / flash.metrics.step_time_s, "eager step time ratio");
  // Context parallelism 1 instead of 8: memory per GPU.
  config::Scenario cp1 = config::LoadScenario("scenarios/llama2-7b-128k-cp8-8xH100.yaml");
  cp1.parallelism.hybrid.context_parallel = 1;
  ExpectFigure("context parallelism 1", doc, R"(needs ([\d.]+) (GiB) per GPU and does not fit)",
               sim::Simulate(cp1).memory.stages.at(0).Total(), "memory per GPU without CP");
  // FP8 against the same plan in bf16.
  config::Scenario bf16 = config::LoadScenario("scenarios/gpt3-175b-fp8-h100.yaml");
  const sim::Prediction fp8 = sim::Simulate(bf16);
  bf16.workload.precision = hw::Precision::kBf16;
  ExpectFigure("fp8", doc, R"(is ([\d.]+)(x) faster than the same plan in bf16)",
               sim::Simulate(bf16).metrics.step_time_s / fp8.metrics.step_time_s,
               "fp8 speed-up");
}

}  // namespace
}  // namespace dtsim
