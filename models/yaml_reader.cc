#include "models/yaml_reader.h"

#include <set>

namespace dtsim::models {
namespace {

// The node as the user wrote it, for messages.
std::string Text(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

std::string Join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

}  // namespace

SourceLocation YamlReader::Where(const YAML::Node& node) const {
  if (!node.IsDefined()) return {filename_, 0, 0};
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return {filename_, 0, 0};
  return {filename_, mark.line + 1, mark.column + 1};
}

void YamlReader::Fail(const YAML::Node& at, const std::string& message,
                      const std::string& hint) const {
  throw UserError(Where(at), message, hint);
}

void YamlReader::RequireMap(const YAML::Node& node, const std::string& what) const {
  if (!node.IsMap()) Fail(node, what + " must be a mapping of keys to values, got " + Text(node));
}

void YamlReader::CheckKeys(const YAML::Node& map, const std::vector<std::string>& allowed,
                           const std::string& what) const {
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
    bool known = false;
    for (const std::string& a : allowed) known = known || a == key;
    if (!known) {
      Fail(it->first, "unknown key " + Text(it->first) + " in " + what,
           "accepted keys: " + Join(allowed));
    }
    if (!seen.insert(key).second) Fail(it->first, "key '" + key + "' repeated in " + what);
  }
}

YAML::Node YamlReader::Required(const YAML::Node& map, const std::string& key,
                                const std::string& what, const std::string& expected) const {
  const YAML::Node value = map[key];
  if (!value.IsDefined()) Fail(map, what + " is missing '" + key + "' (" + expected + ")");
  return value;
}

std::int64_t YamlReader::Int(const YAML::Node& node, const std::string& what, std::int64_t min,
                             std::int64_t max) const {
  const std::string expected = "an integer >= " + std::to_string(min);
  if (!node.IsScalar()) Fail(node, what + " must be " + expected + ", got " + Text(node));
  long long value = 0;
  try {
    value = node.as<long long>();
  } catch (const YAML::BadConversion&) {
    Fail(node, what + " must be " + expected + ", got " + Text(node));
  }
  if (value < min) Fail(node, what + " must be " + expected + ", got " + Text(node));
  if (value > max) Fail(node, what + " is too large: at most " + std::to_string(max));
  return value;
}

bool YamlReader::Bool(const YAML::Node& node, const std::string& what) const {
  try {
    if (node.IsScalar()) return node.as<bool>();
  } catch (const YAML::BadConversion&) {
  }
  Fail(node, what + " must be true or false, got " + Text(node));
}

double YamlReader::Number(const YAML::Node& node, const std::string& what) const {
  try {
    if (node.IsScalar()) return node.as<double>();
  } catch (const YAML::BadConversion&) {
  }
  Fail(node, what + " must be a number, got " + Text(node));
}

std::string YamlReader::String(const YAML::Node& node, const std::string& what) const {
  if (!node.IsScalar() || node.Scalar().empty()) {
    Fail(node, what + " must be a non-empty string, got " + Text(node));
  }
  return node.Scalar();
}

std::pair<int, int> YamlReader::IntPair(const YAML::Node& node, const std::string& what,
                                        int min) const {
  if (node.IsScalar()) {
    const int v = static_cast<int>(Int(node, what, min));
    return {v, v};
  }
  if (!node.IsSequence() || node.size() != 2) {
    Fail(node, what + " must be an integer or a [height, width] pair, got " + Text(node));
  }
  return {static_cast<int>(Int(node[0], what, min)), static_cast<int>(Int(node[1], what, min))};
}

Shape YamlReader::ShapeOf(const YAML::Node& node, const std::string& what) const {
  if (!node.IsSequence() || node.size() == 0) {
    Fail(node, what + " must be a list of positive dimensions such as [3, 224, 224], got " +
                   Text(node));
  }
  Shape shape;
  for (std::size_t i = 0; i < node.size(); ++i) {
    shape.push_back(Int(node[i], what, 1, INT64_MAX));
  }
  return shape;
}

}  // namespace dtsim::models
