// Runs the dtsim binary (DTSIM_BIN, set by tests/CMakeLists.txt) as a user
// does, for the end-to-end tests: status, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dtsim::test {

struct Result {
  int status = -1;   // exit status; -1 when killed by a signal
  std::string out;   // stdout
  std::string err;   // stderr
};

inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs dtsim with `args` (already shell-quoted) from the repository root.
// `prefix` comes before the binary (e.g. "timeout 60 ": a hang then reads
// as status 124).
inline Result Dtsim(const std::string& args, const std::string& prefix = "") {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("dtsim_cli_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  const std::string cmd = prefix + DTSIM_BIN + " " + args + " >" + (tmp / "out").string() +
                          " 2>" + (tmp / "err").string();
  Result r;
  const int raw = std::system(cmd.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = Slurp(tmp / "out");
  r.err = Slurp(tmp / "err");
  return r;
}

}  // namespace dtsim::test
