// Output files written all or nothing: never through a symbolic link, never
// half-written, durable once committed.
//
// A set of files for one folder (AtomicFileSet) is written like this:
//
//   <dir>/.dtsim-stage-XXXXXXXXXXXX/   a fresh folder (created exclusively,
//       report.json                    mode 0700, locked with flock while its
//       summary.csv                    owner lives); each file is created in
//                                      it with O_CREAT|O_EXCL|O_NOFOLLOW and
//                                      fsynced when closed
//   Commit:
//     1. fsync the stage folder, lock the folder (below), rename the stage
//        to .dtsim-commit-XXXXXXXXXXXX and fsync <dir>: the commit point.
//        From here the new set is complete on disk and will be installed.
//     2. rename each file over <dir>/<name>, fsync <dir>, remove the
//        empty commit folder, unlock.
//
// An output replaces a regular file or fills an empty name: anything else
// at <dir>/<name> (a folder, a symbolic link, a device such as /dev/null, a
// FIFO, a socket) is refused with a UserError, checked with lstat before
// the folder is touched (no lock file, no stage) and again before the
// commit point.
//
// The folder's lock is flock(2) on <dir>/.dtsim-lock, a private file that
// dtsim creates (mode 0600, never through a link) and leaves in place. It
// is held while a set cleans the folder and creates its stage, and through
// a commit's renames: two sets committed into one folder at once install
// one after the other, each whole. A lock another program takes on the
// folder itself does not concern dtsim.
//
// Every step goes through file descriptors (openat, renameat, ...) relative
// to the folder's descriptor, so no name is resolved twice and a symbolic
// link planted at a temporary name is never followed. Folders that the set
// creates (missing components of <dir>) are opened with O_NOFOLLOW after
// mkdir; components that existed before are the user's choice and followed.
//
// What a reader sees: the old set until step 2, the new set after it. A kill
// or power loss before step 1 leaves the old set untouched (the stage is
// removed by the next set written to the folder); one inside step 2 leaves
// the new set complete in the commit folder, and the next set written to the
// folder (by any dtsim command) first finishes that install. Files are never
// seen half-written. The output folder itself is never renamed: folders such
// as results/<name>/ are shared by several commands (run, exec, validate,
// checkpoints) and may be the working directory, so replacing the folder
// would lose other commands' files.
//
// Cleaning up: the first Open of a set removes what dtsim itself left in the
// folder: .dtsim-stage-* folders of dead owners (not locked), finishes
// .dtsim-commit-* folders of dead owners, and removes "<name>.tmp" regular
// files that older dtsim versions wrote beside each output. Only folders
// owned by this user with mode 0700 count as dtsim's; symbolic links are
// never followed or removed.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace dtsim {

// A file being written, as a std::ostream over a descriptor that it owns.
// Movable, not copyable.
class OutputFile : public std::ostream {
 public:
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  // Closes the descriptor if Close was not called (the file stays in the
  // stage and is removed with it).
  ~OutputFile() override;

  // Flushes, fsyncs and closes the file. Throws UserError naming `what` if
  // anything failed to be written (disk full, I/O error).
  void Close(const std::string& what);

 private:
  friend class AtomicFileSet;
  class Buffer;
  explicit OutputFile(std::unique_ptr<Buffer> buffer);
  std::unique_ptr<Buffer> buffer_;
};

// The files one command writes into one folder, replacing files of the same
// names there all together (see the top of this file). Not thread-safe.
class AtomicFileSet {
 public:
  struct Options {
    // Create <dir> (and missing parents) if it does not exist. Without it a
    // missing folder is a UserError.
    bool create_folder = true;
  };
  // Nothing touches the disk before the first Open.
  explicit AtomicFileSet(std::filesystem::path dir) : AtomicFileSet(std::move(dir), Options{}) {}
  AtomicFileSet(std::filesystem::path dir, Options options);
  // Without Commit: removes the stage, leaving the folder as it was.
  ~AtomicFileSet();
  AtomicFileSet(const AtomicFileSet&) = delete;
  AtomicFileSet& operator=(const AtomicFileSet&) = delete;

  // Starts the file <dir>/<name>. `name` is a plain file name (no '/', not
  // "." or "..", not starting with ".dtsim-"). Throws UserError when the
  // folder cannot be created or opened, or the file cannot be created.
  OutputFile Open(const std::string& name);

  // Installs every file (each must have been closed). Returns the final
  // paths, in Open order. Throws UserError if a file cannot be installed
  // (e.g. a folder stands at its name); InternalError if a file is still
  // open.
  std::vector<std::filesystem::path> Commit();

 private:
  struct Entry {
    std::string name;
    std::shared_ptr<bool> closed;
  };
  void Begin();
  void RemoveStage() noexcept;

  std::filesystem::path dir_;
  Options options_;
  int dir_fd_ = -1;    // <dir>, open once Begin ran
  int stage_fd_ = -1;  // the stage folder, flock-ed while this set lives
  std::string stage_name_;
  std::vector<Entry> entries_;
};

// Writes one file by path through an AtomicFileSet of its folder: `write`
// fills the stream, then the file replaces `path` atomically and durably.
// The folder must exist unless `options.create_folder`. Throws UserError
// naming `path` on failure (the old file, if any, is then untouched).
void WriteFileAtomic(const std::filesystem::path& path,
                     const std::function<void(std::ostream&)>& write,
                     AtomicFileSet::Options options = {.create_folder = false});

}  // namespace dtsim
