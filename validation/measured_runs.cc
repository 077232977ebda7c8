#include "validation/measured_runs.h"

#include <filesystem>
#include <map>
#include <sstream>

#include "common/error.h"
#include "common/input_file.h"
#include "common/units.h"
#include "common/yaml_document.h"
#include "report/sweep_page.h"
#include "sim/simulator.h"

namespace dtsim::validation {
namespace {

namespace fs = std::filesystem;

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The regular file `path` (ReadRegularFile), refused at `at`.
std::string ReadFile(const std::string& path, const std::string& what, const SourceLocation& at) {
  try {
    return ReadRegularFile(path, what);
  } catch (const UserError& e) {
    throw UserError(at, e.message(), e.hint());
  }
}

// Sets the value at dotted `path` of `root` to `value` (one YAML value,
// read with ParseYamlDocument's bounds), creating maps. Throws UserError at
// `at` (the CSV row) for an empty key, a path through something that is not
// a mapping (the scenario itself included) and a malformed value.
void Override(YAML::Node root, const std::string& path, const std::string& value,
              const SourceLocation& at) {
  std::vector<std::string> keys;
  std::stringstream in(path);
  for (std::string k; std::getline(in, k, '.');) {
    if (k.empty()) throw UserError(at, "override '" + path + "': empty key");
    keys.push_back(k);
  }
  if (keys.empty()) throw UserError(at, "override '" + path + "': empty key");
  YAML::Node parsed;
  try {
    parsed = ParseYamlDocument(value, "value");
  } catch (const UserError& e) {
    // Quoted up to 40 characters: the message stays a line.
    const std::string shown = value.size() > 40 ? value.substr(0, 40) + "..." : value;
    throw UserError(at, "override '" + path + "': the value '" + shown + "' is not one YAML value: " +
                            e.where().ToString() + ": " + e.message(),
                    "quote a value that holds YAML punctuation: key='[1'");
  }
  YAML::Node node = root;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!node.IsMap() && !node.IsNull()) {
      const std::string parent = i == 0 ? "the scenario" : "'" + keys[i - 1] + "'";
      throw UserError(at, "override '" + path + "': " + parent + " is not a mapping",
                      "an override sets a key inside the scenario's mappings");
    }
    YAML::Node child = node[keys[i]];
    if (i + 1 == keys.size()) {
      child = parsed;
    } else if (!child.IsDefined() || child.IsNull()) {
      child = YAML::Node(YAML::NodeType::Map);
    }
    node.reset(child);
  }
}

}  // namespace

std::vector<MeasuredRun> ParseMeasuredRuns(const std::string& text, const std::string& csv_path) {
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  std::map<std::string, std::size_t> col;
  std::size_t fields = 0;
  std::vector<MeasuredRun> runs;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 && line.starts_with("\xEF\xBB\xBF")) line = line.substr(3);
    if (Trim(line).empty()) continue;
    const SourceLocation at{csv_path, line_no, 1};
    const std::vector<std::string> f = report::SplitCsvLine(Trim(line));
    if (col.empty()) {
      for (std::size_t i = 0; i < f.size(); ++i) col[Trim(f[i])] = i;
      fields = f.size();
      if (!col.contains("scenario"))
        throw UserError(at, "missing column 'scenario'", "the header names scenario, overrides "
                                                         "(optional) and step_time or throughput");
      if (col.contains("step_time") == col.contains("throughput"))
        throw UserError(at, "give exactly one of the columns 'step_time' and 'throughput'");
      continue;
    }
    if (f.size() != fields)
      throw UserError(at, "expected " + std::to_string(fields) + " fields, got " +
                              std::to_string(f.size()));
    fs::path scenario = Trim(f[col["scenario"]]);
    if (scenario.is_relative()) scenario = fs::path(csv_path).parent_path() / scenario;
    const std::string scenario_path = scenario.lexically_normal().string();
    YAML::Node root = ParseYamlDocument(ReadFile(scenario_path, "scenario file", at), scenario_path);
    std::string overrides;
    if (col.contains("overrides")) {
      std::stringstream list(f[col["overrides"]]);
      for (std::string item; std::getline(list, item, ';');) {
        item = Trim(item);
        if (item.empty()) continue;
        const auto eq = item.find('=');
        if (eq == std::string::npos)
          throw UserError(at, "override '" + item + "' is not path=value",
                          "e.g. workload.batch_per_device=64");
        Override(root, Trim(item.substr(0, eq)), Trim(item.substr(eq + 1)), at);
        overrides += (overrides.empty() ? "" : "; ") + item;
      }
    }
    MeasuredRun run;
    run.where = csv_path + ":" + std::to_string(line_no);
    try {
      run.scenario = config::ParseScenarioNode(root, scenario_path);
    } catch (const UserError& e) {
      // The row's overrides are part of what failed (a mistyped key, a value
      // out of range): the error belongs to the row, and says where in the
      // scenario it surfaced.
      if (overrides.empty()) throw;
      throw UserError(at, "scenario with the overrides '" + overrides + "': " + e.where().ToString() +
                              ": " + e.message(),
                      e.hint());
    }
    if (col.contains("step_time")) {
      run.measured_step_s = ParseQuantity(Trim(f[col["step_time"]]), Dimension::kTime, at);
    } else {
      double samples_per_s = 0;
      try {
        samples_per_s = std::stod(Trim(f[col["throughput"]]));
      } catch (const std::exception&) {
        throw UserError(at, "throughput: expected samples per second, got '" +
                                f[col["throughput"]] + "'");
      }
      if (!(samples_per_s > 0)) throw UserError(at, "throughput must be > 0");
      std::int64_t samples_per_step = 0;
      try {
        samples_per_step = sim::Simulate(run.scenario, {.fast = true}).plan.samples_per_iteration;
      } catch (const UserError& e) {
        throw UserError(at, std::string("a throughput needs the scenario's samples per step, and "
                                        "it does not plan: ") + e.what());
      }
      run.measured_step_s = static_cast<double>(samples_per_step) / samples_per_s;
    }
    if (!(run.measured_step_s > 0)) throw UserError(at, "step_time must be > 0");
    runs.push_back(std::move(run));
  }
  if (runs.empty()) throw UserError(SourceLocation{csv_path}, "no measured runs in the file");
  return runs;
}

std::vector<MeasuredRun> LoadMeasuredRuns(const std::string& csv_path) {
  return ParseMeasuredRuns(ReadFile(csv_path, "runs file", SourceLocation{csv_path}), csv_path);
}

}  // namespace dtsim::validation
