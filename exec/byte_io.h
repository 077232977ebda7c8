// Little-endian encoding and a bounds-checked reader for exec's binary files
// (exec/data/binary_dataset, exec/train/checkpoint). Header-only so both
// libraries share it without a library of its own.
//
// Every multi-byte value in those files is little-endian whatever the host;
// on a little-endian host float arrays are copied with memcpy.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"

namespace dtsim::exec {

// Writes v as sizeof(T) little-endian bytes at dst.
template <std::unsigned_integral T>
void StoreLE(unsigned char* dst, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) dst[i] = static_cast<unsigned char>(v >> (8 * i));
}

// Reads sizeof(T) little-endian bytes at src.
template <std::unsigned_integral T>
T LoadLE(const unsigned char* src) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(src[i]) << (8 * i));
  return v;
}

// Writes n floats as n * 4 little-endian IEEE-754 bytes at dst.
inline void StoreFloatsLE(unsigned char* dst, const float* src, std::size_t n) {
  if constexpr (std::endian::native == std::endian::little) {
    if (n > 0) std::memcpy(dst, src, n * sizeof(float));
  } else {
    for (std::size_t i = 0; i < n; ++i) StoreLE(dst + 4 * i, std::bit_cast<std::uint32_t>(src[i]));
  }
}

// Reads n floats from n * 4 little-endian bytes at src.
inline void LoadFloatsLE(float* dst, const unsigned char* src, std::size_t n) {
  if constexpr (std::endian::native == std::endian::little) {
    if (n > 0) std::memcpy(dst, src, n * sizeof(float));
  } else {
    for (std::size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(LoadLE<std::uint32_t>(src + 4 * i));
  }
}

// Reads a whole file. Throws UserError naming the file and the system's
// reason when it cannot be opened or read.
inline std::vector<unsigned char> ReadFileBytes(const std::string& path) {
  auto fail = [&path](const char* what) {
    std::string msg = what;
    msg += ": ";
    msg += std::strerror(errno);
    throw UserError(SourceLocation{path}, msg, "check that the path exists and is readable");
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open file");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail("cannot stat file");
  }
  std::vector<unsigned char> bytes(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      if (n == 0) errno = EIO;  // the file shrank while being read
      fail("cannot read file");
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return bytes;
}

// Walks a byte buffer front to back; every read past the end throws a
// UserError naming the file, the byte offset and what was expected there.
// "bytes" must outlive the reader.
class ByteReader {
 public:
  // file names the file in errors; truncation_hint is the hint given when
  // the buffer ends early.
  ByteReader(std::span<const unsigned char> bytes, std::string file, std::string truncation_hint)
      : bytes_(bytes), file_(std::move(file)), truncation_hint_(std::move(truncation_hint)) {}

  // Byte offset of the next read from the start of the buffer.
  std::uint64_t offset() const { return offset_; }
  // Bytes not read yet.
  std::uint64_t remaining() const { return bytes_.size() - offset_; }

  // The next n bytes (valid while the buffer lives); `what` says what they
  // hold, for the error.
  std::span<const unsigned char> Take(std::uint64_t n, const char* what) {
    if (n > remaining()) {
      std::string msg = "truncated file: expected ";
      msg += what;
      msg += " (";
      msg += std::to_string(n);
      msg += " bytes) at byte offset ";
      msg += std::to_string(offset_);
      msg += ", but the file ends at byte offset ";
      msg += std::to_string(bytes_.size());
      Fail(msg, truncation_hint_);
    }
    auto s = bytes_.subspan(static_cast<std::size_t>(offset_), static_cast<std::size_t>(n));
    offset_ += n;
    return s;
  }

  // The next little-endian unsigned integer.
  template <std::unsigned_integral T>
  T Read(const char* what) {
    return LoadLE<T>(Take(sizeof(T), what).data());
  }

  // Throws UserError(file, message, hint). message names the byte offset;
  // this attaches the file.
  [[noreturn]] void Fail(const std::string& message, const std::string& hint) const {
    throw UserError(SourceLocation{file_}, message, hint);
  }

 private:
  std::span<const unsigned char> bytes_;
  std::string file_;
  std::string truncation_hint_;
  std::uint64_t offset_ = 0;
};

}  // namespace dtsim::exec
