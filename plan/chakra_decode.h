// One rank's Chakra trace decoded for the importer (plan/chakra_import.h):
// its nodes in an order that respects their dependencies, after the
// clean-up asked for, and reading a node's attributes. Errors are
// UserErrors naming the file and the node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/chakra_et.pb.h"
#include "plan/chakra_import.h"

namespace dtsim::plan {

// Nodes one rank's trace may hold (2^21): well above a training step's
// trace, and a bound on the memory a decoded trace takes.
inline constexpr std::size_t kMaxChakraNodes = std::size_t{1} << 21;

struct RankTrace {
  std::string name;
  // In an order that respects their dependencies (the file's order among
  // nodes ready together). Each node's data_deps hold all its dependencies
  // (both lists, less what the clean-up dropped); ctrl_deps are cleared.
  std::vector<chakra_format::Node> nodes;
};

// Decodes `t` (a GlobalMetadata message, then Node messages, each preceded
// by its length as a varint) and orders its nodes, counting what `cleanup`
// removes in `report`. Throws UserError on a malformed trace, more than
// `max_nodes` nodes, a duplicate
// id, a dependency on a missing node or a cycle (unless cleaned up).
RankTrace DecodeChakraTrace(const ChakraTrace& t, const ChakraCleanup& cleanup,
                            ChakraImportReport* report, std::size_t max_nodes = kMaxChakraNodes);

// Throws UserError at `trace` (the docs' pointer as hint when none given).
[[noreturn]] void ChakraFail(const std::string& trace, const std::string& message,
                             const std::string& hint = "");
// "node ID 'NAME'" for messages.
std::string NodeText(const chakra_format::Node& n);

// Attribute `name` of `n` when it has that type (IntAttr: any integer type,
// uint64 clamped to int64; StringAttr: a string, or an integer written out).
std::optional<std::int64_t> IntAttr(const chakra_format::Node& n, const std::string& name);
std::optional<bool> BoolAttr(const chakra_format::Node& n, const std::string& name);
std::optional<std::string> StringAttr(const chakra_format::Node& n, const std::string& name);

}  // namespace dtsim::plan
