// Kinds of failure, kept apart from day one:
//  - UserError: the user's input is wrong (scenario file, model file, command
//    line). It carries where (file:line:column when known), what was expected
//    and a hint. main() turns it into exit status 2.
//  - InfeasiblePlan (a UserError): the input is well formed but asks for a
//    plan that cannot run: it does not fit in memory, or a split does not
//    divide (tensor_parallel of 5 over 12 heads, 5 pipeline stages over 8
//    devices). `run` exits 3 for it; a sweep keeps going and reports the
//    point as an infeasible row with the message.
//  - DTSIM_CHECK: an internal invariant is broken (a bug in dtsim). It throws
//    InternalError in every build type; it never vanishes like assert().
#pragma once

#include <stdexcept>
#include <string>

namespace dtsim {

// Where in an input a value came from. line and column are 1-based; 0 means
// unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;

  // "file:line:column", "file" or "" depending on what is known.
  std::string ToString() const;
};

class UserError : public std::runtime_error {
 public:
  // message says what is wrong and what was expected; hint (optional) says
  // how to fix it.
  UserError(SourceLocation where, const std::string& message, std::string hint = "");
  explicit UserError(const std::string& message, std::string hint = "")
      : UserError(SourceLocation{}, message, std::move(hint)) {}

  const SourceLocation& where() const { return where_; }
  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }

 private:
  SourceLocation where_;
  std::string message_;
  std::string hint_;
};

class InfeasiblePlan : public UserError {
 public:
  using UserError::UserError;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void FailCheck(const char* file, int line, const char* expr, const std::string& msg);

}  // namespace dtsim

// REQUIRES-style internal check, active in every build type.
#define DTSIM_CHECK(cond, msg)                                   \
  do {                                                           \
    if (!(cond)) ::dtsim::FailCheck(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)
