#include "tools/output_set.h"

#include "common/error.h"

namespace dtsim::tools {
namespace fs = std::filesystem;

OutputSet::~OutputSet() {
  for (const auto& [tmp, final_path] : files_) {
    std::error_code ec;
    fs::remove(tmp, ec);  // leftovers of an unfinished run
  }
}

std::ofstream OutputSet::Open(const std::string& name) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw UserError("cannot create output folder '" + dir_.string() + "': " + ec.message());
  fs::path final_path = dir_ / name;
  fs::path tmp = final_path;
  tmp += ".tmp";
  std::ofstream f(tmp, std::ios::binary);
  if (!f) throw UserError("cannot write '" + tmp.string() + "'");
  files_.emplace_back(tmp, final_path);
  return f;
}

std::vector<fs::path> OutputSet::Commit() {
  std::vector<fs::path> done;
  for (const auto& [tmp, final_path] : files_) {
    fs::rename(tmp, final_path);
    done.push_back(final_path);
  }
  files_.clear();
  return done;
}

void CloseOutput(std::ofstream& f, const std::string& what) {
  f.close();
  if (!f) throw UserError("failed writing " + what + " (disk full?)");
}

}  // namespace dtsim::tools
