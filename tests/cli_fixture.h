// The fixture of the dtsim binary's end-to-end tests (cli_test): a fresh
// output folder per test, and the binary run with a time limit.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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

// A proxy model that learns its synthetic class images in a few updates:
// one 3x3 convolution of 8 channels on 3x8x8 inputs, then 10 classes.
inline void WriteTinyCnn(const std::filesystem::path& path) {
  std::ofstream(path) << "name: tiny-cnn\ninput: [3, 8, 8]\nlayers:\n"
                         "  - {name: conv1, type: conv2d, out_channels: 8, kernel: 3, padding: 1}\n"
                         "  - {name: relu1, type: relu}\n  - {name: flat, type: flatten}\n"
                         "  - {name: fc, type: dense, out_features: 10}\n"
                         "  - {name: loss, type: softmax_xent}\n";
}

}  // namespace dtsim::test
