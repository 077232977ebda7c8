#include "study/sweep.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/parallel_for.h"
#include "common/yaml_reader.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "study/sweep_unused.h"

namespace dtsim::study {
namespace {

// A sweep larger than this is most likely a mistake (and would not fit in
// memory much beyond).
constexpr std::size_t kMaxPoints = 1'000'000;

// Keys whose value is legitimately a list of scalars, so such a list there is
// the value and not an axis ("[]" stands for any index). Add a key here when
// the scenario format gains one (and say so in docs/scenario.md, "Sweeps").
const std::vector<std::string> kListValuedKeys = {
    "stragglers.slow_devices[].ranks",
    "stragglers.interference.ranks",
    "parallelism.stage_layers",
    "parallelism.stage_replicas",
    "simgrid.config",
    "workload.framework.fused",
    "jobs[].nodes",
    "jobs[].parallelism.stage_layers",
    "jobs[].parallelism.stage_replicas",
    "jobs[].workload.framework.fused",
};

// Keys whose value is a scalar or a mapping: any list there is an axis,
// whose values may be either (`variable_placement: [even,
// {partitioned: {max_shard_bytes: 4MB}}]`).
const std::vector<std::string> kScalarOrMappingKeys = {
    "parallelism.parameter_server.variable_placement",
};

// "a.b[3].c" -> "a.b[].c"
std::string WithoutIndices(const std::string& path) {
  std::string out;
  bool in_index = false;
  for (char c : path) {
    if (c == '[') in_index = true;
    if (c == ']') in_index = false;
    if (!in_index || c == '[') out += c;
  }
  return out;
}

bool IsListValued(const std::string& path) {
  return std::find(kListValuedKeys.begin(), kListValuedKeys.end(), WithoutIndices(path)) !=
         kListValuedKeys.end();
}

bool IsPlainNumber(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  return ec == std::errc() && ptr == end && std::isfinite(v);
}

// An element as the user wrote it: the scalar's text, or a list in flow style.
std::string ElementText(const YAML::Node& element) {
  if (element.IsScalar()) return element.Scalar();
  YAML::Emitter e;
  e.SetSeqFormat(YAML::Flow);
  e.SetMapFormat(YAML::Flow);
  e << element;
  return e.c_str();
}

bool AllElements(const YAML::Node& list, bool (YAML::Node::*is)() const) {
  if (list.size() == 0) return false;
  for (const YAML::Node& e : list) {
    if (!(e.*is)()) return false;
  }
  return true;
}

void AddAxis(const YAML::Node& list, const std::string& path, const std::vector<YamlStep>& steps,
             const std::string& filename, std::vector<SweepAxis>* axes,
             std::vector<YAML::Node>* axis_nodes) {
  // A list reached twice through an alias (`b: *a`) is one node: choosing
  // an element for one place would write through to the other and leave the
  // second axis pointing into a scalar (found by fuzzing).
  for (const YAML::Node& seen : *axis_nodes) {
    if (seen.is(list)) {
      const YAML::Mark mark = list.Mark();
      throw UserError(SourceLocation{filename, mark.line + 1, mark.column + 1},
                      path + ": a list used again through an alias (*name) cannot be an axis "
                             "of a sweep",
                      "write the list out at each place it is used, or sweep it once");
    }
  }
  axis_nodes->push_back(list);
  SweepAxis axis;
  axis.path = path;
  axis.location = steps;
  axis.numeric = true;
  for (const YAML::Node& e : list) {
    axis.values.push_back(ElementText(e));
    axis.numeric = axis.numeric && e.IsScalar() && IsPlainNumber(axis.values.back());
  }
  axes->push_back(std::move(axis));
}

void CollectAxes(const YAML::Node& node, const std::string& path, const std::string& filename,
                 std::vector<YamlStep>* steps, std::vector<SweepAxis>* axes,
                 std::vector<YAML::Node>* axis_nodes) {
  if (node.IsMap()) {
    std::map<std::string, int> first_line;  // key -> line it was first given at
    for (const auto& kv : node) {
      // Keys that are not strings are the loader's to report.
      if (!kv.first.IsScalar()) continue;
      const std::string key = kv.first.Scalar();
      // A repeated key would make the axis's steps from the root ambiguous
      // (node[key] finds the first): refused here as the loader refuses it,
      // before any point is expanded (found by fuzzing).
      const YAML::Mark mark = kv.first.Mark();
      const auto [seen, added] = first_line.emplace(key, mark.line + 1);
      if (!added) {
        const std::string full = path.empty() ? key : path + "." + key;
        throw UserError(SourceLocation{filename, mark.line + 1, mark.column + 1},
                        "duplicate key '" + full + "' (first given at line " +
                            std::to_string(seen->second) + ")");
      }
      steps->push_back(key);
      CollectAxes(kv.second, path.empty() ? key : path + "." + key, filename, steps, axes,
                  axis_nodes);
      steps->pop_back();
    }
    return;
  }
  if (!node.IsSequence()) return;
  if (IsListValued(path)) {
    // The value is a list; a list of lists sweeps it.
    if (AllElements(node, &YAML::Node::IsSequence))
      AddAxis(node, path, *steps, filename, axes, axis_nodes);
    return;
  }
  if (AllElements(node, &YAML::Node::IsScalar) ||
      std::find(kScalarOrMappingKeys.begin(), kScalarOrMappingKeys.end(), path) !=
          kScalarOrMappingKeys.end()) {
    AddAxis(node, path, *steps, filename, axes, axis_nodes);
    return;
  }
  // A list of mappings (cluster.devices, ...): its elements may hold axes.
  for (std::size_t i = 0; i < node.size(); ++i) {
    steps->push_back(i);
    CollectAxes(node[i], path + "[" + std::to_string(i) + "]", filename, steps, axes, axis_nodes);
    steps->pop_back();
  }
}

YAML::Node Child(YAML::Node node, const YamlStep& step) {
  if (const auto* key = std::get_if<std::string>(&step)) return node[*key];
  return node[std::get<std::size_t>(step)];
}

// In `root` (a document of its own), replaces the list at `location` by its
// element `index`: the node itself, so that it keeps its position.
void ChooseElement(YAML::Node root, const std::vector<YamlStep>& location, std::size_t index) {
  DTSIM_CHECK(!location.empty(), "an axis is never the document itself");
  YAML::Node parent = root;
  // Node::operator= would assign through the handle; reset() rebinds it.
  for (std::size_t i = 0; i + 1 < location.size(); ++i) parent.reset(Child(parent, location[i]));
  const YAML::Node element = Child(parent, location.back())[index];
  if (const auto* key = std::get_if<std::string>(&location.back())) {
    parent[*key] = element;
  } else {
    parent[std::get<std::size_t>(location.back())] = element;
  }
}

// The document of the point that picks element choice[a] of each axis: a
// fresh parse, since the replacements edit it in place.
YAML::Node PointDocument(const std::string& yaml_text, const std::string& filename,
                         const std::vector<SweepAxis>& axes,
                         const std::vector<std::size_t>& choice) {
  const YAML::Node doc = ParseYamlDocument(yaml_text, filename);
  for (std::size_t a = 0; a < axes.size(); ++a) ChooseElement(doc, axes[a].location, choice[a]);
  return doc;
}

std::string PointName(const config::Scenario& s, const std::vector<SweepAxis>& axes,
                      const std::vector<std::size_t>& choice) {
  std::string name = s.name;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    name += (a == 0 ? "/" : ",") + axes[a].path + "=" + axes[a].values[choice[a]];
  }
  return name;
}

// Identifies config::BuildWorkloadModel's result: the model reference and
// the precision.
std::string GraphKey(const config::Scenario& s) {
  const config::ModelRef& m = s.workload.model;
  std::ostringstream k;
  if (m.transformer) {
    const models::TransformerConfig& t = *m.transformer;
    k << "transformer " << t.layers << ' ' << t.hidden << ' ' << t.heads << ' ' << t.sequence
      << ' ' << t.vocab << ' ' << t.ffn_hidden << ' ' << t.max_positions << ' '
      << t.tied_embeddings << ' ' << t.causal << ' ' << models::MlpKindName(t.mlp) << ' '
      << models::NormKindName(t.norm) << ' ' << models::PositionKindName(t.positions) << ' '
      << t.kv_heads << ' ' << t.bias << ' ' << t.dropout << ' '
      << models::AttentionKindName(t.attention);
  } else if (!m.file.empty()) {
    k << "file " << m.file;
  } else {
    k << "zoo " << m.zoo_name;
  }
  k << " / " << hw::PrecisionName(s.workload.precision);
  return k.str();
}

// Columns a sweep needs that CsvHeader() may not have (yet): which of
// averaging_period, strategy and sync it lacks, in that order.
const std::vector<std::string>& ExtraColumns() {
  static const std::vector<std::string> extra = [] {
    std::vector<std::string> present;
    std::istringstream header(sim::CsvHeader());
    for (std::string column; std::getline(header, column, ',');) present.push_back(column);
    std::vector<std::string> columns;
    for (const char* c : {"averaging_period", "strategy", "sync"}) {
      if (std::find(present.begin(), present.end(), c) == present.end()) columns.emplace_back(c);
    }
    return columns;
  }();
  return extra;
}

// The columns of sweep.csv after the axis values.
std::string SweepCsvRow(const SweepPoint& point, const sim::Prediction& p) {
  // CsvRow writes the scenario name as it is; the point name has commas.
  config::Scenario named = point.scenario;
  named.name = sim::CsvField(point.name);
  std::string row = sim::CsvRow(named, p);
  const config::ParallelismConfig& par = point.scenario.parallelism;
  for (const std::string& c : ExtraColumns()) {
    row += ',';
    if (c == "averaging_period") row += std::to_string(par.averaging_period);
    if (c == "strategy") row += config::StrategyName(par.strategy);
    if (c == "sync") row += config::SyncModeName(par.sync);
  }
  return row;
}

// The point's value of axis `a` in sweep.csv: empty when its strategy does
// not use the axis (study/sweep_unused.h).
std::string AxisCell(const SweepPoint& point, const std::vector<SweepAxis>& axes, std::size_t a) {
  if (a < point.unused_axes.size() && point.unused_axes[a]) return "";
  return sim::CsvField(axes[a].values[point.choice[a]]);
}

PointResult Summarize(const SweepPoint& point, const std::vector<SweepAxis>& axes,
                      const sim::Prediction& p) {
  PointResult r;
  for (std::size_t a = 0; a < axes.size(); ++a) r.csv_row += AxisCell(point, axes, a) + ',';
  r.csv_row += SweepCsvRow(point, p);
  // With jobs, the prediction's top level is the first job's (sim/jobs.h).
  const config::Scenario& s =
      point.scenario.jobs.empty() ? point.scenario : point.scenario.jobs.front().scenario;
  r.devices = s.cluster.num_devices();
  for (const sim::MemoryBreakdown& m : p.memory.stages)
    r.memory_per_device_bytes = std::max(r.memory_per_device_bytes, m.Total());
  if (!p.does_not_fit.empty()) {
    r.feasible = false;
    r.infeasible = p.does_not_fit;
    return r;
  }
  r.throughput_samples_per_s = p.metrics.throughput_samples_per_s;
  r.step_time_s = p.metrics.step_time_s;
  r.scaling_efficiency = p.scaling.efficiency;
  r.compute_s = p.metrics.breakdown.compute_s;
  r.exposed_comm_s = p.metrics.breakdown.exposed_comm_s;
  r.idle_s = p.metrics.breakdown.idle_s;
  r.mfu = sim::ComputeModelFigures(s, p).mfu;
  r.extrapolated = p.layout.extrapolated_from.first > 0;
  return r;
}

// The row of a point whose plan could not be built: the axis values, the
// point's name, what is known of its scenario (nothing when it did not
// load), fits = false and the reason; every other column empty.
PointResult InfeasibleResult(const SweepPoint& point, const std::vector<SweepAxis>& axes,
                             const std::string& reason) {
  PointResult r;
  r.feasible = false;
  r.infeasible = reason;
  for (std::size_t a = 0; a < axes.size(); ++a) r.csv_row += AxisCell(point, axes, a) + ',';
  std::vector<std::string> columns;
  std::istringstream header(sim::CsvHeader());
  for (std::string column; std::getline(header, column, ',');) columns.push_back(column);
  for (const std::string& c : ExtraColumns()) columns.push_back(c);
  const bool loaded = point.infeasible.empty();
  const config::Scenario& s = point.scenario;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const std::string& c = columns[i];
    std::string v;
    if (c == "scenario") v = sim::CsvField(point.name);
    if (c == "fits") v = "false";
    if (c == "infeasible") v = sim::CsvField(reason);
    if (loaded) {
      if (c == "device") v = sim::CsvField(s.cluster.device);
      if (c == "nodes") v = std::to_string(s.cluster.nodes);
      if (c == "devices_per_node") v = std::to_string(s.cluster.devices_per_node);
      if (c == "devices") v = std::to_string(s.cluster.num_devices());
      if (c == "strategy") v = config::StrategyName(s.parallelism.strategy);
      if (c == "precision") v = hw::PrecisionName(s.workload.precision);
      r.devices = s.cluster.num_devices();
    }
    r.csv_row += (i ? "," : "") + v;
  }
  return r;
}

