// Process groups of a Chakra trace: which ranks a collective with a
// `pg_name` attribute (Chakra's PyTorch converter writes one on every
// collective) runs over.
//
// PyTorch's execution-trace observer records the groups in a node named
// "## process_group:init ##", which Chakra's converter keeps as a
// METADATA_NODE whose inputs.values is a Python list holding one JSON
// string:
//   ['[{"pg_name": "0", "pg_desc": "default_pg", "ranks": [0, 1, 2, 3]},
//      {"pg_name": "1", "ranks": [0, 1]}, ...]']
// (ASTRA-sim reads the same node; an empty "ranks" means every rank).
// ASTRA-sim's --comm-group-configuration file gives them as a JSON object
// instead: {"1": [0, 1], "2": [2, 3]}.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::plan {

// Process group name -> its global ranks, in the order given (empty: every
// rank).
using ChakraProcessGroups = std::map<std::string, std::vector<int>>;

// The groups in a METADATA_NODE's inputs.values; nullopt when the values do
// not describe process groups (no "pg_name" in them). Throws
// std::invalid_argument, saying what is wrong, when they mention pg_name
// but are not the form above.
std::optional<ChakraProcessGroups> ParseProcessGroupMetadata(const std::string& values);

// The groups of an ASTRA-sim communicator-group file's JSON text. Throws
// std::invalid_argument, saying what is wrong, when it is not that form.
ChakraProcessGroups ParseCommGroupFile(const std::string& json_text);

}  // namespace dtsim::plan
