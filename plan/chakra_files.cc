#include "plan/chakra_files.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>

#include "common/error.h"
#include "common/input_file.h"

namespace dtsim::plan {
namespace {

namespace fs = std::filesystem;

constexpr const char* kNaming =
    "give the traces' common prefix: PREFIX.0.et, PREFIX.1.et, ... one per rank from 0 "
    "(each may be gzip-compressed as PREFIX.<rank>.et.gz)";

[[noreturn]] void Fail(const std::string& file, const std::string& message,
                       const std::string& hint = kNaming) {
  throw UserError(SourceLocation{file, 0, 0}, message, hint);
}

// The most bytes a trace may have, read or decompressed: the decoder reads
// at most 2 GiB (protobuf's limit).
constexpr std::int64_t kMaxTraceBytes = std::numeric_limits<int>::max();

// The rank of file `name` when it is STEM.<rank>.et or STEM.<rank>.et.gz;
// -1 otherwise. Sets `gz` for the compressed form.
long RankOf(const std::string& name, const std::string& stem, bool* gz) {
  if (name.size() <= stem.size() + 1 || name.compare(0, stem.size(), stem) != 0 ||
      name[stem.size()] != '.')
    return -1;
  std::string rest = name.substr(stem.size() + 1);
  *gz = rest.size() > 3 && rest.compare(rest.size() - 3, 3, ".gz") == 0;
  if (*gz) rest.resize(rest.size() - 3);
  if (rest.size() < 4 || rest.compare(rest.size() - 3, 3, ".et") != 0) return -1;
  rest.resize(rest.size() - 3);
  if (rest.empty() || rest.size() > 9 || !std::all_of(rest.begin(), rest.end(), ::isdigit))
    return -1;
  if (rest.size() > 1 && rest[0] == '0') return -1;  // "01" is not rank 1's name
  return std::stol(rest);
}

}  // namespace

std::vector<ChakraTrace> ReadChakraTraces(const std::string& prefix, int ranks) {
  const fs::path p(prefix);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string stem = p.filename().string();
  const auto name_of = [&](long r) { return prefix + "." + std::to_string(r) + ".et"; };
  std::map<long, std::string> files;  // rank -> path
  std::error_code ec;
  if (!stem.empty() && fs::is_directory(dir, ec)) {
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      bool gz = false;
      const long r = RankOf(e.path().filename().string(), stem, &gz);
      if (r < 0) continue;
      const std::string path = name_of(r) + (gz ? ".gz" : "");
      // A FIFO would block the read, a link to /dev/zero never end it.
      RequireRegularFile(path, "Chakra trace");
      if (!files.emplace(r, path).second) {
        Fail(path, "rank " + std::to_string(r) + " is given twice, as " + name_of(r) + " and " +
                       name_of(r) + ".gz",
             "keep one of them");
      }
    }
  }
  if (files.empty()) Fail(name_of(0), "no Chakra trace at this path");
  const long last = files.rbegin()->first;
  for (long r = 0; r <= last; ++r) {
    if (!files.count(r)) {
      Fail(name_of(r), "rank " + std::to_string(r) + "'s trace does not exist, but " +
                           files.rbegin()->second + " does: rank files run from 0 without a gap");
    }
  }
  const long found = last + 1;
  if (ranks > 0 && found < ranks) {
    Fail(name_of(found), "rank " + std::to_string(found) +
                             "'s trace does not exist: the cluster has " + std::to_string(ranks) +
                             " devices and there are traces for ranks 0-" +
                             std::to_string(last) + " only",
         "give one trace per device, or a cluster of " + std::to_string(found) + " devices");
  }
  if (ranks > 0 && found > ranks) {
    Fail(files.at(ranks), "there are traces for ranks 0-" + std::to_string(last) +
                              " and the cluster has " + std::to_string(ranks) +
                              " devices: this one has no device",
         "give a cluster of one device per rank of the trace (" + std::to_string(found) + ")");
  }
  std::vector<ChakraTrace> traces;
  for (const auto& [r, path] : files) {
    const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
    traces.push_back(
        {path, gz ? ReadMaybeGzippedFile(path, "Chakra trace", kMaxTraceBytes)
           : ReadRegularFile(path, "Chakra trace", kMaxTraceBytes)});
  }
  return traces;
}

}  // namespace dtsim::plan
