// Parsing one YAML document with bounds, for every input file dtsim reads
// (scenarios, sweeps, model files, device profiles).
//
// yaml-cpp 0.7 alone is not safe on hostile or mistyped input:
//  - YAML::LoadAll never returns on a token that cannot start a node at the
//    top level (the file ",\n"): SingleDocParser::HandleNode reports a null
//    document without consuming the token, so every further
//    HandleNextDocument returns the same empty document and LoadAll appends
//    to its vector until memory runs out (jbeder/yaml-cpp#1040, fixed
//    upstream by PR #1319 after 0.7);
//  - aliases share nodes, so a document that refers to itself
//    (`x: &a [*a]`) has no end for code that walks it, and a "billion
//    laughs" document (each list repeating the previous one ten times) is
//    tiny on disk but has billions of nodes when walked.
// ParseYamlDocument reads the document's parse events first (YAML::Parser,
// one document at a time, never LoadAll), refuses those inputs with a
// UserError at file:line:column, and only then builds the node.
#pragma once

#include <cstdint>
#include <string>

#include <yaml-cpp/yaml.h>

namespace dtsim {

// The most nodes a document may have counting every alias as a copy of the
// node it names (a scenario has about a hundred, a 1000-layer model file
// about ten thousand).
constexpr std::int64_t kMaxYamlNodes = 1'000'000;
// The deepest nesting of mappings and lists, aliases expanded (a scenario
// nests 5 deep).
constexpr int kMaxYamlDepth = 64;

// Parses `text` as one YAML document. Throws UserError at file:line:column
// for: malformed YAML (including a token that cannot start a value, where
// yaml-cpp's LoadAll would loop), a second document ('---'), an alias inside
// the node it names, more than kMaxYamlNodes nodes or more than
// kMaxYamlDepth levels with aliases expanded. An empty input gives a null
// node (the caller reports what it expected). Time and memory are linear in
// the size of `text`.
YAML::Node ParseYamlDocument(const std::string& text, const std::string& filename);

}  // namespace dtsim