// The message of an InfeasiblePlan without the "error: " dtsim adds.
std::string InfeasibleMessage(const InfeasiblePlan& e) {
  const std::string where = e.where().ToString();
  return (where.empty() ? "" : where + ": ") + e.message();
}

// Rethrows `error` (of the point `name`) with the point named in front.
[[noreturn]] void RethrowForPoint(const std::exception_ptr& error, const std::string& name) {
  const std::string prefix = "point '" + name + "': ";
  try {
    std::rethrow_exception(error);
  } catch (const UserError& e) {
    throw UserError(e.where(), prefix + e.message(), e.hint());
  } catch (const InternalError& e) {
    throw InternalError(prefix + e.what());
  } catch (const std::exception& e) {
    throw std::runtime_error(prefix + e.what());
  }
}


}  // namespace

std::vector<SweepAxis> FindSweepAxes(const YAML::Node& root, const std::string& filename) {
  std::vector<SweepAxis> axes;
  std::vector<YamlStep> steps;
  // A document that is itself a list is not a scenario; the loader says so.
  std::vector<YAML::Node> axis_nodes;
  if (root.IsMap()) CollectAxes(root, "", filename, &steps, &axes, &axis_nodes);
  return axes;
}

Sweep ParseSweep(const std::string& yaml_text, const std::string& filename, int jobs) {
  Sweep sweep;
  sweep.axes = FindSweepAxes(ParseYamlDocument(yaml_text, filename), filename);
  std::size_t total = 1;
  for (const SweepAxis& axis : sweep.axes) {
    total *= axis.values.size();
    if (total > kMaxPoints) {
      throw UserError(SourceLocation{filename},
                      "the sweep has more than " + std::to_string(kMaxPoints) + " points (" +
                          axis.path + " is the axis that crosses the limit)",
                      "every list where the scenario expects one value is an axis of the sweep; "
                      "shorten the lists or split the sweep into several files");
    }
  }
  // Point 0 first, alone: a mistake every point shares (an unknown key) is
  // reported at once, before memory for up to a million points is taken and
  // every one of them fails (fuzzing found a 150-byte file that took 42 s).
  try {
    std::vector<config::UnusedKey> ignored;
    config::ParseScenarioNode(
        PointDocument(yaml_text, filename, sweep.axes, std::vector<std::size_t>(sweep.axes.size(), 0)),
        filename, &ignored);
  } catch (const InfeasiblePlan&) {
    // Reported as point 0's row below.
  }
  sweep.points.resize(total);
  // The keys each point's strategy does not use (study/sweep_unused.h).
  std::vector<std::vector<config::UnusedKey>> unused(total);
  const auto failure = ParallelFor(total, jobs, {}, 0, [&](std::size_t i) {
    SweepPoint& point = sweep.points[i];
    // Point i's choice: its index in mixed radix, last axis fastest.
    point.choice.resize(sweep.axes.size());
    for (std::size_t a = sweep.axes.size(), rest = i; a-- > 0;) {
      point.choice[a] = rest % sweep.axes[a].values.size();
      rest /= sweep.axes[a].values.size();
    }
    const YAML::Node doc = PointDocument(yaml_text, filename, sweep.axes, point.choice);
    try {
      point.scenario = config::ParseScenarioNode(doc, filename, &unused[i]);
    } catch (const InfeasiblePlan& e) {
      // point.scenario keeps its defaults: the load threw before assigning.
      point.infeasible = InfeasibleMessage(e);
      return;  // named below, after a point that loaded gives the name
    }
    point.name = PointName(point.scenario, sweep.axes, point.choice);
  });
  // The error of the point itself: its position names the value at fault.
  if (failure) std::rethrow_exception(failure->error);
  // The scenario's name and folder: those of the first point that loaded;
  // when none did, a point loaded without its plan checks gives them.
  const auto loaded = std::find_if(sweep.points.begin(), sweep.points.end(),
                                   [](const SweepPoint& p) { return p.infeasible.empty(); });
  config::Scenario named;
  if (loaded != sweep.points.end()) {
    named = loaded->scenario;
  } else {
    named.name = std::filesystem::path(filename).stem().string();
    named.outputs.dir = "results/" + named.name;
  }
  sweep.name = named.name;
  sweep.out_dir = named.outputs.dir;
  for (SweepPoint& point : sweep.points) {
    if (!point.infeasible.empty()) point.name = PointName(named, sweep.axes, point.choice);
  }
  // Keys some points do not use, and the repeated points that makes.
  const bool all_loaded = std::none_of(sweep.points.begin(), sweep.points.end(),
                                       [](const SweepPoint& p) { return !p.infeasible.empty(); });
  ApplyUnusedKeys(unused, all_loaded, &sweep);
  return sweep;
}

