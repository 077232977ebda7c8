#include "common/input_file.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "common/error.h"

namespace dtsim {

namespace fs = std::filesystem;

void RequireRegularFile(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return;
  const std::string why = fs::exists(path, ec) ? "not a regular file" : "no such file";
  throw UserError(SourceLocation{path}, "cannot read " + what + " '" + path + "': " + why,
                  "name a file (a FIFO, a device or a folder is not read)");
}

std::string ReadRegularFile(const std::string& path, const std::string& what,
                            std::int64_t max_bytes) {
  RequireRegularFile(path, what);
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw UserError(SourceLocation{path}, "cannot read " + what + " '" + path + "'");
  if (size > static_cast<std::uintmax_t>(max_bytes)) {
    throw UserError(SourceLocation{path},
                    what + " '" + path + "' has " + std::to_string(size) + " bytes, more than the " +
                        std::to_string(max_bytes) + " dtsim reads");
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (!in && !in.eof()) {
    throw UserError(SourceLocation{path}, "cannot read " + what + " '" + path + "'");
  }
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

std::string ReadMaybeGzippedFile(const std::string& path, const std::string& what,
                                 std::int64_t max_bytes) {
  RequireRegularFile(path, what);
  const std::unique_ptr<gzFile_s, int (*)(gzFile)> in(gzopen(path.c_str(), "rb"), gzclose);
  if (in == nullptr) throw UserError(SourceLocation{path}, "cannot read " + what + " '" + path + "'");
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const int k = gzread(in.get(), buf, sizeof buf);
    if (k < 0) {
      int code = 0;
      throw UserError(SourceLocation{path}, what + " '" + path + "' is not a readable gzip file (" +
                                                gzerror(in.get(), &code) + ")");
    }
    if (k == 0) break;
    if (static_cast<std::int64_t>(bytes.size()) + k > max_bytes) {
      throw UserError(SourceLocation{path},
                      what + " '" + path + "' holds more than the " + std::to_string(max_bytes) +
                          " bytes dtsim reads (counted after decompression)",
                      "trim the file to the steps you need");
    }
    bytes.append(buf, static_cast<std::size_t>(k));
  }
  return bytes;
}

}  // namespace dtsim
