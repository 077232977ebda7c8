// Parsing a JSON file the user names (an op-cost table, a torch.profiler
// trace, a communicator-group file), bounded so that no input crashes or
// exhausts the machine: nesting depth is checked before the library builds
// anything (its recursive copies overflow the stack at a depth of ~10^5),
// and every failure of the library, a number out of range included, is a
// UserError at the file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace dtsim {

// Deeper nesting than any dtsim input has (a torch trace nests 4 levels, an
// op-cost table 4) by a wide margin, far below what overflows a stack.
inline constexpr int kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in `text` (strings skipped,
// escapes honoured), stopping once it exceeds `limit`; and the byte offset
// where that happened (or text.size()).
struct JsonDepth {
  int depth = 0;
  std::size_t offset = 0;
};
JsonDepth ScanJsonDepth(const std::string& text, int limit);

// `text`, the contents of `filename`, as JSON. Throws UserError at
// `filename`, naming `what` ("op-cost table"), when the text nests deeper
// than `max_depth`, is not JSON, or holds a number the library refuses
// (1e309): the message says where (byte offset) and why.
nlohmann::json ParseJsonInput(const std::string& text, const std::string& filename,
                              const std::string& what, int max_depth = kMaxJsonDepth);

}  // namespace dtsim
