#include "tools/mpi_launch.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>
#include <thread>

namespace dtsim::tools {
namespace {

namespace fs = std::filesystem;

// The folder RunUnderMpiLauncher gives the ranks for their errors.
constexpr const char* kRankErrorsVariable = "DTSIM_RANK_ERRORS";

// A temporary folder for the ranks' errors; removed with its files when
// this goes out of scope.
class ErrorFolder {
 public:
  ErrorFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = (fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
                         "dtsim-rank-errors.XXXXXX")
                            .string();
    if (::mkdtemp(templ.data()) != nullptr) path_ = templ;
  }
  ~ErrorFolder() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  ErrorFolder(const ErrorFolder&) = delete;
  ErrorFolder& operator=(const ErrorFolder&) = delete;
  const std::string& path() const { return path_; }  // "" when it could not be made

 private:
  std::string path_;
};

// The lowest rank's recorded error in `dir`, rethrown; returns when none is
// there.
void RethrowRankError(const std::string& dir) {
  std::error_code ec;
  int best = -1;
  nlohmann::json chosen;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::ifstream in(entry.path());
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("rank") || !j["rank"].is_number_integer()) continue;
    const int rank = j["rank"].get<int>();
    if (best < 0 || rank < best) {
      best = rank;
      chosen = j;
    }
  }
  if (best < 0) return;
  SourceLocation where{chosen.value("file", ""), chosen.value("line", 0), chosen.value("column", 0)};
  const std::string message = "rank " + std::to_string(best) + ": " + chosen.value("message", "");
  if (chosen.value("infeasible", false))
    throw InfeasiblePlan(where, message, chosen.value("hint", ""));
  throw UserError(where, message, chosen.value("hint", ""));
}

}  // namespace

bool LaunchedByMpiLauncher() {
  // OpenMPI sets OMPI_COMM_WORLD_SIZE, MPICH and Intel MPI set PMI_SIZE.
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

bool DieWithLauncher() {
  const pid_t parent = ::getppid();
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return true;  // not Linux-like: nothing to do
  // The parent may have died before the request: then we were adopted.
  return ::getppid() == parent;
}

void RecordRankError(int rank, const UserError& error, bool infeasible) {
  const char* dir = std::getenv(kRankErrorsVariable);
  if (dir == nullptr || *dir == '\0') return;
  const nlohmann::json j = {{"rank", rank},
                            {"file", error.where().file},
                            {"line", error.where().line},
                            {"column", error.where().column},
                            {"message", error.message()},
                            {"hint", error.hint()},
                            {"infeasible", infeasible}};
  // Written under a temporary name and renamed, so the launcher never reads
  // half a file.
  const fs::path final_path = fs::path(dir) / ("rank-" + std::to_string(rank) + ".json");
  const fs::path temp = fs::path(dir) / (".rank-" + std::to_string(rank) + ".tmp");
  {
    std::ofstream out(temp);
    out << j.dump() << "\n";
    if (!out) return;
  }
  std::error_code ignored;
  fs::rename(temp, final_path, ignored);
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

  const ErrorFolder errors;
  // The child's environment, built before fork: between fork and exec a
  // child of a threaded process may only make async-signal-safe calls.
  std::vector<std::pair<std::string, std::string>> vars = {
      {"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}};
  if (!errors.path().empty()) vars.emplace_back(kRankErrorsVariable, errors.path());
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

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // mpirun dies with us: on SIGTERM it stops its ranks and exits (OpenMPI's
    // orterun: SIGTERM to the job, then SIGKILL). The signal is sent when the
    // thread that forked exits, and this thread waits for mpirun. Should we
    // have died before the request took effect, stop now.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
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
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  const std::string what = std::string(DTSIM_MPIEXEC) + " -np " + std::to_string(o.ranks);
  // main()'s exit statuses, passed through MPI_Abort and mpirun.
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 2 || code == 3) {
    if (!errors.path().empty()) RethrowRankError(errors.path());
    const std::string message = "a rank stopped on " +
                                std::string(code == 2 ? "a mistake in the input"
                                                      : "a plan that cannot run") +
                                " (" + what + " exited with " + std::to_string(code) +
                                "; the rank's message is above)";
    if (code == 3) throw InfeasiblePlan(message);
    throw UserError(message);
  }
  throw std::runtime_error(what + " failed (" +
                           (WIFEXITED(status) ? "status " + std::to_string(code)
                                              : "killed by signal " +
                                                    std::to_string(WTERMSIG(status))) +
                           ")");
}

void RunUnderMpiLauncher(int ranks, const std::vector<std::string>& args, std::ostream& err) {
  LaunchOptions o;
  o.ranks = ranks;
  RunUnderMpiLauncher(o, args, err);
}

}  // namespace dtsim::tools
