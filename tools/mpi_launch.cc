#include "tools/mpi_launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <thread>

namespace dtsim::tools {

bool LaunchedByMpiLauncher() {
  // OpenMPI sets OMPI_COMM_WORLD_SIZE, MPICH and Intel MPI set PMI_SIZE.
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

void RunUnderMpiLauncher(const LaunchOptions& o, const std::vector<std::string>& args,
                         std::ostream& err) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> argv_s = {DTSIM_MPIEXEC, "-np", std::to_string(o.ranks)};
  if (static_cast<unsigned>(o.ranks) > std::thread::hardware_concurrency())
    argv_s.emplace_back("--oversubscribe");  // OpenMPI: more ranks than cores
  argv_s.insert(argv_s.end(), o.launcher_args.begin(), o.launcher_args.end());
  argv_s.insert(argv_s.end(), o.rank_wrapper.begin(), o.rank_wrapper.end());
  argv_s.push_back(self);
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  err << "running:";
  for (const auto& [name, value] : o.environment) err << " " << name << "=" << value;
  for (const std::string& a : argv_s) err << " " << a;
  err << "\n" << std::flush;

  // The child's environment, built before fork: between fork and exec a
  // child of a threaded process may only make async-signal-safe calls.
  std::vector<std::pair<std::string, std::string>> vars = {
      {"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}};
  vars.insert(vars.end(), o.environment.begin(), o.environment.end());
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const auto& v : vars) replaced = replaced || entry.rfind(v.first + "=", 0) == 0;
    if (!replaced) env_s.push_back(entry);
  }
  for (const auto& [name, value] : vars) env_s.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvpe(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "dtsim: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  if (o.on_launcher) o.on_launcher(pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      if (o.on_launcher) o.on_launcher(0);
      throw std::runtime_error("waitpid failed");
    }
  }
  if (o.on_launcher) o.on_launcher(0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(std::string(DTSIM_MPIEXEC) + " -np " + std::to_string(o.ranks) +
                             " failed (status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
}

void RunUnderMpiLauncher(int ranks, const std::vector<std::string>& args, std::ostream& err) {
  LaunchOptions o;
  o.ranks = ranks;
  RunUnderMpiLauncher(o, args, err);
}

}  // namespace dtsim::tools
