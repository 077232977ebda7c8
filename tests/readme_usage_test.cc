// The README's usage lines run as a newcomer types them: each
// `build/tools/dtsim ...` line of the "Using it" block, from a folder that
// holds the repository's inputs (so what the commands write lands there),
// exits 0. Two lines are left out, each for a reason stated below.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "tests/cli_fixture.h"
#include "tests/dtsim_runner.h"

namespace {
namespace fs = std::filesystem;

using dtsim::test::Cli;
using dtsim::test::Dtsim;
using dtsim::test::Result;
using dtsim::test::Slurp;

// Commands whose line takes minutes on 2 cores.
const std::map<std::string, std::string> kLeftOut = {
    {"search", "searches 175B over 1,024 GPUs: minutes (docs/search.md)"},
    {"tta", "measures 54 proxy training runs: minutes (docs/tta.md)"},
};

TEST_F(Cli, ReadmeUsageLinesRunAsWritten) {
  const std::string readme = Slurp("README.md");
  const std::size_t section = readme.find("## Using it");
  ASSERT_NE(section, std::string::npos);
  const std::size_t begin = readme.find("```sh\n", section);
  const std::size_t end = readme.find("```", begin + 6);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  fs::create_directories(dir_);
  for (const char* input : {"scenarios", "models", "plan"})
    fs::create_directory_symlink(fs::absolute(input), dir_ / input);
  std::istringstream block(readme.substr(begin + 6, end - begin - 6));
  const std::string binary = "build/tools/dtsim ";
  int ran = 0, left_out = 0;
  for (std::string line; std::getline(block, line);) {
    if (line.rfind(binary, 0) != 0) continue;
    const std::string args = line.substr(binary.size(), line.find("  #") - binary.size());
    const std::string command = args.substr(0, args.find(' '));
    if (kLeftOut.contains(command)) {
      ++left_out;
      continue;
    }
    const Result r = Dtsim(args, "cd " + dir_.string() + " && timeout -k 10 300 ");
    EXPECT_EQ(r.status, 0) << line << "\n" << r.err;
    ++ran;
  }
  EXPECT_EQ(left_out, static_cast<int>(kLeftOut.size()));
  EXPECT_GE(ran, 15);
}

}  // namespace
