// Reading a file the user names (a scenario, a model file, a runs CSV, an
// ONNX file). Only regular files are opened, links followed: a FIFO would
// block the reader forever and /dev/zero never ends. The size is checked
// before a byte is read, so that a file cannot cost more memory than its
// kind allows.
#pragma once

#include <cstdint>
#include <string>

namespace dtsim {

// The most bytes a text input (YAML, CSV) may have: a 1000-layer model file
// is about 100 KB, a scenario about 2 KB.
constexpr std::int64_t kMaxTextInputBytes = std::int64_t{64} << 20;

// Throws UserError at `path` ("cannot read WHAT 'PATH': no such file" or
// "...: not a regular file") unless `path` is a regular file.
void RequireRegularFile(const std::string& path, const std::string& what);

// The bytes of the regular file `path`. Throws UserError at `path` for what
// RequireRegularFile refuses, for a file larger than `max_bytes` (saying
// so) and for a read that fails.
std::string ReadRegularFile(const std::string& path, const std::string& what,
                            std::int64_t max_bytes = kMaxTextInputBytes);

// The bytes of the regular file `path`, gzip-compressed or plain (a file
// that is not gzip is read as it is). Stops and throws UserError at `path`
// once more than `max_bytes` come out, whatever the compressed size (a
// 3 MB gzip bomb decompressed to 5 GB), and for a damaged gzip stream.
std::string ReadMaybeGzippedFile(const std::string& path, const std::string& what,
                                 std::int64_t max_bytes);

}  // namespace dtsim