Sweep LoadSweep(const std::string& path, int jobs) {
  // LoadScenario reports a missing or unreadable file (with the neighbours'
  // names); a file that has axes fails in it only after it was read.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) config::LoadScenario(path);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw UserError(SourceLocation{path}, "cannot read scenario file '" + path + "'");
  return ParseSweep(text.str(), path, jobs);
}

std::vector<PointResult> RunSweep(const Sweep& sweep, const SweepRunOptions& options) {
  std::vector<PointResult> results(sweep.points.size());
  if (sweep.points.empty()) return results;

  // Model graphs, one per distinct (model, precision); std::map keeps their
  // addresses stable.
  std::map<std::string, models::ModelGraph> graphs;
  std::vector<const models::ModelGraph*> graph_of(sweep.points.size());
  DTSIM_CHECK(options.shards >= 1 && options.shard >= 0 && options.shard < options.shards,
              "RunSweep: shard out of range");
  const auto shards = static_cast<std::size_t>(options.shards);
  const auto shard = static_cast<std::size_t>(options.shard);
  std::vector<bool> mine(sweep.points.size(), options.only.empty());
  for (const std::size_t i : options.only) {
    DTSIM_CHECK(i < sweep.points.size(), "RunSweep: point out of range");
    mine[i] = true;
  }
  for (std::size_t i = 0; i < sweep.points.size(); ++i) mine[i] = mine[i] && i % shards == shard;
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    if (!mine[i] || !sweep.points[i].infeasible.empty()) continue;
    const config::Scenario& s = sweep.points[i].scenario;
    if (!s.jobs.empty()) continue;  // each job builds its own model (sim/jobs.h)
    const std::string key = GraphKey(s);
    auto it = graphs.find(key);
    if (it == graphs.end()) {
      try {
        it = graphs.emplace(key, config::BuildWorkloadModel(s)).first;
      } catch (...) {
        RethrowForPoint(std::current_exception(), sweep.points[i].name);
      }
    }
    graph_of[i] = &it->second;
  }

  const auto failure = ParallelFor(
      sweep.points.size(), options.jobs, options.progress, options.progress_interval_s,
      [&](std::size_t i) {
        if (!mine[i]) return;  // another process's point, or not asked for
        const SweepPoint& point = sweep.points[i];
        if (!point.infeasible.empty()) {
          results[i] = InfeasibleResult(point, sweep.axes, point.infeasible);
          return;
        }
        try {
          const sim::Prediction p =
              sim::Simulate(point.scenario, sim::SimulateOptions{.graph = graph_of[i], .fast = options.fast});
          results[i] = Summarize(point, sweep.axes, p);
        } catch (const InfeasiblePlan& e) {
          results[i] = InfeasibleResult(point, sweep.axes, InfeasibleMessage(e));
        }
      });
  if (failure) RethrowForPoint(failure->error, sweep.points[failure->index].name);
  if (options.progress) {
    options.progress(static_cast<int>(results.size()), static_cast<int>(results.size()));
  }
  return results;
}

std::string SweepCsvHeader(const Sweep& sweep) {
  std::string header;
  for (const SweepAxis& axis : sweep.axes) header += sim::CsvField(axis.path) + ',';
  header += sim::CsvHeader();
  for (const std::string& c : ExtraColumns()) header += "," + c;
  return header;
}

std::string SweepCsv(const Sweep& sweep, const std::vector<PointResult>& results) {
  std::string csv = SweepCsvHeader(sweep) + "\n";
  for (const PointResult& r : results) csv += r.csv_row + "\n";
  return csv;
}

}  // namespace dtsim::study
