#include "common/error.h"

namespace dtsim {

std::string SourceLocation::ToString() const {
  if (file.empty()) return "";
  if (line <= 0) return file;
  // Appended piece by piece: GCC 12 reports a false -Wrestrict on
  // `file + ":" + ...` chains.
  std::string s = file;
  s += ':';
  s += std::to_string(line);
  if (column > 0) {
    s += ':';
    s += std::to_string(column);
  }
  return s;
}

namespace {
std::string Compose(const SourceLocation& where, const std::string& message,
                    const std::string& hint) {
  std::string s;
  std::string loc = where.ToString();
  if (!loc.empty()) s = loc + ": ";
  s += "error: " + message;
  if (!hint.empty()) s += "\n  hint: " + hint;
  return s;
}
}  // namespace

UserError::UserError(SourceLocation where, const std::string& message, std::string hint)
    : std::runtime_error(Compose(where, message, hint)),
      where_(std::move(where)),
      message_(message),
      hint_(std::move(hint)) {}

void FailCheck(const char* file, int line, const char* expr, const std::string& msg) {
  throw InternalError(std::string(file) + ":" + std::to_string(line) +
                      ": internal error (please report): check '" + expr + "' failed: " + msg);
}

}  // namespace dtsim
