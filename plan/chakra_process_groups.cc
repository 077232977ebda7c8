#include "plan/chakra_process_groups.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

#include "common/json_input.h"

namespace dtsim::plan {
namespace {

std::vector<int> RanksOf(const nlohmann::json& ranks, const std::string& group) {
  if (!ranks.is_array()) throw std::invalid_argument("group '" + group + "': ranks is not a list");
  std::vector<int> out;
  for (const nlohmann::json& r : ranks) {
    if (!r.is_number_integer() || r.get<long long>() < 0 || r.get<long long>() > (1 << 30)) {
      throw std::invalid_argument("group '" + group + "': rank " + r.dump() +
                                  " is not a non-negative integer");
    }
    out.push_back(r.get<int>());
  }
  return out;
}

// The string inside a Python list of one string, as Python's str() writes
// it: ['...'] with \' and \\ escaped, or ["..."] with \" and \\ escaped.
std::string UnwrapPythonList(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \n\t");
  const std::size_t e = s.find_last_not_of(" \n\t");
  if (b == std::string::npos || e - b < 3 || s[b] != '[' || s[e] != ']') return s;
  const char quote = s[b + 1];
  if ((quote != '\'' && quote != '"') || s[e - 1] != quote) return s;
  std::string out;
  for (std::size_t i = b + 2; i < e - 1; ++i) {
    if (s[i] == '\\' && i + 1 < e - 1 && (s[i + 1] == quote || s[i + 1] == '\\')) ++i;
    out += s[i];
  }
  return out;
}

}  // namespace

std::optional<ChakraProcessGroups> ParseProcessGroupMetadata(const std::string& values) {
  if (values.find("pg_name") == std::string::npos) return std::nullopt;
  nlohmann::json j;
  try {
    const std::string text = UnwrapPythonList(values);
    if (ScanJsonDepth(text, kMaxJsonDepth).depth > kMaxJsonDepth)
      throw std::invalid_argument("process-group metadata nests deeper than any list of groups");
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("process-group metadata is not JSON: ") + e.what());
  }
  if (!j.is_array()) throw std::invalid_argument("process-group metadata is not a list of groups");
  ChakraProcessGroups groups;
  for (const nlohmann::json& g : j) {
    if (!g.is_object() || !g.contains("pg_name") || !g.contains("ranks")) {
      throw std::invalid_argument("process group " + g.dump() + " has no pg_name or no ranks");
    }
    const nlohmann::json& name = g.at("pg_name");
    const std::string key = name.is_string() ? name.get<std::string>() : name.dump();
    if (!groups.emplace(key, RanksOf(g.at("ranks"), key)).second) {
      throw std::invalid_argument("process group '" + key + "' is listed twice");
    }
  }
  return groups;
}

ChakraProcessGroups ParseCommGroupFile(const std::string& json_text) {
  nlohmann::json j;
  try {
    if (ScanJsonDepth(json_text, kMaxJsonDepth).depth > kMaxJsonDepth)
      throw std::invalid_argument("nests deeper than a JSON object of group name -> list of ranks");
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) {
    throw std::invalid_argument("not a JSON object of group name -> list of ranks");
  }
  ChakraProcessGroups groups;
  for (const auto& [name, ranks] : j.items()) groups[name] = RanksOf(ranks, name);
  return groups;
}

}  // namespace dtsim::plan
