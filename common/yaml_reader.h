// A small typed reader over yaml-cpp nodes for dtsim's input files: scenario
// files (config/, docs/scenario.md) and model files (models/,
// docs/model_file.md).
//
// Every value remembers the file it came from, its position (1-based line and
// column) and its dotted path ("cluster.network.link"), so that each check
// reports a UserError at the value itself:
//
//   foo.yaml:4:10: error: cluster.nodes: expected an integer, got '2.5'
//
// YamlMap knows the keys a mapping may hold and rejects any other key with the
// list of allowed ones, so no key is ever silently ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/error.h"
#include "common/units.h"
#include "common/yaml_document.h"  // ParseYamlDocument

namespace dtsim {

class YamlMap;

// The values a quantity of each dimension may take in dtsim's input files:
// wide enough for any real hardware, narrow enough that the simulation's
// arithmetic holds (its clock counts int64 nanoseconds up to about 146
// years) and that a typo such as 1e-300bps is caught where it is written.
struct QuantityBounds {
  double lowest;   // the smallest nonzero value (0 itself is allowed)
  double highest;
};
//   size:      1 B .. 2^60 B (1 EiB)
//   bandwidth: 1 kbps (125 B/s) .. 1 PB/s (a GPU link today: about 1 TB/s)
//   time:      any .. 10^6 s (about 11.6 days; one latency, launch cost or
//              delay: a step is a sum of many)
//   flop rate: 1 MFLOP/s .. 1 ZFLOP/s (10^21; a GPU today: about 10^15)
QuantityBounds BoundsOf(Dimension dim);

// One node of a document, with where it came from.
class YamlValue {
 public:
  // `fallback` is used when the node carries no position and for empty
  // values (yaml-cpp places them at the next token); pass the key's position.
  YamlValue(YAML::Node node, std::string file, std::string path, SourceLocation fallback = {});

  // The root of a document parsed from `file`.
  static YamlValue Root(YAML::Node node, std::string file);

  const std::string& path() const { return path_; }
  const SourceLocation& where() const { return where_; }
  const YAML::Node& node() const { return node_; }

  bool IsNull() const { return node_.IsNull(); }
  bool IsScalar() const { return node_.IsScalar(); }
  bool IsMap() const { return node_.IsMap(); }
  bool IsSequence() const { return node_.IsSequence(); }

  // Throws UserError at this value: "<path>: <message>".
  [[noreturn]] void Fail(const std::string& message, const std::string& hint = "") const;
  // Same, as InfeasiblePlan: the value is well formed but the plan it asks
  // for cannot be built (a split that does not divide, ...).
  [[noreturn]] void FailInfeasible(const std::string& message, const std::string& hint = "") const;

  // Typed reads. Each throws UserError at this value saying what was expected
  // and what was found.
  std::string AsString() const;  // any non-empty scalar
  // An integer in [min, max]; "2.5" and "four" are rejected.
  std::int64_t AsInt64(std::int64_t min, std::int64_t max) const;
  int AsInt(int min) const;  // in [min, INT_MAX]
  // A finite number (integers accepted).
  double AsNumber() const;
  bool AsBool() const;  // true/false (also yes/no, on/off)
  // A quantity with a unit, in the base unit of `dim` (common/units.h).
  // Errors from ParseQuantity are reported at this value, with their hint.
  // The value must lie in QuantityBounds(dim) (a nonzero value at least
  // `lowest`, any value at most `highest`), or at most `highest` when given.
  double AsQuantity(Dimension dim, double highest = 0) const;
  // Same, and > 0.
  double AsPositiveQuantity(Dimension dim, double highest = 0) const;
  // One of `names` (case-insensitive); returns its index. The error lists
  // them. `what` names the kind of value in messages ("topology").
  std::size_t AsChoice(const std::vector<std::string>& names, std::string_view what) const;
  // An integer n, meaning (n, n), or a list of two integers [a, b] (a 2-D
  // window such as a kernel size); each in [min, INT_MAX].
  std::pair<int, int> AsIntPair(int min) const;
  // A non-empty list of integers, each in [min, max] (a shape such as
  // [3, 224, 224]); an element's error is reported at the element.
  std::vector<std::int64_t> AsInt64List(std::int64_t min, std::int64_t max) const;
  // A list; the elements' paths are "<path>[i]".
  std::vector<YamlValue> AsSequence() const;
  // A mapping whose keys must all be in `allowed_keys`.
  YamlMap AsMap(std::vector<std::string> allowed_keys) const;
  // For a mapping whose allowed keys depend on one of its values (a model
  // file's layer allows the keys of its `type`): the value of `key`, read
  // before the other keys are checked with AsMap. Throws UserError as AsMap
  // does when this is not a mapping, and as YamlMap::Require does when `key`
  // is absent.
  YamlValue RequireSelector(std::string_view key, std::string_view expected = "") const;

  // "a mapping", "a list", "'text'" or "nothing", for messages.
  std::string Describe() const;

 private:
  YAML::Node node_;
  std::string file_;
  std::string path_;
  SourceLocation where_;
};

// A mapping whose keys have been checked against a list of allowed keys.
class YamlMap {
 public:
  struct Entry {
    std::string key;
    YamlValue key_value;  // the key node, for errors about the key itself
    YamlValue value;
  };

  // Throws UserError when `value` is not a mapping, when a key is not a
  // string, when a key appears twice, or at the first key not in
  // `allowed_keys` (listing the allowed keys, with a "did you mean").
  YamlMap(const YamlValue& value, std::vector<std::string> allowed_keys);

  const YamlValue& self() const { return self_; }
  const std::vector<Entry>& entries() const { return entries_; }

  // The value of `key`, or nullopt when absent. REQUIRES: `key` is allowed.
  std::optional<YamlValue> Get(std::string_view key) const;
  // Same, but an absent key throws UserError at the mapping; `expected`
  // (optional) says what the key should hold: "missing required key 'kernel'
  // (an integer or a [height, width] pair)".
  YamlValue Require(std::string_view key, std::string_view expected = "") const;

 private:
  YamlValue self_;
  std::vector<std::string> allowed_;
  std::vector<Entry> entries_;
};

// The hint for an unknown name: "did you mean 'x'? known <what>: a, b, c".
std::string UnknownNameHint(std::string_view name, const std::vector<std::string>& known,
                            std::string_view what);

// Case-insensitive ASCII equality.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace dtsim
