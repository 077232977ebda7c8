# Helpers shared by every layer's CMakeLists.txt.

# Warnings for all dtsim code; errors in CI (-DDTSIM_WERROR=ON).
function(dtsim_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${DTSIM_WERROR}>>:-Werror>)
endfunction()

# dtsim_library(NAME SOURCES ... DEPS ...): one static library per layer.
function(dtsim_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  dtsim_warnings(${name})
endfunction()

# dtsim_test(NAME SOURCES ... DEPS ...): a GoogleTest program registered with
# ctest. Tests run from the source tree so they can read scenarios/.
function(dtsim_test name)
  if(NOT DTSIM_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  dtsim_warnings(${name})
  include(GoogleTest)
  gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                       DISCOVERY_TIMEOUT 60)
endfunction()

# dtsim_benchmark(NAME SOURCES ... DEPS ...): a Google Benchmark program.
function(dtsim_benchmark name)
  if(NOT DTSIM_BUILD_BENCH)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark)
  dtsim_warnings(${name})
endfunction()
