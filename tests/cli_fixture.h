// The fixture of the dtsim binary's end-to-end tests (cli_test): a fresh
// output folder per test, and the binary run with a time limit.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/dtsim_runner.h"

namespace dtsim::test {

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dtsim_cli_out_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

// Runs dtsim like Dtsim(), killed after `seconds` (status 124): a run that
// hangs fails the test instead of hanging it.
inline Result DtsimWithin(int seconds, const std::string& args) {
  return Dtsim(args, "timeout -k 10 " + std::to_string(seconds) + " ");
}

}  // namespace dtsim::test
