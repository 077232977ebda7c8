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
# ctest. Tests run from the source tree so they can read scenarios/. Each test
# is labelled with its program's name, so `ctest -L '^config_test$'` runs one
# program's tests (scripts/test.sh --only), and with its kinds (unit, e2e,
# mpi, gpu, slow: cmake/DtsimTestLabels.cmake).
function(dtsim_test name)
  if(NOT DTSIM_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  # Simulations with engine simgrid load the SimGrid module (sim/CMakeLists.txt).
  add_dependencies(${name} dtsim_simgrid_module)
  dtsim_warnings(${name})
  dtsim_sanitizer_options(${name})
  include(GoogleTest)
  gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} TEST_LIST ${name}_TESTS
                       DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${name})
  dtsim_gtest_labels(${name})
endfunction()

# dtsim_benchmark(NAME SOURCES ... DEPS ...): a Google Benchmark program.
function(dtsim_benchmark name)
  if(NOT DTSIM_BUILD_BENCH)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark)
  add_dependencies(${name} dtsim_simgrid_module)
  dtsim_warnings(${name})
  dtsim_sanitizer_options(${name})
endfunction()

# dtsim_mpi_test(NAME SOURCES ... DEPS ... RANKS n...): a GoogleTest program
# whose processes are MPI ranks (main() from dtsim_mpi_gtest_main), run once
# per world size: 1 as an MPI singleton, more through mpirun (oversubscribed
# when there are more ranks than cores). CI runs as root, which OpenMPI
# refuses unless told otherwise. Labelled mpi besides its kinds.
function(dtsim_mpi_test name)
  if(NOT DTSIM_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;RANKS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} dtsim_mpi_gtest_main)
  dtsim_warnings(${name})
  dtsim_sanitizer_options(${name} MPI)
  foreach(np IN LISTS ARG_RANKS)
    if(np EQUAL 1)
      add_test(NAME ${name}_np1 COMMAND ${name})
    else()
      add_test(NAME ${name}_np${np}
               COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe
                       ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS})
    endif()
    dtsim_test_labels(${name} ${name}_np${np} labels)
    set_tests_properties(${name}_np${np} PROPERTIES
                         ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
                         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                         LABELS "${labels};mpi"
                         TIMEOUT 300)
  endforeach()
endfunction()

# dtsim_module(NAME OUTPUT_NAME SOURCES ... DEPS ...): a module of dtsim
# (common/module_loader.h), lib<OUTPUT_NAME>.so in the build's tools/ folder
# beside the executable, exporting only what it marks visible; it holds its
# own copies of the static libraries in DEPS, which must be
# position-independent.
function(dtsim_module name output_name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} MODULE ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES
    OUTPUT_NAME ${output_name}
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tools
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  dtsim_warnings(${name})
endfunction()
