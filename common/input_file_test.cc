#include "common/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"

namespace dtsim {
namespace {

namespace fs = std::filesystem;

std::string Refusal(const std::string& path, std::int64_t max_bytes = kMaxTextInputBytes) {
  try {
    ReadRegularFile(path, "model file", max_bytes);
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().file, path);
    return e.message();
  }
  return "";
}

TEST(InputFile, ReadsRegularFilesAndRefusesTheRest) {
  const fs::path dir = fs::temp_directory_path() / ("dtsim_input_file_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "m.yaml") << "layers: []\n";
  EXPECT_EQ(ReadRegularFile((dir / "m.yaml").string(), "model file"), "layers: []\n");
  // "layers: []\n" is 11 bytes: read at a limit of 11, refused at 10.
  EXPECT_EQ(ReadRegularFile((dir / "m.yaml").string(), "model file", 11).size(), 11u);
  EXPECT_NE(Refusal((dir / "m.yaml").string(), 10).find("has 11 bytes, more than the 10"),
            std::string::npos);
  // A link to /dev/zero (never ends), a FIFO (blocks an open), a folder.
  fs::create_symlink("/dev/zero", dir / "zero.yaml");
  ASSERT_EQ(::mkfifo((dir / "fifo.yaml").c_str(), 0600), 0);
  for (const char* name : {"zero.yaml", "fifo.yaml", "."}) {
    EXPECT_NE(Refusal((dir / name).string()).find("not a regular file"), std::string::npos) << name;
  }
  EXPECT_NE(Refusal((dir / "none.yaml").string()).find("no such file"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dtsim
