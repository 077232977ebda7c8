#include "common/module_loader.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace dtsim {
namespace {

// A spec whose module is the C maths library (any library dlopen finds).
ModuleSpec MathsSpec(const char* entry) {
  ModuleSpec spec;
  spec.what = "test";
  spec.file_name = "libdtsim-test-nonexistent.so";
  spec.env_var = "DTSIM_TEST_MODULE";
  spec.entry = entry;
  return spec;
}

class ModuleLoader : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("DTSIM_TEST_MODULE"); }
};

TEST_F(ModuleLoader, TheVariableNamesTheModuleAndItsEntryIsFound) {
  ASSERT_EQ(setenv("DTSIM_TEST_MODULE", "libm.so.6", 1), 0);
  std::string why;
  void* entry = LoadModuleEntry(MathsSpec("sqrt"), &why);
  ASSERT_NE(entry, nullptr) << why;
  // sqrt is correctly rounded (IEEE 754): sqrt(2.25) is exactly 1.5.
  EXPECT_EQ(reinterpret_cast<double (*)(double)>(entry)(2.25), 1.5);
}

TEST_F(ModuleLoader, AMissingFileIsNamed) {
  ASSERT_EQ(setenv("DTSIM_TEST_MODULE", "/nonexistent/libdtsim-test.so", 1), 0);
  std::string why;
  EXPECT_EQ(LoadModuleEntry(MathsSpec("sqrt"), &why), nullptr);
  EXPECT_NE(why.find("cannot load the test module /nonexistent/libdtsim-test.so"),
            std::string::npos)
      << why;
}

TEST_F(ModuleLoader, ALibraryWithoutTheEntryIsRefused) {
  ASSERT_EQ(setenv("DTSIM_TEST_MODULE", "libm.so.6", 1), 0);
  std::string why;
  EXPECT_EQ(LoadModuleEntry(MathsSpec("dtsim_no_such_entry"), &why), nullptr);
  EXPECT_NE(why.find("libm.so.6 is not dtsim's test module (no dtsim_no_such_entry)"),
            std::string::npos)
      << why;
}

// Without the variable: the executable's folder, then build_dir; neither
// has the file here.
TEST_F(ModuleLoader, NoModuleBesideTheExecutableSaysWhereItLooked) {
  ModuleSpec spec = MathsSpec("sqrt");
  spec.build_dir = "/nonexistent";
  std::string why;
  EXPECT_EQ(LoadModuleEntry(spec, &why), nullptr);
  EXPECT_NE(why.find("test needs libdtsim-test-nonexistent.so beside the dtsim executable "
                     "(or $DTSIM_TEST_MODULE)"),
            std::string::npos)
      << why;
}

}  // namespace
}  // namespace dtsim
