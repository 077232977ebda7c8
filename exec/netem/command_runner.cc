#include "exec/netem/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string_view>

#include "common/error.h"

namespace dtsim::exec::netem {
namespace {

// Joins pieces of text (a chain of std::string operator+ from a literal
// trips GCC 12's false -Wrestrict).
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s += p;
  return s;
}

// Reads both pipes until both reach end of file (poll, so that a command
// filling one pipe cannot block while we wait on the other).
void DrainPipes(int out_fd, int err_fd, std::string* out, std::string* err) {
  std::array<pollfd, 2> fds = {pollfd{out_fd, POLLIN, 0}, pollfd{err_fd, POLLIN, 0}};
  std::array<std::string*, 2> sinks = {out, err};
  int open = 2;
  char buf[4096];
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open;
      }
    }
  }
}

}  // namespace

CommandResult SystemCommandRunner::Run(const std::vector<std::string>& argv) {
  DTSIM_CHECK(!argv.empty(), "no command to run");
  std::vector<std::string> args = argv;  // execvp wants char*
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw NetworkCommandError("pipe failed");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw NetworkCommandError("pipe failed");
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::execvp(cargs[0], cargs.data());
    std::fprintf(stderr, "cannot run %s: %s\n", cargs[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  CommandResult r;
  if (pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw NetworkCommandError(std::string("fork failed: ") + std::strerror(errno));
  }
  DrainPipes(out_pipe[0], err_pipe[0], &r.out, &r.err);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw NetworkCommandError(Cat({"waitpid failed for ", CommandLine(argv)}));
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& a : argv) {
    if (!line.empty()) line += ' ';
    line += a;
  }
  return line;
}

NetworkCommandError CommandFailed(const std::vector<std::string>& argv,
                                  const CommandResult& result) {
  std::string message = Cat({"'", CommandLine(argv), "' failed with status ",
                             std::to_string(result.status)});
  std::string err = result.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  if (!err.empty()) {
    message += ": ";
    message += err;
  }
  return NetworkCommandError(message);
}

CommandResult RunChecked(CommandRunner& runner, const std::vector<std::string>& argv) {
  CommandResult r = runner.Run(argv);
  if (r.status != 0) throw CommandFailed(argv, r);
  return r;
}

}  // namespace dtsim::exec::netem
