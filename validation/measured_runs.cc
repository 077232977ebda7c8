#include "validation/measured_runs.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/error.h"
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

std::string ReadFile(const std::string& path, const SourceLocation& at) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw UserError(at, "cannot read '" + path + "'");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Sets the scalar at dotted `path` of `root` to `value`, creating maps.
void Override(YAML::Node root, const std::string& path, const std::string& value,
              const SourceLocation& at) {
  std::vector<std::string> keys;
  std::stringstream in(path);
  for (std::string k; std::getline(in, k, '.');) {
    if (k.empty()) throw UserError(at, "override '" + path + "': empty key");
    keys.push_back(k);
  }
  YAML::Node node = root;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!node.IsMap() && !node.IsNull())
      throw UserError(at, "override '" + path + "': '" + keys[i - 1] + "' is not a mapping");
    YAML::Node child = node[keys[i]];
    if (i + 1 == keys.size()) {
      child = YAML::Load(value);
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
    YAML::Node root = ParseYamlDocument(ReadFile(scenario_path, at), scenario_path);
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
      }
    }
    MeasuredRun run;
    run.where = csv_path + ":" + std::to_string(line_no);
    run.scenario = config::ParseScenarioNode(root, scenario_path);
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
      const sim::Prediction p = sim::Simulate(run.scenario, {.fast = true});
      run.measured_step_s = static_cast<double>(p.plan.samples_per_iteration) / samples_per_s;
    }
    if (!(run.measured_step_s > 0)) throw UserError(at, "step_time must be > 0");
    runs.push_back(std::move(run));
  }
  if (runs.empty()) throw UserError(SourceLocation{csv_path}, "no measured runs in the file");
  return runs;
}

std::vector<MeasuredRun> LoadMeasuredRuns(const std::string& csv_path) {
  return ParseMeasuredRuns(ReadFile(csv_path, SourceLocation{csv_path}), csv_path);
}

}  // namespace dtsim::validation
