// Start-up of the dtsim command, as a user pays it: the wall time of a whole
// process (fork, exec, dynamic loading, the command, exit) and its peak
// resident memory (wait4's ru_maxrss), for
//   Version       dtsim --version
//   Run1024Gpus   dtsim run of ResNet-50 data parallel on 1,024 A100s
//                 (128 nodes x 8, the fat tree of
//                 scenarios/resnet50-256xA100-fattree.yaml at 4x the nodes),
//                 no trace, no output but the report files
// The targets for the second: under 30 ms and 50 MiB.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

// Runs argv to completion; returns its peak RSS in KiB (0 on failure, after
// marking the benchmark as failed).
long RunOnce(benchmark::State& state, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    state.SkipWithError("cannot start dtsim");
    return 0;
  }
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    state.SkipWithError("dtsim failed");
    return 0;
  }
  return usage.ru_maxrss;
}

void Measure(benchmark::State& state, const std::vector<std::string>& args) {
  long rss = 0;
  for (auto _ : state) rss = std::max(rss, RunOnce(state, args));
  state.counters["peak_RSS_MiB"] = static_cast<double>(rss) / 1024.0;
}

void BM_Version(benchmark::State& state) { Measure(state, {DTSIM_BIN, "--version"}); }
BENCHMARK(BM_Version)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Run1024Gpus(benchmark::State& state) {
  const fs::path dir = fs::temp_directory_path() / ("dtsim_startup_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ifstream in(std::string(DTSIM_SOURCE_DIR) + "/scenarios/resnet50-256xA100-fattree.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const std::string from = "nodes: 32", to = "nodes: 128";
  const auto at = yaml.find(from);
  if (at == std::string::npos) {
    state.SkipWithError("the fat-tree scenario no longer has 'nodes: 32'");
    return;
  }
  yaml.replace(at, from.size(), to);
  std::ofstream(dir / "s.yaml") << yaml;
  Measure(state, {DTSIM_BIN, "run", (dir / "s.yaml").string(), "--no-trace", "-q", "-o",
                  (dir / "out").string()});
  fs::remove_all(dir);
}
BENCHMARK(BM_Run1024Gpus)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
