// Test helper shared by the scenario loader's tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "config/scenario.h"

namespace dtsim::config {

// Success when parsing `yaml` (as "test.yaml") throws a UserError located on
// `line` of test.yaml whose text (message and hint) contains `text`.
inline ::testing::AssertionResult FailsAt(const std::string& yaml, int line,
                                          const std::string& text) {
  try {
    ParseScenario(yaml, "test.yaml");
  } catch (const UserError& e) {
    const std::string what = e.what();
    if (e.where().file != "test.yaml" || e.where().line != line) {
      return ::testing::AssertionFailure()
             << "expected the error on test.yaml line " << line << ", got:\n" << what;
    }
    if (what.find(text) == std::string::npos) {
      return ::testing::AssertionFailure() << "expected '" << text << "' in:\n" << what;
    }
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no UserError for:\n" << yaml;
}

}  // namespace dtsim::config
