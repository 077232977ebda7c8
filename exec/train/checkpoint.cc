#include "exec/train/checkpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/crc.hpp>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "common/error.h"
#include "exec/byte_io.h"

namespace dtsim::exec {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'D', 'T', 'S', 'I', 'M', 'C', 'K', '1'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint64_t kHeaderBytes = 24;  // magic, version, crc, payload size
constexpr std::uint64_t kCrcStart = 16;     // the CRC covers [16, end)
constexpr const char* kTempMarker = ".dtsim-tmp.";
constexpr const char* kCheckpointPrefix = "ckpt-";
constexpr const char* kCheckpointSuffix = ".dtck";

[[noreturn]] void FailIo(const std::string& path, const char* what, int err) {
  std::string msg = what;
  msg += ": ";
  msg += std::strerror(err);
  throw UserError(SourceLocation{path}, msg,
                  "check that the directory exists and is writable and that the disk has space");
}

// Owns the temp file of one save: closes it, and deletes it unless the save
// was committed (renamed over the target).
class TempFile {
 public:
  explicit TempFile(const std::string& target) {
    std::string templ = target;
    templ += kTempMarker;
    templ += std::to_string(::getpid());
    templ += ".XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    fd_ = ::mkostemp(buf.data(), O_CLOEXEC);
    if (fd_ < 0) FailIo(target, "cannot create a temp file beside the checkpoint", errno);
    path_ = buf.data();
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  // Closes the file, checking for deferred write errors.
  void Close() {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) FailIo(path_, "cannot close the temp checkpoint", errno);
  }
  void Commit() { committed_ = true; }

 private:
  int fd_ = -1;
  std::string path_;
  bool committed_ = false;
};

// Buffered writes to a file descriptor; every byte put through Put() also
// goes into the CRC.
class CrcWriter {
 public:
  CrcWriter(int fd, const std::string& path) : fd_(fd), path_(path) { buf_.reserve(kBufferBytes); }

  void PutRaw(const unsigned char* p, std::size_t n) {
    while (n > 0) {
      std::size_t take = std::min(n, kBufferBytes - buf_.size());
      buf_.insert(buf_.end(), p, p + take);
      p += take;
      n -= take;
      if (buf_.size() == kBufferBytes) Flush();
    }
  }
  void Put(const unsigned char* p, std::size_t n) {
    crc_.process_bytes(p, n);
    PutRaw(p, n);
  }
  template <std::unsigned_integral T>
  void PutInt(T v) {
    unsigned char b[sizeof(T)];
    StoreLE(b, v);
    Put(b, sizeof(T));
  }
  void PutString(const std::string& s) {
    PutInt(static_cast<std::uint32_t>(s.size()));
    Put(reinterpret_cast<const unsigned char*>(s.data()), s.size());
  }
  void PutFloats(const std::vector<float>& v) {
    constexpr std::size_t kChunk = 1 << 14;  // floats per conversion (64 KiB)
    unsigned char b[4 * kChunk];
    for (std::size_t i = 0; i < v.size(); i += kChunk) {
      std::size_t n = std::min(kChunk, v.size() - i);
      StoreFloatsLE(b, v.data() + i, n);
      Put(b, 4 * n);
    }
  }

  void Flush() {
    std::size_t done = 0;
    while (done < buf_.size()) {
      ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) FailIo(path_, "cannot write the checkpoint", errno);
      done += static_cast<std::size_t>(n);
    }
    buf_.clear();
  }
  std::uint32_t crc() const { return crc_.checksum(); }

 private:
  static constexpr std::size_t kBufferBytes = 1 << 20;
  int fd_;
  const std::string& path_;
  std::vector<unsigned char> buf_;
  boost::crc_32_type crc_;
};

std::uint64_t PayloadBytes(const Checkpoint& c) {
  std::uint64_t n = 8 + 4 + 4;  // step, two counts
  for (const auto& [name, value] : c.counters) n += 4 + name.size() + 8;
  for (const auto& [name, t] : c.tensors) n += 4 + name.size() + 8 + 4 * t.size();
  return n;
}

