// main() for a fuzz target built without libFuzzer (GCC, plain or sanitized
// builds): runs LLVMFuzzerTestOneInput once on each file given, or on each
// file under each folder given (recursively, in name order), as the tests
// fuzz_<target>_replay do with the seeds and the regression corpus
// (docs/fuzzing.md). It fails, naming the input, when one takes longer than
// --timeout seconds or the process's resident memory grows above
// --rss-limit-mb, the limits scripts/fuzz.sh gives libFuzzer; a crash or a
// sanitizer report ends the process by itself.
//
//   fuzz_scenario_replay [--timeout S] [--rss-limit-mb M] PATH...
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

struct Options {
  double timeout_s = 10;
  long rss_limit_mb = 2048;
  std::vector<std::string> paths;
};

// nullopt (after the usage line) when the arguments are wrong.
std::optional<Options> ParseArgs(int argc, char** argv) {
  Options o;
  bool ok = true;
  for (int i = 1; i < argc && ok; ++i) {
    const std::string a = argv[i];
    if ((a == "--timeout" || a == "--rss-limit-mb") && i + 1 < argc) {
      char* end = nullptr;
      const double v = std::strtod(argv[++i], &end);
      ok = *end == '\0' && v > 0;
      if (a == "--timeout") o.timeout_s = v;
      if (a == "--rss-limit-mb") o.rss_limit_mb = static_cast<long>(v);
    } else {
      ok = !a.empty() && a[0] != '-';
      o.paths.push_back(a);
    }
  }
  if (ok && !o.paths.empty()) return o;
  std::fprintf(stderr, "usage: %s [--timeout SECONDS] [--rss-limit-mb MB] FILE_OR_FOLDER...\n",
               argv[0]);
  return std::nullopt;
}

// The files to run, or nullopt (after saying which) when a path is missing.
std::optional<std::vector<std::string>> InputFiles(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (fs::is_directory(p)) {
      std::vector<std::string> in_folder;
      for (const auto& e : fs::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) in_folder.push_back(e.path().string());
      }
      std::sort(in_folder.begin(), in_folder.end());
      files.insert(files.end(), in_folder.begin(), in_folder.end());
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "replay: no such file or folder: %s\n", p.c_str());
      return std::nullopt;
    }
  }
  return files;
}

// Resident memory of this process in MiB, from /proc/self/statm (its second
// field is resident pages); -1 when unreadable.
long ResidentMb() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  if (!(statm >> size >> resident)) return -1;
  return resident * (sysconf(_SC_PAGESIZE) / 1024) / 1024;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> parsed = ParseArgs(argc, argv);
  if (!parsed) return 2;
  const Options& options = *parsed;
  const std::optional<std::vector<std::string>> listed = InputFiles(options.paths);
  if (!listed) return 2;
  const std::vector<std::string>& files = *listed;

  // The watchdog reads which input runs and since when; it ends the process
  // (no unwinding: the input may be stuck inside a library) when one breaks
  // a limit. `current` indexes `files`, -1 between inputs.
  std::atomic<long> current{-1};
  std::atomic<std::int64_t> started_ns{0};
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const long i = current.load();
      if (i < 0) continue;
      const auto now = std::chrono::steady_clock::now().time_since_epoch();
      const double elapsed_s =
          static_cast<double>(std::chrono::nanoseconds(now).count() - started_ns.load()) * 1e-9;
      const long rss = ResidentMb();
      const char* broken = elapsed_s > options.timeout_s        ? "timeout"
                           : rss > options.rss_limit_mb         ? "memory above the cap"
                                                                : nullptr;
      if (broken) {
        std::fprintf(stderr, "replay: FAILED (%s: %.1f s, %ld MiB resident; limits %.0f s, %ld MiB): %s\n",
                     broken, elapsed_s, rss, options.timeout_s, options.rss_limit_mb,
                     files[static_cast<std::size_t>(i)].c_str());
        std::fflush(stderr);
        _exit(1);
      }
    }
  });

  for (std::size_t i = 0; i < files.size(); ++i) {
    std::ifstream in(files[i], std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", files[i].c_str(), data.size());
    const auto now = std::chrono::steady_clock::now().time_since_epoch();
    started_ns.store(std::chrono::nanoseconds(now).count());
    current.store(static_cast<long>(i));
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
    current.store(-1);
  }
  done.store(true);
  watchdog.join();
  std::fprintf(stderr, "replay: %zu inputs, all answered or refused\n", files.size());
  return 0;
}
