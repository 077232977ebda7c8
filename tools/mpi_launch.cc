#include "tools/mpi_launch.h"

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

void RunUnderMpiLauncher(int ranks, const std::vector<std::string>& args, std::ostream& err) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> argv_s = {DTSIM_MPIEXEC, "-np", std::to_string(ranks)};
  if (static_cast<unsigned>(ranks) > std::thread::hardware_concurrency())
    argv_s.emplace_back("--oversubscribe");  // OpenMPI: more ranks than cores
  argv_s.push_back(self);
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  err << "running:";
  for (const std::string& a : argv_s) err << " " << a;
  err << "\n" << std::flush;

  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "dtsim: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(std::string(DTSIM_MPIEXEC) + " -np " + std::to_string(ranks) +
                             " failed (status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
}

}  // namespace dtsim::tools