void FsyncDirectory(const std::string& dir, const std::string& target) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) FailIo(target, "cannot open the checkpoint's directory to sync it", errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some file systems cannot sync directories (EINVAL); rename is then as
  // durable as that file system makes it.
  if (rc != 0 && err != EINVAL) FailIo(target, "cannot sync the checkpoint's directory", err);
}

// If `name` is "<base><kTempMarker><pid>.<suffix>", the pid; else nullopt.
std::optional<long> TempWriterPid(const std::string& name, const std::string& base) {
  std::string prefix = base;
  prefix += kTempMarker;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size();
  long pid = 0;
  auto [end, ec] = std::from_chars(first, last, pid);
  if (ec != std::errc() || end == first || end == last || *end != '.' || pid <= 0) return std::nullopt;
  return pid;
}

// Deletes temp files in `dir` left by dead writers of targets whose base
// name satisfies is_target. Best effort: errors are ignored.
template <class Pred>
void RemoveDeadWritersTemps(const fs::path& dir, Pred is_target) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto marker = name.find(kTempMarker);
    if (marker == std::string::npos) continue;
    const std::string base = name.substr(0, marker);
    if (!is_target(base)) continue;
    auto pid = TempWriterPid(name, base);
    if (!pid || *pid == static_cast<long>(::getpid())) continue;
    if (::kill(static_cast<pid_t>(*pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove(entry.path(), ignored);
    }
  }
}

