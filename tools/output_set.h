// The files one command writes into an output folder, written all or nothing.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::tools {

// Files are first written as "<name>.tmp" and renamed into place only once
// all of them were written (Commit), so a failure leaves no half-written
// output behind: the destructor removes the .tmp files of an unfinished set.
// Not thread-safe.
class OutputSet {
 public:
  // `dir` is created by the first Open.
  explicit OutputSet(std::filesystem::path dir) : dir_(std::move(dir)) {}
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Opens "<dir>/<name>.tmp" for writing. Throws UserError when the folder
  // cannot be created or the file cannot be opened.
  std::ofstream Open(const std::string& name);

  // Renames every file into place; returns the final paths, in Open order.
  std::vector<std::filesystem::path> Commit();

 private:
  std::filesystem::path dir_;
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> files_;  // (tmp, final)
};

// Closes `f` and throws UserError naming `what` if anything failed to be
// written (disk full, I/O error).
void CloseOutput(std::ofstream& f, const std::string& what);

}  // namespace dtsim::tools
