// Running the system's network tools (`ip`, `tc`, `sysctl`) as child
// processes: argument vectors through fork/exec, never a shell command
// line. An interface, so that tests can record the commands a setup issues
// instead of running them.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::exec::netem {

struct CommandResult {
  int status = -1;   // exit status; 128 + N when killed by signal N; 127 = could not run
  std::string out;   // what the command wrote to stdout
  std::string err;   // what the command wrote to stderr
};

// A command of the network setup failed: what() names the command line,
// its exit status and its error output.
class NetworkCommandError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv[0] (looked up in PATH) with the arguments argv[1..] and waits
  // for it. REQUIRES: argv non-empty. Never throws for a failing command:
  // its status says so.
  virtual CommandResult Run(const std::vector<std::string>& argv) = 0;
};

// The real thing: fork, exec, wait. In the child every signal is unblocked
// (a parent that blocks SIGINT for a watcher thread must not pass that on),
// stdin is /dev/null and stdout/stderr are captured. Thread-compatible:
// each call is independent.
class SystemCommandRunner final : public CommandRunner {
 public:
  CommandResult Run(const std::vector<std::string>& argv) override;
};

// "ip netns add x": argv joined by spaces, for messages.
std::string CommandLine(const std::vector<std::string>& argv);

// The error for `argv` having returned `result` (status != 0): the command
// line, the status and the command's stderr.
NetworkCommandError CommandFailed(const std::vector<std::string>& argv,
                                  const CommandResult& result);

// Runs argv; throws NetworkCommandError (command line, status, stderr) when
// it exits non-zero. Returns its result otherwise.
CommandResult RunChecked(CommandRunner& runner, const std::vector<std::string>& argv);

}  // namespace dtsim::exec::netem