fs::path DirectoryOf(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

// Step of "ckpt-<digits>.dtck", or nullopt.
std::optional<std::int64_t> CheckpointStep(const std::string& name) {
  const std::string prefix = kCheckpointPrefix, suffix = kCheckpointSuffix;
  if (name.size() <= prefix.size() + suffix.size()) return std::nullopt;
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return std::nullopt;
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size() - suffix.size();
  if (!std::all_of(first, last, [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  std::int64_t step = 0;
  auto [end, ec] = std::from_chars(first, last, step);
  if (ec != std::errc() || end != last) return std::nullopt;
  return step;
}

}  // namespace

void SaveCheckpoint(const std::string& path, const Checkpoint& checkpoint) {
  DTSIM_CHECK(checkpoint.counters.size() < (std::uint64_t{1} << 32) &&
                  checkpoint.tensors.size() < (std::uint64_t{1} << 32),
              "too many checkpoint entries");
  const fs::path dir = DirectoryOf(path);
  TempFile temp(path);
  {
    CrcWriter w(temp.fd(), temp.path());
    unsigned char head[kCrcStart] = {};
    std::memcpy(head, kMagic, 8);
    StoreLE<std::uint32_t>(head + 8, kVersion);
    // head[12..15]: the CRC, written last.
    w.PutRaw(head, sizeof head);
    w.PutInt(PayloadBytes(checkpoint));
    w.PutInt(static_cast<std::uint64_t>(checkpoint.step));
    w.PutInt(static_cast<std::uint32_t>(checkpoint.counters.size()));
    for (const auto& [name, value] : checkpoint.counters) {
      DTSIM_CHECK(name.size() < (std::uint64_t{1} << 32), "checkpoint counter name too long");
      w.PutString(name);
      w.PutInt(static_cast<std::uint64_t>(value));
    }
    w.PutInt(static_cast<std::uint32_t>(checkpoint.tensors.size()));
    for (const auto& [name, t] : checkpoint.tensors) {
      DTSIM_CHECK(name.size() < (std::uint64_t{1} << 32), "checkpoint tensor name too long");
      w.PutString(name);
      w.PutInt(static_cast<std::uint64_t>(t.size()));
      w.PutFloats(t);
    }
    w.Flush();
    unsigned char crc[4];
    StoreLE<std::uint32_t>(crc, w.crc());
    if (::pwrite(temp.fd(), crc, 4, 12) != 4) FailIo(temp.path(), "cannot write the checksum", errno);
  }
  if (::fsync(temp.fd()) != 0) FailIo(temp.path(), "cannot sync the temp checkpoint", errno);
  temp.Close();
  if (::rename(temp.path().c_str(), path.c_str()) != 0) {
    FailIo(path, "cannot rename the temp checkpoint over the target", errno);
  }
  temp.Commit();
  FsyncDirectory(dir.string(), path);
  const std::string base = fs::path(path).filename().string();
  RemoveDeadWritersTemps(dir, [&base](const std::string& b) { return b == base; });
}

Checkpoint LoadCheckpoint(const std::string& path, const LoadCheckpointOptions& options) {
  const std::vector<unsigned char> bytes = ReadFileBytes(path);
  ByteReader r(bytes, path,
               "the checkpoint is incomplete; resume from an older checkpoint or start over");
  // A short file that does not start like the magic is "not a checkpoint"
  // rather than "truncated".
  const std::size_t head = std::min<std::size_t>(8, bytes.size());
  if (head == 0 || std::memcmp(bytes.data(), kMagic, head) == 0) {
    r.Take(8, "the magic \"DTSIMCK1\"");  // throws when the file is shorter
  } else {
    r.Fail("invalid magic at byte offset 0: expected \"DTSIMCK1\"",
           "this is not a dtsim checkpoint (or its first bytes are damaged)");
  }
  const auto version = r.Read<std::uint32_t>("the format version (u32)");
  if (version != kVersion) {
    std::ostringstream m;
    m << "invalid version at byte offset 8: expected 1, found " << version;
    r.Fail(m.str(), "this dtsim reads version 1 checkpoints");
  }
  const auto stored_crc = r.Read<std::uint32_t>("the checksum (u32)");
  const auto payload = r.Read<std::uint64_t>("the payload size (u64)");
  const std::uint64_t size = bytes.size();
  if (payload > size || kHeaderBytes + payload != size) {
    std::ostringstream m;
    m << "size mismatch: the payload size at byte offset 16 promises a file of ";
    if (payload > size) {
      m << "more than " << size << " bytes (" << payload << " payload bytes)";
    } else {
      m << kHeaderBytes + payload << " bytes";
    }
    if (payload > size || kHeaderBytes + payload > size) {
      m << "; truncated file: it ends at byte offset " << size;
      r.Fail(m.str(), "the checkpoint is incomplete; resume from an older checkpoint or start over");
    }
    m << "; found " << size - kHeaderBytes - payload << " unexpected bytes from byte offset "
      << kHeaderBytes + payload;
    r.Fail(m.str(), "the file was modified after it was written; resume from an older checkpoint");
  }
  boost::crc_32_type crc;
  crc.process_bytes(bytes.data() + kCrcStart, bytes.size() - kCrcStart);
  if (crc.checksum() != stored_crc) {
    std::ostringstream m;
    m << std::hex << "checksum mismatch: the CRC-32 at byte offset 12 is 0x" << stored_crc
      << " but bytes from offset 16 to the end hash to 0x" << crc.checksum();
    r.Fail(m.str(), "the file is corrupt (disk or copy error); resume from an older checkpoint");
  }

  // The CRC matched, so the payload is what the writer wrote; still parse
  // defensively.
  const char* malformed_hint = "the file was not written by dtsim's SaveCheckpoint";
  Checkpoint c;
  c.step = static_cast<std::int64_t>(r.Read<std::uint64_t>("the step (i64)"));
  auto read_name = [&r](const char* what) {
    const auto n = r.Read<std::uint32_t>("a name length (u32)");
    auto s = r.Take(n, what);
    return std::string(reinterpret_cast<const char*>(s.data()), s.size());
  };
  auto duplicate = [&r, malformed_hint](std::uint64_t at, const std::string& name) {
    std::ostringstream m;
    m << "duplicate name \"" << name << "\" at byte offset " << at;
    r.Fail(m.str(), malformed_hint);
  };
  const auto n_counters = r.Read<std::uint32_t>("the number of counters (u32)");
  for (std::uint32_t i = 0; i < n_counters; ++i) {
    const std::uint64_t at = r.offset();
    std::string name = read_name("a counter name");
    const auto value = static_cast<std::int64_t>(r.Read<std::uint64_t>("a counter value (i64)"));
    if (c.counters.count(name) != 0) duplicate(at, name);
    c.counters.emplace(std::move(name), value);
  }
  const auto n_tensors = r.Read<std::uint32_t>("the number of tensors (u32)");
  for (std::uint32_t i = 0; i < n_tensors; ++i) {
    const std::uint64_t at = r.offset();
    std::string name = read_name("a tensor name");
    const auto count = r.Read<std::uint64_t>("a tensor element count (u64)");
    if (count > UINT64_MAX / 4) {
      std::ostringstream m;
      m << "malformed payload: tensor \"" << name << "\" at byte offset " << at << " claims "
        << count << " elements";
      r.Fail(m.str(), malformed_hint);
    }
    auto data = r.Take(4 * count, "tensor data");
    std::vector<float> t(static_cast<std::size_t>(count));
    LoadFloatsLE(t.data(), data.data(), t.size());
    if (c.tensors.count(name) != 0) duplicate(at, name);
    if (options.finite_tensors) {
      const auto bad = std::find_if(t.begin(), t.end(), [](float v) { return !std::isfinite(v); });
      if (bad != t.end()) {
        const auto k = static_cast<std::uint64_t>(bad - t.begin());
        std::ostringstream m;
        m << "tensor \"" << name << "\" holds " << *bad << " at element " << k
          << " (byte offset " << at + 4 + name.size() + 8 + 4 * k
          << "): training cannot resume from non-finite values";
        r.Fail(m.str(), "the run diverged before this checkpoint; resume from an older one or "
                        "start over with a lower learning rate");
      }
    }
    c.tensors.emplace(std::move(name), std::move(t));
  }
  if (r.remaining() != 0) {
    std::ostringstream m;
    m << "malformed payload: " << r.remaining() << " unread bytes from byte offset " << r.offset();
    r.Fail(m.str(), malformed_hint);
  }
  return c;
}

std::string CheckpointPath(const std::string& dir, std::int64_t step) {
  DTSIM_CHECK(step >= 0, "CheckpointPath needs step >= 0");
  char name[64];
  std::snprintf(name, sizeof name, "%s%012lld%s", kCheckpointPrefix, static_cast<long long>(step),
                kCheckpointSuffix);
  return (fs::path(dir) / name).string();
}

std::vector<std::int64_t> CheckpointSteps(const std::string& dir) {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (auto step = CheckpointStep(entry.path().filename().string())) steps.push_back(*step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::optional<std::string> LatestCheckpoint(const std::string& dir) {
  auto steps = CheckpointSteps(dir);
  if (steps.empty()) return std::nullopt;
  return CheckpointPath(dir, steps.back());
}

std::string SaveCheckpointToDir(const std::string& dir, const Checkpoint& checkpoint,
                                const CheckpointDirOptions& options) {
  if (options.keep_last < 1) {
    throw UserError("checkpoint keep_last must be >= 1, got " + std::to_string(options.keep_last),
                    "keep at least the newest checkpoint");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::string msg = "cannot create the checkpoint directory: ";
    msg += ec.message();
    throw UserError(SourceLocation{dir}, msg, "check the path and its permissions");
  }
  const std::string path = CheckpointPath(dir, checkpoint.step);
  SaveCheckpoint(path, checkpoint);
  auto steps = CheckpointSteps(dir);
  const auto keep = static_cast<std::size_t>(options.keep_last);
  for (std::size_t i = 0; i + keep < steps.size(); ++i) {
    std::error_code ignored;
    fs::remove(CheckpointPath(dir, steps[i]), ignored);
  }
  RemoveDeadWritersTemps(dir, [](const std::string& base) { return CheckpointStep(base).has_value(); });
  return path;
}

}  // namespace dtsim::exec
