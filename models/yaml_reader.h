// Typed, located access to a parsed YAML document for the model-file parser.
// Every failure is a UserError at the offending node's file:line:column
// (yaml-cpp marks are 0-based; locations here are 1-based), saying what was
// expected. Internal to models/.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/error.h"
#include "models/op.h"

namespace dtsim::models {

class YamlReader {
 public:
  explicit YamlReader(std::string filename) : filename_(std::move(filename)) {}

  const std::string& filename() const { return filename_; }

  // Location of `node`; the file alone when yaml-cpp has no mark for it.
  SourceLocation Where(const YAML::Node& node) const;
  [[noreturn]] void Fail(const YAML::Node& at, const std::string& message,
                         const std::string& hint = "") const;

  // REQUIRES nothing of `node`; throws unless it is a mapping.
  void RequireMap(const YAML::Node& node, const std::string& what) const;
  // Throws at the first key of `map` that is not in `allowed` (the hint lists
  // them) or that appears twice. `what` names the map in messages.
  void CheckKeys(const YAML::Node& map, const std::vector<std::string>& allowed,
                 const std::string& what) const;
  // Throws at `map` when `key` is absent; `expected` says what it should be.
  YAML::Node Required(const YAML::Node& map, const std::string& key, const std::string& what,
                      const std::string& expected) const;

  // Scalars. `what` names the value in messages ("layer 'conv1': 'kernel'").
  // An integer in [min, max].
  std::int64_t Int(const YAML::Node& node, const std::string& what, std::int64_t min,
                   std::int64_t max = INT32_MAX) const;
  bool Bool(const YAML::Node& node, const std::string& what) const;
  double Number(const YAML::Node& node, const std::string& what) const;
  std::string String(const YAML::Node& node, const std::string& what) const;
  // An integer n (meaning n, n) or a [first, second] pair, each >= min.
  std::pair<int, int> IntPair(const YAML::Node& node, const std::string& what, int min) const;
  // A non-empty list of positive integers.
  Shape ShapeOf(const YAML::Node& node, const std::string& what) const;

 private:
  std::string filename_;
};

}  // namespace dtsim::models
