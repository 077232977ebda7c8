#include "common/json_input.h"

#include "common/error.h"

namespace dtsim {

JsonDepth ScanJsonDepth(const std::string& text, int limit) {
  JsonDepth deepest;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest.depth) deepest = {depth, i};
      if (depth > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  if (deepest.depth <= limit) deepest.offset = text.size();
  return deepest;
}

nlohmann::json ParseJsonInput(const std::string& text, const std::string& filename,
                              const std::string& what, int max_depth) {
  const JsonDepth d = ScanJsonDepth(text, max_depth);
  if (d.depth > max_depth) {
    throw UserError(SourceLocation{filename},
                    what + ": arrays and objects nest more than " + std::to_string(max_depth) +
                        " deep (at byte " + std::to_string(d.offset) + ")",
                    "no " + what + " nests that deep; is this the right file?");
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(SourceLocation{filename}, what + ": not JSON that dtsim reads (" + e.what() + ")");
  }
}

}  // namespace dtsim
