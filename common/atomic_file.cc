#include "common/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "common/error.h"

namespace dtsim {
namespace fs = std::filesystem;

namespace {

constexpr char kStagePrefix[] = ".dtsim-stage-";
constexpr char kCommitPrefix[] = ".dtsim-commit-";
constexpr char kLockName[] = ".dtsim-lock";
constexpr std::size_t kBufferBytes = 1 << 16;

std::string ErrnoText(int err) { return std::strerror(err); }

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = other.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// fsync that accepts file systems which cannot sync a folder (EINVAL): on
// those, rename is as durable as the file system makes it.
int SyncFd(int fd) {
  if (::fsync(fd) == 0 || errno == EINVAL) return 0;
  return -1;
}

int Flock(int fd, int operation) {
  int rc;
  do {
    rc = ::flock(fd, operation);
  } while (rc != 0 && errno == EINTR);
  return rc;
}

// Twelve random letters and digits: 36^12 names, so exclusive creation
// (retried on EEXIST) finds a free one at once.
std::string RandomSuffix() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::uniform_int_distribution<int> pick(0, 35);
  std::string s(12, 'x');
  for (char& c : s) c = kAlphabet[pick(rd)];
  return s;
}

[[noreturn]] void FailAt(const fs::path& path, const std::string& what, int err) {
  throw UserError(SourceLocation{path.string()}, what + ": " + ErrnoText(err),
                  "check that the folder exists, is writable and has free space");
}

// The folder's lock: <dir>/.dtsim-lock, a private regular file (created
// mode 0600, never through a link) flock-ed LOCK_EX while a set cleans the
// folder and creates its stage, and from its commit point through its last
// rename, so that two sets never install into one folder at once. A lock
// file of dtsim's own, not the folder: a lock someone else takes on the
// folder stalls no writer. An unset descriptor (-1) where flock is not
// supported (some network file systems): then no lock is held.
Fd LockFolder(int dir_fd, const fs::path& dir) {
  Fd lock(::openat(dir_fd, kLockName, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (lock.get() < 0) {
    throw UserError(SourceLocation{(dir / kLockName).string()},
                    std::string("cannot open the output folder's lock file: ") + ErrnoText(errno),
                    "remove what stands at this name (dtsim creates it as a plain file)");
  }
  if (Flock(lock.get(), LOCK_EX) != 0) return Fd();
  return lock;
}

// Opens `dir` for *at() calls and flock. With `create`, makes missing
// components one by one; a component made here is reopened with O_NOFOLLOW,
// so a symbolic link swapped in after mkdir is refused rather than followed.
Fd OpenFolder(const fs::path& dir, bool create) {
  constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  Fd whole(::open(dir.c_str(), kFlags));
  if (whole.get() >= 0) return whole;
  if (errno != ENOENT || !create) FailAt(dir, "cannot open the output folder", errno);
  Fd cur(::open(dir.is_absolute() ? "/" : ".", kFlags));
  if (cur.get() < 0) FailAt(dir, "cannot open the output folder", errno);
  for (const fs::path& part : dir.relative_path()) {
    const std::string name = part.string();
    if (name.empty()) continue;  // a trailing '/'
    int fd = ::openat(cur.get(), name.c_str(), kFlags);
    if (fd < 0 && errno == ENOENT) {
      const bool made = ::mkdirat(cur.get(), name.c_str(), 0777) == 0;
      if (!made && errno != EEXIST) FailAt(dir, "cannot create the output folder", errno);
      fd = ::openat(cur.get(), name.c_str(), kFlags | (made ? O_NOFOLLOW : 0));
      if (fd >= 0 && made && SyncFd(cur.get()) != 0) {
        const int err = errno;
        ::close(fd);
        FailAt(dir, "cannot sync the output folder's parent", err);
      }
    }
    if (fd < 0) FailAt(dir, "cannot open the output folder", errno);
    cur = Fd(fd);
  }
  return cur;
}

// Names in the folder `fd` (without "." and "..").
std::vector<std::string> ListFolder(int fd) {
  std::vector<std::string> names;
  const int copy = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) return names;
  DIR* d = ::fdopendir(copy);
  if (d == nullptr) {
    ::close(copy);
    return names;
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

// Removes the files in the folder `fd` and then the folder, named `name` in
// `parent_fd`. unlinkat never follows a symbolic link; a folder inside
// (which dtsim never makes) stays, and so does the folder then.
void RemoveFolder(int parent_fd, const std::string& name, int fd) {
  for (const std::string& entry : ListFolder(fd)) ::unlinkat(fd, entry.c_str(), 0);
  ::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR);
}

// Renames every regular file of the commit folder `fd` into `dir_fd`.
// Returns the first failure as (name, errno); errno 0 if none.
std::pair<std::string, int> InstallFiles(int fd, int dir_fd, const std::vector<std::string>& names) {
  std::pair<std::string, int> failure{"", 0};
  for (const std::string& name : names) {
    if (::renameat(fd, name.c_str(), dir_fd, name.c_str()) != 0 && failure.second == 0)
      failure = {name, errno};
  }
  return failure;
}

// Finishes or removes what dead dtsim processes left in the folder `dir_fd`
// (see the top of atomic_file.h). The caller holds the folder's flock, so no
// live set is between creating its stage and locking it.
void CleanStale(int dir_fd, const fs::path& dir) {
  for (const std::string& name : ListFolder(dir_fd)) {
    const bool stage = StartsWith(name, kStagePrefix);
    const bool commit = StartsWith(name, kCommitPrefix);
    if (!stage && !commit) continue;
    Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() < 0) continue;  // a file or a link: not dtsim's
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
      continue;
    if (Flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // its owner lives
    if (commit) {
      std::vector<std::string> files;
      for (const std::string& entry : ListFolder(fd.get())) {
        struct stat est{};
        if (::fstatat(fd.get(), entry.c_str(), &est, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(est.st_mode))
          files.push_back(entry);
      }
      const auto [failed, err] = InstallFiles(fd.get(), dir_fd, files);
      if (SyncFd(dir_fd) != 0) FailAt(dir, "cannot sync the output folder", errno);
      if (err != 0) {
        throw UserError(SourceLocation{(dir / failed).string()},
                        "cannot finish installing the outputs of an interrupted run (" +
                            (dir / name).string() + "): " + ErrnoText(err),
                        "remove what stands at '" + (dir / failed).string() + "', or the folder '" +
                            (dir / name).string() + "' to drop those outputs");
      }
    }
    RemoveFolder(dir_fd, name, fd.get());
  }
}

// The name of a file in a set: a plain name, not one of dtsim's own.
void CheckName(const fs::path& dir, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      StartsWith(name, ".dtsim-")) {
    throw UserError(SourceLocation{(dir / name).string()},
                    "'" + name + "' is not a file name for an output",
                    "give a file name without '/' (not '.', '..' or starting with '.dtsim-')");
  }
}

// What stands at `st`, for a refusal: "a folder", "a symbolic link", ...
const char* KindOf(const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return "a folder";
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "something other than a regular file";
}

// An output replaces a regular file or fills an empty name, nothing else:
// renaming over a device, a FIFO or a link (/dev/null, /dev/stdout) would
// replace a node the whole machine uses. `st` is lstat's answer for `path`.
[[noreturn]] void RefuseNonRegular(const fs::path& path, const struct stat& st) {
  throw UserError(SourceLocation{path.string()},
                  std::string("cannot write this output: ") + KindOf(st) + " stands at its name",
                  "outputs replace regular files only; give a new file name (or '-' where the "
                  "option takes it, for standard output)");
}

// Refuses `name` in the folder open at `dir_fd` (`dir` for messages) when
// something other than a regular file stands there; never follows a link.
void CheckTarget(int dir_fd, const fs::path& dir, const std::string& name) {
  struct stat st{};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
    RefuseNonRegular(dir / name, st);
}

}  // namespace

// ---------------------------------------------------------------- OutputFile

class OutputFile::Buffer : public std::streambuf {
 public:
  Buffer(int fd, fs::path path, std::shared_ptr<bool> closed)
      : fd_(fd), path_(std::move(path)), closed_(std::move(closed)), buf_(kBufferBytes) {
    setp(buf_.data(), buf_.data() + buf_.size());
  }
  ~Buffer() override {
    if (fd_ >= 0) ::close(fd_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // Writes what is buffered, fsyncs and closes. `stream_ok`: the stream
  // reported no error. Throws UserError naming `what`.
  void Close(const std::string& what, bool stream_ok) {
    if (fd_ < 0) throw InternalError("output file '" + path_.string() + "' closed twice");
    bool ok = stream_ok && Flush();
    if (ok && ::fsync(fd_) != 0) {
      error_ = errno;
      ok = false;
    }
    if (::close(fd_) != 0 && ok) {
      error_ = errno;
      ok = false;
    }
    fd_ = -1;
    if (!ok) {
      throw UserError(SourceLocation{path_.string()},
                      "failed writing " + what + (error_ != 0 ? ": " + ErrnoText(error_) : "") +
                          " (disk full?)");
    }
    *closed_ = true;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!Flush()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return Flush() ? 0 : -1; }

 private:
  bool Flush() {
    if (error_ != 0 || fd_ < 0) return false;
    const char* p = pbase();
    while (p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<std::size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        return false;
      }
      p += n;
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return true;
  }

  int fd_;
  fs::path path_;                 // for messages
  std::shared_ptr<bool> closed_;  // shared with the set: set by Close
  std::vector<char> buf_;
  int error_ = 0;  // errno of the first failed write
};

OutputFile::OutputFile(std::unique_ptr<Buffer> buffer)
    : std::ostream(buffer.get()), buffer_(std::move(buffer)) {}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : std::ostream(std::move(other)), buffer_(std::move(other.buffer_)) {
  set_rdbuf(buffer_.get());
}

OutputFile::~OutputFile() = default;

void OutputFile::Close(const std::string& what) {
  const bool ok = static_cast<bool>(flush());
  buffer_->Close(what, ok);
}

// ------------------------------------------------------------- AtomicFileSet

AtomicFileSet::AtomicFileSet(fs::path dir, Options options)
    : dir_(dir.empty() ? fs::path(".") : std::move(dir)), options_(options) {}

AtomicFileSet::~AtomicFileSet() {
  if (stage_fd_ >= 0) RemoveStage();
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

void AtomicFileSet::RemoveStage() noexcept {
  RemoveFolder(dir_fd_, stage_name_, stage_fd_);
  ::close(stage_fd_);  // releases the flock
  stage_fd_ = -1;
}

void AtomicFileSet::Begin() {
  Fd dir = OpenFolder(dir_, options_.create_folder);
  // While holding the folder's lock: clean what dead sets left, then make
  // and lock this set's stage, so that no cleaner sees it unlocked. Where
  // flock is not supported (some network file systems) nothing is cleaned:
  // a live set could not be told from a dead one.
  const Fd folder_lock = LockFolder(dir.get(), dir_);
  const bool locked = folder_lock.get() >= 0;
  if (locked) CleanStale(dir.get(), dir_);
  std::string name;
  for (int attempt = 0;; ++attempt) {
    name = kStagePrefix + RandomSuffix();
    if (::mkdirat(dir.get(), name.c_str(), 0700) == 0) break;
    if (errno != EEXIST || attempt == 100) FailAt(dir_, "cannot create a folder for the outputs", errno);
  }
  Fd stage(::openat(dir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (stage.get() < 0) FailAt(dir_ / name, "cannot open the folder for the outputs", errno);
  if (locked) Flock(stage.get(), LOCK_EX | LOCK_NB);
  dir_fd_ = dir.release();  // folder_lock is released on return
  stage_fd_ = stage.release();
  stage_name_ = name;
}

OutputFile AtomicFileSet::Open(const std::string& name) {
  CheckName(dir_, name);
  // Before the folder is touched (no lock file, no stage): lstat the name.
  struct stat target{};
  if (::lstat((dir_ / name).c_str(), &target) == 0 && !S_ISREG(target.st_mode))
    RefuseNonRegular(dir_ / name, target);
  if (stage_fd_ < 0) {
    if (dir_fd_ >= 0) throw InternalError("AtomicFileSet::Open after Commit");
    Begin();
  }
  // Older dtsim versions wrote "<name>.tmp" beside the output: remove one
  // left by a killed run (a regular file of ours only, never a link).
  const std::string legacy = name + ".tmp";
  struct stat st{};
  if (::fstatat(dir_fd_, legacy.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
      st.st_uid == ::geteuid())
    ::unlinkat(dir_fd_, legacy.c_str(), 0);

  const int fd = ::openat(stage_fd_, name.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) FailAt(dir_ / name, "cannot create the output file", errno);
  auto closed = std::make_shared<bool>(false);
  entries_.push_back({name, closed});
  return OutputFile(std::make_unique<OutputFile::Buffer>(fd, dir_ / name, closed));
}

std::vector<fs::path> AtomicFileSet::Commit() {
  std::vector<fs::path> done;
  if (stage_fd_ < 0) return done;  // nothing was opened
  for (const Entry& e : entries_) {
    if (!*e.closed) throw InternalError("output file '" + e.name + "' committed before Close");
    // Anything but a regular file at the final name (a folder, a link, a
    // device appeared since Open): refuse before the commit point, with the
    // old set intact.
    CheckTarget(dir_fd_, dir_, e.name);
  }
  // 1. The commit point: the stage, complete and synced, takes its
  // committed name. The folder's lock is held from here through the last
  // rename: another set's files never mix with these.
  if (SyncFd(stage_fd_) != 0) FailAt(dir_, "cannot sync the outputs", errno);
  const Fd folder_lock = LockFolder(dir_fd_, dir_);
  const std::string committed = kCommitPrefix + stage_name_.substr(sizeof kStagePrefix - 1);
  if (::renameat(dir_fd_, stage_name_.c_str(), dir_fd_, committed.c_str()) != 0)
    FailAt(dir_, "cannot commit the outputs", errno);
  stage_name_ = committed;
  if (SyncFd(dir_fd_) != 0) FailAt(dir_, "cannot sync the output folder", errno);
  // 2. Install. On a failure the commit folder stays (unlocked once this
  // set is gone) and the next set in this folder finishes the install.
  std::vector<std::string> names;
  for (const Entry& e : entries_) names.push_back(e.name);
  const auto [failed, err] = InstallFiles(stage_fd_, dir_fd_, names);
  const bool synced = SyncFd(dir_fd_) == 0;
  const int sync_err = errno;
  if (err != 0) {
    ::close(stage_fd_);
    stage_fd_ = -1;
    FailAt(dir_ / failed, "cannot install the output (the new outputs wait in '" +
                              (dir_ / committed).string() + "')",
           err);
  }
  if (!synced) FailAt(dir_, "cannot sync the output folder", sync_err);
  RemoveStage();
  for (const std::string& name : names) done.push_back(dir_ / name);
  entries_.clear();
  return done;
}

void WriteFileAtomic(const fs::path& path, const std::function<void(std::ostream&)>& write,
                     AtomicFileSet::Options options) {
  if (!path.has_filename())
    throw UserError(SourceLocation{path.string()}, "not a file path", "name a file, not a folder");
  AtomicFileSet set(path.has_parent_path() ? path.parent_path() : fs::path("."), options);
  OutputFile f = set.Open(path.filename().string());
  write(f);
  f.Close(path.string());
  set.Commit();
}

}  // namespace dtsim
